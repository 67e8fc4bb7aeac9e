#pragma once
// Sizes as users write them: "1048576", "512KiB", "64MiB", "4GiB", "1TiB"
// (binary units; "KB", "MB", "GB" are decimal).
#include <cstdint>
#include <string>
#include <string_view>

namespace ebb {

// Throws InvalidArgument naming the text.
std::uint64_t parse_byte_size(std::string_view text);
std::string format_byte_size(std::uint64_t bytes);

}  // namespace ebb
