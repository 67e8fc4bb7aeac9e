// RESP commands (resp/protocol.hpp: what a Redis client sends to
// --resp-port). Input: a digit, the byte at which the bytes are cut in two
// reads (its value times 7, modulo the length), then the bytes.
// Checks: reading every command of the bytes in one piece and in two (the
// second read given the whole buffer again, as a connection does) gives the
// same commands, statuses and errors; a command never consumes more than it
// was given, nor nothing; a multi-bulk command re-encoded reads back to the
// same arguments. Limits are small so that every limit is reached.
#include <string>
#include <vector>

#include "ebb/resp/protocol.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace ebb::resp;

struct Outcome {
  std::vector<std::vector<std::string>> commands;
  std::string error;
  std::size_t consumed = 0;
};

ProtocolLimits limits() {
  ProtocolLimits l;
  l.max_arguments = 16;
  l.max_bulk_bytes = 64;
  l.max_inline_bytes = 128;
  l.max_command_bytes = 512;
  return l;
}

// Every command in data, reading first only the bytes before `cut`.
Outcome read_all(std::string_view data, std::size_t cut) {
  Outcome out;
  CommandReader reader(limits());
  std::size_t at = 0;
  bool whole = cut >= data.size();
  while (at < data.size()) {
    const std::string_view available = data.substr(at, whole ? std::string_view::npos : cut - std::min(cut, at));
    const auto status = reader.read(available);
    if (status == CommandReader::Status::incomplete) {
      if (whole) break;
      whole = true;
      continue;
    }
    if (status == CommandReader::Status::error) {
      out.error = reader.error();
      break;
    }
    FUZZ_CHECK(reader.consumed() > 0 && reader.consumed() <= available.size());
    at += reader.consumed();
    if (!reader.args().empty()) out.commands.emplace_back(reader.args().begin(), reader.args().end());
  }
  out.consumed = at;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ebb::fuzz::Input in(data, size);
  const std::size_t cut_seed = in.digit();
  const std::string_view bytes = in.rest();
  const Outcome one = read_all(bytes, bytes.size());
  const Outcome two = read_all(bytes, bytes.empty() ? 0 : (cut_seed * 7) % bytes.size());
  FUZZ_CHECK(one.commands == two.commands);
  FUZZ_CHECK_MSG(one.error == two.error, one.error + " / " + two.error);
  FUZZ_CHECK(one.consumed == two.consumed);
  for (const auto& args : one.commands) {
    std::string encoded = "*" + std::to_string(args.size()) + "\r\n";
    for (const auto& a : args) encoded += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    CommandReader reader(limits());
    const auto status = reader.read(encoded);
    if (status == CommandReader::Status::complete) {
      FUZZ_CHECK(std::vector<std::string>(reader.args().begin(), reader.args().end()) == args);
      FUZZ_CHECK(reader.consumed() == encoded.size());
    } else {
      // Only an inline command may outgrow the limits re-encoded (its
      // quoting is shorter than bulk headers).
      FUZZ_CHECK(status == CommandReader::Status::error);
    }
  }
  return 0;
}
