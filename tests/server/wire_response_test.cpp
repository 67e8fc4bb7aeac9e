// The bytes of an answer on the wire (the transport's own serialiser,
// which replaced Beast's so that pipelined answers share one write): the
// framing headers each HTTP version needs, exactly.
#include "src/server/wire_response.hpp"

#include <gtest/gtest.h>

namespace ebb::server {
namespace {

std::string wire(const Response& r, unsigned version, bool keep_alive) {
  std::string out = "(before)";
  append_wire_response(out, r, version, keep_alive);
  return out;
}

TEST(WireResponse, Http11KeepsTheConnectionUnlessToldAndAlwaysSaysTheLength) {
  Response r = json_response(200, R"({"a":1})");
  EXPECT_EQ(wire(r, 11, true), "(before)HTTP/1.1 200 OK\r\nServer: ebb/0.1\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}");
  EXPECT_EQ(wire(r, 11, false),
            "(before)HTTP/1.1 200 OK\r\nServer: ebb/0.1\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: 7\r\n\r\n{\"a\":1}");
}

// A shared body (a cached answer) goes out as a body of its own would,
// HEAD's length included.
TEST(WireResponse, ASharedBodyIsSentAsItsOwn) {
  const auto cached = std::make_shared<const std::string>(R"({"a":1})");
  Response r = json_response(200, cached);
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(wire(r, 11, true), "(before)HTTP/1.1 200 OK\r\nServer: ebb/0.1\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}");
  std::string head;
  append_wire_response(head, r, 11, true, false);
  EXPECT_EQ(head, "HTTP/1.1 200 OK\r\nServer: ebb/0.1\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n");
  EXPECT_EQ(*cached, R"({"a":1})");
}

TEST(WireResponse, Http10ClosesUnlessToldToKeepAlive) {
  Response r = text_response(200, "text/plain", "OK");
  EXPECT_EQ(wire(r, 10, true), "(before)HTTP/1.0 200 OK\r\nServer: ebb/0.1\r\nContent-Type: text/plain\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nOK");
  EXPECT_EQ(wire(r, 10, false), "(before)HTTP/1.0 200 OK\r\nServer: ebb/0.1\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nOK");
}

TEST(WireResponse, NoContentAnswersCarryNoLengthAndNoBody) {
  EXPECT_EQ(wire(empty_response(204), 11, true), "(before)HTTP/1.1 204 No Content\r\nServer: ebb/0.1\r\n\r\n");
  Response not_modified = text_response(304, "text/plain", "ignored");
  EXPECT_EQ(wire(not_modified, 11, false), "(before)HTTP/1.1 304 Not Modified\r\nServer: ebb/0.1\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n");
}

TEST(WireResponse, HandlerHeadersFollowButNeverReplaceTheFraming) {
  Response r = error_response(503, "persist_failed", "disk full");
  r.headers.emplace_back("Retry-After", "1");
  r.headers.emplace_back("content-length", "999");
  r.headers.emplace_back("Connection", "keep-alive");
  const std::string out = wire(r, 11, false);
  EXPECT_EQ(out.substr(0, out.find("\r\n\r\n") + 4),
            "(before)HTTP/1.1 503 Service Unavailable\r\nServer: ebb/0.1\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
            "Connection: close\r\nContent-Length: " +
                std::to_string(r.body.size()) + "\r\n\r\n");
  EXPECT_EQ(out.substr(out.find("\r\n\r\n") + 4), r.body);
}

TEST(WireResponse, AStreamsHeadHasNoLengthAndClosesTheConnection) {
  Response r;
  r.content_type = "text/event-stream";
  r.headers.emplace_back("X-Extra", "yes");
  EXPECT_EQ(stream_head(r, 11),
            "HTTP/1.1 200 OK\r\nServer: ebb/0.1\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n"
            "X-Accel-Buffering: no\r\nX-Extra: yes\r\n\r\n");
}

}  // namespace
}  // namespace ebb::server
