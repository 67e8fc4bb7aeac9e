#pragma once
// Stable storage for keys that are not contiguous in the input (unescaped
// CSV fields, JSON strings) until the batch that points at them is applied.
#include <memory>
#include <string_view>
#include <vector>

namespace ebb::io {

class KeyArena {
 public:
  std::string_view keep(std::string_view s);
  void reset() noexcept;

 private:
  static constexpr std::size_t kBlock = 64 * 1024;
  struct Block {
    std::unique_ptr<char[]> data;
    std::size_t size;
  };
  std::vector<Block> blocks_;
  std::size_t current_ = 0;  // block being filled
  std::size_t used_ = 0;     // bytes used in it
};

}  // namespace ebb::io
