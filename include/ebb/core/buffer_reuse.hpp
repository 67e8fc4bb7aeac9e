#pragma once
// Buffers that serve one request after another keep their memory for the
// next (no allocation per request), but not a large request's: a
// connection or thread that once took a 30 MiB reply or a million-argument
// command would otherwise hold that peak while idle.
#include <cstddef>

namespace ebb {

// Empties `buffer` (a std::string or std::vector); its memory is kept for
// the next use while its capacity is at most `max_kept` elements, and
// given back beyond that.
template <typename Buffer>
void clear_keeping_at_most(Buffer& buffer, std::size_t max_kept) noexcept {
  if (buffer.capacity() > max_kept) Buffer().swap(buffer);
  else buffer.clear();
}

// Gives `buffer`'s memory back when its capacity passed `max_kept`
// elements, else leaves it as it is, contents and size too (a buffer
// resized to about its last size next time is then not filled again).
template <typename Buffer>
void release_beyond(Buffer& buffer, std::size_t max_kept) noexcept {
  if (buffer.capacity() > max_kept) Buffer().swap(buffer);
}

}  // namespace ebb
