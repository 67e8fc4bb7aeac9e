#include "ebb/io/key_arena.hpp"

#include <algorithm>
#include <cstring>

namespace ebb::io {

std::string_view KeyArena::keep(std::string_view s) {
  while (current_ < blocks_.size() && blocks_[current_].size - used_ < s.size()) {
    ++current_;
    used_ = 0;
  }
  if (current_ == blocks_.size()) {
    const std::size_t size = std::max(kBlock, s.size());
    blocks_.push_back({std::make_unique<char[]>(size), size});
    used_ = 0;
  }
  char* dst = blocks_[current_].data.get() + used_;
  if (!s.empty()) std::memcpy(dst, s.data(), s.size());
  used_ += s.size();
  return {dst, s.size()};
}

void KeyArena::reset() noexcept {
  current_ = 0;
  used_ = 0;
}

}  // namespace ebb::io
