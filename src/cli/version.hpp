#pragma once
// ebb's version, as --version, HELLO and INFO report it.
namespace ebb::cli {
inline constexpr const char* kVersion = "0.1.0";
}  // namespace ebb::cli
