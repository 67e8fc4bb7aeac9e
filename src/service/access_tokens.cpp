#include "ebb/service/access_tokens.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ebb::service {
namespace {

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return std::string(s.substr(first, last - first + 1));
}

// Why `token` cannot be a token, or empty when it can.
std::string token_problem(const std::string& token) {
  if (token.size() < AccessTokens::kMinTokenBytes) {
    return "is " + std::to_string(token.size()) + " characters; a token needs at least " + std::to_string(AccessTokens::kMinTokenBytes) +
           " (make one with: head -c 32 /dev/urandom | base64)";
  }
  if (token.size() > AccessTokens::kMaxTokenBytes) return "is longer than " + std::to_string(AccessTokens::kMaxTokenBytes) + " characters";
  for (const unsigned char c : token) {
    if (c < 0x21 || c > 0x7e) return "has a character that is not visible ASCII (spaces and control characters cannot be sent in a header)";
  }
  return {};
}

// Equal bytes, looking at every byte of `secret` whatever `presented` is.
bool equal_constant_time(std::string_view secret, std::string_view presented) noexcept {
  std::size_t diff = secret.size() ^ presented.size();
  const std::size_t n = presented.size();
  for (std::size_t i = 0; i < secret.size(); ++i) {
    const unsigned char p = n ? static_cast<unsigned char>(presented[i % n]) : 0;
    diff |= static_cast<unsigned char>(secret[i]) ^ p;
  }
  return diff == 0;
}

}  // namespace

AccessTokens AccessTokens::from_tokens(std::vector<std::string> tokens, bool protect_reads) {
  AccessTokens out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (auto problem = token_problem(tokens[i]); !problem.empty()) throw std::runtime_error("token " + std::to_string(i + 1) + " " + problem);
  }
  if (tokens.empty()) throw std::runtime_error("no token given");
  out.tokens_ = std::move(tokens);
  out.protect_reads_ = protect_reads;
  return out;
}

std::vector<std::string> AccessTokens::read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("--auth-token-file " + path.string() + ": cannot read it: " + std::strerror(errno));
  std::vector<std::string> tokens;
  std::string line;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    const std::string token = trim(line);
    if (token.empty() || token[0] == '#') continue;
    if (auto problem = token_problem(token); !problem.empty()) {
      throw std::runtime_error("--auth-token-file " + path.string() + ":" + std::to_string(line_no) + ": the token " + problem);
    }
    tokens.push_back(token);
  }
  if (in.bad()) throw std::runtime_error("--auth-token-file " + path.string() + ": read error");
  if (tokens.empty()) throw std::runtime_error("--auth-token-file " + path.string() + ": holds no token (one per line; '#' starts a comment)");
  return tokens;
}

AccessTokens AccessTokens::from_file(const std::filesystem::path& path, bool protect_reads) {
  AccessTokens out;
  out.tokens_ = read_file(path);  // checked line by line there, and never empty
  out.protect_reads_ = protect_reads;
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    out.warnings_.push_back("--auth-token-file " + path.string() + " can be read by other users (chmod 600 it)");
  }
  return out;
}

bool AccessTokens::accepts(std::string_view presented) const noexcept {
  bool any = false;
  for (const auto& t : tokens_) any |= equal_constant_time(t, presented);  // no early exit
  return any;
}

}  // namespace ebb::service
