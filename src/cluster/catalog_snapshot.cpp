// A cluster node's catalog as of a log position (cluster/catalog_snapshot.hpp).
#include "ebb/cluster/catalog_snapshot.hpp"

#include <algorithm>
#include <cmath>

#include "ebb/core/binary_io.hpp"
#include "ebb/core/error.hpp"
#include "ebb/service/log_records.hpp"
#include "ebb/service/namespace_spec.hpp"

namespace ebb::cluster {
namespace {

constexpr std::uint16_t kVersion = 1;

}  // namespace

std::string encode_catalog(const CatalogSnapshot& c) {
  return written([&](BinaryWriter& w) {
    const auto blob = w.begin_blob(BlobKind::catalog_snapshot, kVersion);
    w.put<std::uint64_t>(c.as_of);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(c.namespaces.size()));
    for (const auto& n : c.namespaces) {
      w.put_string(n.name);
      w.put_string(n.config_json);
      w.put<std::uint64_t>(n.revision);
      w.put<double>(n.newest_time);
    }
    w.put<std::uint32_t>(static_cast<std::uint32_t>(c.keys.size()));
    for (const auto& k : c.keys) {
      w.put_string(k.key);
      w.put<std::uint64_t>(k.body_hash);
      w.put<std::uint64_t>(k.lsn);
      w.put<double>(k.received_at);
    }
    w.end_blob(blob);
  });
}

CatalogSnapshot decode_catalog(std::string_view blob) {
  const auto opened = open_blob(blob, BlobKind::catalog_snapshot, kVersion);
  BinaryReader r(opened.payload, "catalog snapshot");
  CatalogSnapshot c;
  c.as_of = r.get<std::uint64_t>();
  const auto n = r.get<std::uint32_t>();
  if (n > r.remaining() / 24) r.fail("claims " + std::to_string(n) + " namespaces");
  for (std::uint32_t i = 0; i < n; ++i) {
    CatalogSnapshot::Namespace ns;
    ns.name = r.get_string(4096);
    ns.config_json = r.get_string(r.remaining());
    ns.revision = r.get<std::uint64_t>();
    ns.newest_time = r.get<double>();
    if (!std::isfinite(ns.newest_time)) r.fail("a namespace's newest event time is not a number");
    if (ns.revision == 0 || ns.revision > c.as_of) r.fail("namespace " + ns.name + "'s revision is not before the snapshot's position");
    c.namespaces.push_back(std::move(ns));
  }
  const auto k = r.get<std::uint32_t>();
  if (k > r.remaining() / 28) r.fail("claims " + std::to_string(k) + " idempotency keys");
  for (std::uint32_t i = 0; i < k; ++i) {
    storage::ManifestKey key;
    key.key = r.get_string(4096);
    key.body_hash = r.get<std::uint64_t>();
    key.lsn = r.get<std::uint64_t>();
    key.received_at = r.get<double>();
    if (key.lsn > c.as_of) r.fail("an idempotency key's batch is after the snapshot's position");
    c.keys.push_back(std::move(key));
  }
  r.expect_end();
  return c;
}

CatalogSnapshot take_catalog(const service::Service& catalog, std::uint64_t as_of) {
  CatalogSnapshot c;
  c.as_of = as_of;
  for (const auto& e : catalog.catalog_entries()) {
    c.namespaces.push_back({e.spec.config.name, service::write_namespace_spec(e.spec, true), e.revision, e.newest_time});
  }
  c.keys = catalog.idempotency_keys();
  // Oldest first: loaded in that order, the table evicts as the log's replay would.
  std::sort(c.keys.begin(), c.keys.end(), [](const auto& a, const auto& b) { return a.lsn < b.lsn; });
  return c;
}

void load_catalog(service::Service& catalog, const CatalogSnapshot& c,
                  const std::function<void(std::uint64_t, std::string_view)>& applied) {
  // As the log made them: each namespace created at its revision (the
  // position commits name), its clock moved to its newest event time, and
  // the keys of the batches that counted.
  for (const auto& n : c.namespaces) {
    service::AdminRecord create;
    create.type = service::RecordType::create;
    create.config_json = n.config_json;
    const std::string record = service::encode_admin(create);
    catalog.apply_record(n.revision, record);
    if (applied) applied(n.revision, record);
    if (n.newest_time > 0) {
      const service::EventClockCheck clock{n.name, NAN, n.newest_time};
      catalog.advance_event_clocks(n.revision, std::span(&clock, 1), {});
    }
  }
  for (const auto& k : c.keys) catalog.remember_key(k.lsn, k.key, k.body_hash, k.received_at, {});
}

}  // namespace ebb::cluster
