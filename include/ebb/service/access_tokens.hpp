#pragma once
// Who may write: the optional bearer tokens of `ebb serve --auth-token-file`.
// Every front end (HTTP, RESP's AUTH) asks the same object, so the rule of
// which operations need a token lives once.
//
// The file holds one token per line, so a rotation can accept the old and
// the new token at once; blank lines and lines starting with '#' are
// skipped. A token is 16 to 4096 visible ASCII characters (no spaces), so
// it fits a header, a URL and a RESP AUTH argument unchanged.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ebb::service {

// What an operation does, for the access rule.
enum class Access {
  open,   // liveness and readiness probes: never need a token
  read,   // queries, listings, metrics: need one with protect_reads
  write,  // ingest and admin: need one whenever tokens are configured
};

class AccessTokens {
 public:
  static constexpr std::size_t kMinTokenBytes = 16;
  static constexpr std::size_t kMaxTokenBytes = 4096;

  AccessTokens() = default;  // no tokens: everything is open
  // Throws std::runtime_error naming the file and what is wrong with it
  // (unreadable, no token, a token too short or with spaces...).
  static AccessTokens from_file(const std::filesystem::path& path, bool protect_reads);
  // The checked tokens of a file, in order (clients send the first).
  static std::vector<std::string> read_file(const std::filesystem::path& path);
  // For tests and embedding: the same checks as a file's lines.
  static AccessTokens from_tokens(std::vector<std::string> tokens, bool protect_reads);

  bool enabled() const noexcept { return !tokens_.empty(); }
  bool protects_reads() const noexcept { return protect_reads_; }
  bool required_for(Access access) const noexcept {
    return enabled() && (access == Access::write || (access == Access::read && protect_reads_));
  }
  // Whether `presented` is one of the tokens. Constant time in the tokens'
  // contents and in the presented value's, so timing reveals nothing of a
  // token but its length class.
  bool accepts(std::string_view presented) const noexcept;
  // Problems worth a warning that do not stop the server (a token file
  // other users can read).
  const std::vector<std::string>& warnings() const noexcept { return warnings_; }

 private:
  std::vector<std::string> tokens_;
  bool protect_reads_ = false;
  std::vector<std::string> warnings_;
};

}  // namespace ebb::service
