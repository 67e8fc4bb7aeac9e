// The libnats functions ebb calls, each resolved in the library on its
// first call (include/ebb/cluster/nats_library.hpp says why). nats.h
// declares them; the definitions below, one per line of
// nats_functions.inc, must match those declarations or the build fails.
#include "ebb/cluster/nats_library.hpp"

#include <dlfcn.h>
#include <nats/nats.h>

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

void* library = nullptr;

void* open_library() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    // RTLD_NODELETE: the library's own threads and exit handlers outlive
    // any handle; it is never closed.
    constexpr int mode = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
    library = ::dlopen(EBB_NATS_LIBRARY, mode);
    if (!library) library = ::dlopen(EBB_NATS_SONAME, mode);
    if (!library) {
      const char* why = ::dlerror();
      failure = std::string("cluster mode (--nats) needs the NATS C client library " EBB_NATS_SONAME
                            " (Debian package libnats3.4, installed with libnats-dev): ") +
                (why ? why : "cannot open it");
    }
  });
  if (!library) throw std::runtime_error(failure);
  return library;
}

void* function(const char* name) {
  void* lib = open_library();
  ::dlerror();
  void* f = ::dlsym(lib, name);
  if (!f) throw std::runtime_error(std::string("the NATS C client library " EBB_NATS_SONAME " has no function ") + name);
  return f;
}

}  // namespace

void load_nats_library() { open_library(); }

}  // namespace ebb::cluster

// Each looks its function up once (a function-local static: thread-safe),
// then calls it. A call before load_nats_library() opens the library, and
// throws as it does when it cannot.
#define EBB_NATS_FUNCTION(ret, name, params, args)                                                                 \
  extern "C" ret name params {                                                                                     \
    static const auto real = reinterpret_cast<decltype(&name)>(::ebb::cluster::function(#name)); /* NOLINT */ \
    return real args;                                                                                              \
  }
#include "nats_functions.inc"
#undef EBB_NATS_FUNCTION
