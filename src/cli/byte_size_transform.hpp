#pragma once
// CLI11 transform for byte-count flags (--max-body-bytes 64MiB): the size
// as --max-memory takes it ("1048576", "512KiB", "64MiB"; include/ebb/
// core/byte_size.hpp) becomes its number of bytes before the flag's range
// check; a bad size gets the parser's own message, naming the text.
#include <CLI/CLI.hpp>

#include "ebb/core/byte_size.hpp"
#include "ebb/core/error.hpp"

namespace ebb::cli {

inline const CLI::Validator& byte_size_transform() {
  static const CLI::Validator v(
      [](std::string& s) -> std::string {
        try {
          s = std::to_string(parse_byte_size(s));
          return {};
        } catch (const InvalidArgument& e) {
          return e.what();
        }
      },
      "SIZE", "byte size");
  return v;
}

}  // namespace ebb::cli
