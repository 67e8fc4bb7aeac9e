#pragma once
// Memory accounting of strings: the heap bytes a std::string holds beyond
// its own object. libstdc++ keeps up to 15 characters inline (the small-
// string buffer); a longer string owns capacity + 1 bytes on the heap.
#include <cstddef>
#include <string>

namespace ebb {

inline constexpr std::size_t kInlineStringChars = 15;

inline std::size_t heap_bytes(const std::string& s) noexcept { return s.capacity() > kInlineStringChars ? s.capacity() + 1 : 0; }

// The most a string of up to `chars` characters holds on the heap.
inline constexpr std::size_t heap_bytes_max(std::size_t chars) noexcept { return chars > kInlineStringChars ? chars + 1 : 0; }

}  // namespace ebb
