#pragma once
// A Response as HTTP/1.x bytes, appended to a buffer: the transport answers
// pipelined requests by writing several of these with one system call.
#include <string>

#include "ebb/server/http_types.hpp"

namespace ebb::server {

// The status line and headers (Server, Content-Type when there is a body,
// the handler's own, Connection as `version` needs it for `keep_alive`),
// then Content-Length and the body. 1xx, 204 and 304 answers carry neither
// (RFC 9110 8.6: they have no content). A handler header naming one the
// transport writes (Content-Length, Connection, Content-Type, Server,
// Transfer-Encoding) is left out: the transport's framing is the truth.
// Without `with_body` (the answer to a HEAD) the body is left out and
// Content-Length still gives its length, as a GET would have had it.
void append_wire_response(std::string& out, const Response& r, unsigned version, bool keep_alive, bool with_body = true);

// The head of a streamed answer (no length; the connection's close ends it).
std::string stream_head(const Response& r, unsigned version);

}  // namespace ebb::server
