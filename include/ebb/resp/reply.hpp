#pragma once
// Writing replies in the connection's protocol: RESP2, or RESP3 after
// HELLO 3, where maps, booleans, doubles and nulls have their own types.
// Each RESP3 type falls back as Redis does: a map to a flat array of
// key, value..., a boolean to 1 / 0, a double to a bulk string, a null to
// the null bulk string.
#include <cstdint>
#include <string>
#include <string_view>

namespace ebb::resp {

class ReplyWriter {
 public:
  ReplyWriter(std::string& out, int protocol) : out_(out), protocol_(protocol) {}
  int protocol() const noexcept { return protocol_; }
  void set_protocol(int protocol) noexcept { protocol_ = protocol; }  // HELLO answers in the protocol it chose

  void simple(std::string_view text);  // "+OK"
  // "-<text>": the text starts with its code ("ERR ...", "WRONGTYPE ...")
  // or is RedisBloom's ("TopK: key does not exist"). Line breaks become
  // spaces: an error is one line.
  void error(std::string_view text);
  void integer(long long v);
  void bulk(std::string_view data);
  void null();  // a missing value: RESP2 "$-1", RESP3 "_"
  void nulls(std::size_t n);  // n of them (an ADD's reply when it pushed nothing out)
  void array(std::size_t n);
  void map(std::size_t pairs);
  void boolean(bool v);
  void number(double v);  // RESP3 double; RESP2 a bulk string of the shortest text that reads back the same
  void verbatim(std::string_view text);
  void raw(std::string_view encoded) { out_ += encoded; }  // a reply already written in this protocol (a cached one)  // RESP3 "=" txt; RESP2 a bulk string (INFO)

 private:
  void header(char type, std::size_t n);
  std::string& out_;
  int protocol_;
};

}  // namespace ebb::resp
