// The libnats functions ebb calls, each forwarding to the library's own
// (include/ebb/cluster/nats_library.hpp says why). nats.h declares them;
// the definitions below, one per line of nats_functions.inc, must match
// those declarations or the build fails.
//
// Hidden: were the executable to export them (-rdynamic), libnats's calls
// to its own API would bind to these instead of to itself.
#pragma GCC visibility push(hidden)
#include <nats/nats.h>
#pragma GCC visibility pop

#include "ebb/cluster/nats_library.hpp"

#include <dlfcn.h>

#include <mutex>
#include <stdexcept>
#include <string>

// Set by CMake: the library's SONAME, and that name in the folder of the
// library built against (a prefix outside the loader's search path).
#ifndef EBB_NATS_SONAME
#define EBB_NATS_SONAME "libnats.so"
#endif
#ifndef EBB_NATS_LIBRARY
#define EBB_NATS_LIBRARY EBB_NATS_SONAME
#endif

namespace ebb::cluster {
namespace {

// Every function, looked up when the library is opened: after that a call
// is one indirect jump, and none can fail.
struct Functions {
#define EBB_NATS_FUNCTION(ret, name, params, args) decltype(&::name) name = nullptr;
#include "nats_functions.inc"
#undef EBB_NATS_FUNCTION
};

// Debian names the package after the SONAME: libnats.so.3.4 -> libnats3.4.
std::string package_of(std::string soname) {
  if (const auto at = soname.find(".so."); at != std::string::npos) soname.erase(at, 4);
  return soname;
}

const Functions& functions() {
  static std::once_flag once;
  static Functions table;
  static std::string failure;
  std::call_once(once, [] {
    // The loader's own search first (LD_LIBRARY_PATH, ld.so.conf), then the
    // folder built against. Never closed (the library's threads and exit
    // handlers outlive any handle).
    constexpr int mode = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
    void* lib = ::dlopen(EBB_NATS_SONAME, mode);
    std::string why = lib ? "" : ::dlerror();
    if (!lib && std::string(EBB_NATS_LIBRARY) != EBB_NATS_SONAME) {
      lib = ::dlopen(EBB_NATS_LIBRARY, mode);
      if (!lib) why += std::string("; ") + ::dlerror();
    }
    if (!lib) {
      failure = "cluster mode (--nats) needs the NATS C client library " EBB_NATS_SONAME " (Debian package " + package_of(EBB_NATS_SONAME) +
                ", which libnats-dev installs): " + why;
      return;
    }
    std::string missing;
#define EBB_NATS_FUNCTION(ret, name, params, args)                                   \
  table.name = reinterpret_cast<decltype(&::name)>(::dlsym(lib, #name)); /* NOLINT */ \
  if (!table.name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
#include "nats_functions.inc"
#undef EBB_NATS_FUNCTION
    if (!missing.empty()) failure = "the NATS C client library " EBB_NATS_SONAME " lacks functions ebb calls: " + missing;
  });
  if (!failure.empty()) throw std::runtime_error(failure);
  return table;
}

}  // namespace

void load_nats_library() { functions(); }

}  // namespace ebb::cluster

// A call before load_nats_library() opens the library first (and throws as
// it does when it cannot); cluster mode opens it before it starts.
#define EBB_NATS_FUNCTION(ret, name, params, args) \
  extern "C" ret name params { return ::ebb::cluster::functions().name args; }
#include "nats_functions.inc"
#undef EBB_NATS_FUNCTION
