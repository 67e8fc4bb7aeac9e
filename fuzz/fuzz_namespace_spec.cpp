// Namespace configurations (service/namespace_spec.hpp): POST /namespaces
// and PATCH bodies, and the stored form that the log and checkpoints carry
// and a restart parses again. Input: one option byte (bit 0: parse as a
// stored configuration, else as a request; bit 1: as a PATCH of a fixed
// namespace instead), then the JSON text.
// Checks: a refused body is a ServiceError of kind invalid with a message,
// nothing else; an accepted configuration validates, and its stored form
// parses back (as stored) to a configuration whose stored form is the same
// text, so a namespace the server accepted always loads after a restart.
#include <cstring>

#include "ebb/service/namespace_spec.hpp"
#include "ebb/service/service_error.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace ebb;

void check_stored_round_trip(const service::NamespaceSpec& spec, const service::ServiceLimits& limits) {
  spec.config.validate();
  const std::string stored = service::write_namespace_spec(spec, true);
  service::NamespaceSpec again;
  try {
    again = service::parse_namespace_spec(stored, limits, service::SpecSource::stored);
  } catch (const service::ServiceError& e) {
    fuzz::fail(__FILE__, __LINE__, "a stored configuration does not parse back", std::string(e.what()) + " in " + stored);
  }
  FUZZ_CHECK_MSG(service::write_namespace_spec(again, true) == stored, stored);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const std::uint8_t options = in.byte();
  const std::string_view json = in.rest();
  const service::ServiceLimits limits;
  try {
    if (options & 2) {
      static const service::NamespaceSpec base =
          service::parse_namespace_spec(R"({"name":"tags","half_lives":["5m"],"windows":["all"],"k":3,"sketch_width":16})", limits);
      check_stored_round_trip(service::patch_namespace_spec(base, json, limits), limits);
    } else {
      const auto source = options & 1 ? service::SpecSource::stored : service::SpecSource::request;
      check_stored_round_trip(service::parse_namespace_spec(json, limits, source), limits);
    }
  } catch (const service::ServiceError& e) {
    FUZZ_CHECK(e.kind() == service::ErrorKind::invalid);
    FUZZ_CHECK(std::strlen(e.what()) > 0);  // a message that names the field
  }
  return 0;
}
