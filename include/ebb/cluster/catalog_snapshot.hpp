#pragma once
// A cluster node's catalog as of a position of the commit subject: what a
// node starting on a stream whose older records are gone (retention,
// docs/cluster.md) loads instead of reading the commit subject from its
// start. The catalog counts nothing; what it holds is the namespaces'
// configurations with their revisions, each namespace's newest event time
// (the clock batches are checked against) and the idempotency keys still
// inside their window.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/service/service.hpp"
#include "ebb/storage/checkpoint_store.hpp"

namespace ebb::cluster {

struct CatalogSnapshot {
  struct Namespace {
    std::string name;
    std::string config_json;    // as stored (write_namespace_spec)
    std::uint64_t revision = 0;  // the commit-subject sequence of its create or last patch
    double newest_time = 0;      // its newest event time (0: none yet)
    friend bool operator==(const Namespace&, const Namespace&) = default;
  };
  std::uint64_t as_of = 0;  // every record up to here is in it, none after
  std::vector<Namespace> namespaces;
  std::vector<storage::ManifestKey> keys;
};

// Blob kind 18, version 1 (docs/formats.md); decode throws FormatError.
std::string encode_catalog(const CatalogSnapshot& snapshot);
CatalogSnapshot decode_catalog(std::string_view blob);

// What `catalog` holds, on its applying thread between records (`as_of`:
// the last it applied).
CatalogSnapshot take_catalog(const service::Service& catalog, std::uint64_t as_of);
// Into a catalog that holds nothing yet: it then holds what the one the
// snapshot was taken of held, and follows the log from as_of + 1.
// `applied` hears each namespace's create as the catalog applied it (its
// revision and the record), as a follower of the log would.
void load_catalog(service::Service& catalog, const CatalogSnapshot& snapshot,
                  const std::function<void(std::uint64_t revision, std::string_view record)>& applied = {});

}  // namespace ebb::cluster
