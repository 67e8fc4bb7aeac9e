// Writes the seed inputs of the fuzz targets whose inputs are binary (log
// records, segments, manifests, checkpoint states, sketch blobs) into
// fuzz/corpus/<target>/seed-*, made with ebb's own encoders so that they
// are valid and the fuzzer starts from real files. The text targets' seeds
// are written by hand. Run by `scripts/fuzz seeds` (then commit the files):
//   fuzz_make_seeds <corpus dir>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "ebb/cluster/cluster_records.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/decay/exact_decayed_counter.hpp"
#include "ebb/decay/forward_decay.hpp"
#include "ebb/service/log_records.hpp"
#include "ebb/sketch/augmented_heap/augmented_heap.hpp"
#include "ebb/sketch/candidate_heap/candidate_heap.hpp"
#include "ebb/sketch/space_saving/space_saving.hpp"
#include "ebb/storage/checkpoint_store.hpp"
#include "ebb/storage/segment_format.hpp"
#include "namespace_fixture.hpp"

namespace {

using namespace ebb;
namespace fs = std::filesystem;

fs::path root;

void seed(const std::string& target, const std::string& name, std::string_view options, std::string_view bytes) {
  fs::create_directories(root / target);
  std::ofstream out(root / target / ("seed-" + name), std::ios::binary | std::ios::trunc);
  out << options << bytes;
  if (!out) throw std::runtime_error("cannot write " + (root / target / name).string());
}

std::vector<std::string> log_records() {
  const std::string_view items = "#rust#cpp#go";
  std::vector<std::string> out;
  service::BatchRecord plain;
  plain.received_at = 1.7e9;
  plain.groups.push_back({"tags", {{items.substr(0, 5), 1.7e9, 1}, {items.substr(5, 4), 1.7e9 - 1, 3}}});
  out.emplace_back();
  service::encode_batch(out.back(), plain);

  service::BatchRecord keyed = plain;
  keyed.key = service::IdempotencyStamp{"retry-7", 0x1234567890abcdefULL};
  keyed.groups.push_back({"paths", {{"/index.html", 1.7e9 + 0.5, 2.5}}});
  out.emplace_back();
  service::encode_batch(out.back(), keyed);

  service::BatchRecord empty;
  out.emplace_back();
  service::encode_batch(out.back(), empty);

  const std::string config = R"({"name":"tags","k":3,"windows":["all"],"half_lives":["5m"],"sketch_width":16,"sketch_depth":2})";
  out.push_back(service::encode_admin({service::RecordType::create, "", config, ""}));
  out.push_back(service::encode_admin({service::RecordType::patch, "tags", R"({"name":"tags","k":5})", ""}));
  out.push_back(service::encode_admin({service::RecordType::remove, "tags", "", ""}));
  out.push_back(service::encode_admin({service::RecordType::state, "tags", "", "a namespace's state blob"}));
  // The compact layout the local log writes (type 7), after the
  // others so their seed names keep their bytes.
  for (const auto* r : {&plain, &keyed, &empty}) {
    out.emplace_back();
    service::encode_batch_compact(out.back(), *r);
  }
  return out;
}

std::string segment(std::uint64_t first, const std::vector<std::string>& payloads) {
  std::string s;
  storage::append_segment_header(s, first);
  for (std::size_t i = 0; i < payloads.size(); ++i) storage::append_segment_record(s, first + i, payloads[i]);
  return s;
}

engine::Namespace counted_namespace(bool space_saving, int events, bool exact = false) {
  engine::Namespace ns(fuzz::fixture_config(space_saving, exact), fuzz::fixture_clock);
  const char* keys[] = {"#rust", "#cpp", "#go", "#zig", "#c", "#d"};
  std::vector<engine::Event> batch;
  for (int i = 0; i < events; ++i) batch.push_back({keys[(i * i) % 6], 1000.0 + i * 7.5, 1.0 + i % 3});
  if (!batch.empty()) ns.apply(batch);
  return ns;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_seeds <corpus dir>\n";
    return 2;
  }
  root = argv[1];

  const auto records = log_records();
  for (std::size_t i = 0; i < records.size(); ++i) seed("fuzz_log_record", "record-" + std::to_string(i), "", records[i]);

  // '0': as written; '1': checksums fixed by the target; '3': also begins where its header says.
  const std::string wal = segment(1, records);
  seed("fuzz_segment", "valid", "0", wal);
  seed("fuzz_segment", "valid-fixed", "1", wal);
  seed("fuzz_segment", "torn-tail", "0", wal.substr(0, wal.size() - 7));
  seed("fuzz_segment", "header-only", "0", segment(1, {}));
  seed("fuzz_segment", "starts-at-42", "3", segment(42, {records[0], records[3]}));

  storage::Manifest m;
  m.start_lsn = 17;
  m.written_at = 1.7e9;
  m.namespaces.push_back({"tags", R"({"name":"tags","k":3})", 15, "tags.15.state"});
  m.namespaces.push_back({"a b", R"({"name":"a b"})", 17, storage::encode_file_name("a b") + ".17.state"});
  m.keys.push_back({"retry-7", 42, 16, 1.7e9 - 3});
  m.keys.push_back({"", 0, 1, 0});
  seed("fuzz_manifest", "two-namespaces", "0", m.serialize());
  seed("fuzz_manifest", "two-namespaces-fixed", "1", m.serialize());
  seed("fuzz_manifest", "empty", "1", storage::Manifest{}.serialize());

  // Option bit 0: envelopes re-sealed by the target; bit 1: Space-Saving.
  for (const bool ss : {false, true}) {
    const std::string kind = ss ? "space-saving" : "candidate-heap";
    const std::string opt0 = ss ? "2" : "0", opt1 = ss ? "3" : "1";
    seed("fuzz_namespace_state", kind + "-empty", opt1, counted_namespace(ss, 0).serialize_state());
    seed("fuzz_namespace_state", kind + "-counted", opt1, counted_namespace(ss, 40).serialize_state());
    seed("fuzz_namespace_state", kind + "-counted-raw", opt0, counted_namespace(ss, 40).serialize_state());
  }
  // Bit 2 ('4', '5'): exact counting; 40 events over 6 keys evict past 4 records.
  seed("fuzz_namespace_state", "exact-empty", "5", counted_namespace(false, 0, true).serialize_state());
  seed("fuzz_namespace_state", "exact-counted", "5", counted_namespace(false, 40, true).serialize_state());
  seed("fuzz_namespace_state", "exact-counted-raw", "4", counted_namespace(false, 40, true).serialize_state());

  // Type digit ('0' CountMin ... '4' ExactDecayedCounter, '5' AugmentedHeap), then the option
  // byte (bit 0: envelopes re-sealed; bit 1: summaries read expecting capacity 4).
  CountMin cms(CountMinShape::with_dimensions(16, 2));
  CandidateHeap heap(4);
  AugmentedHeap augmented(4);
  CountMin augmented_sketch(CountMinShape::with_dimensions(16, 2));
  SpaceSaving space(4);
  ExactDecayedCounter exact({60, std::numeric_limits<double>::infinity()});
  const char* keys[] = {"#rust", "#cpp", "#go", "#zig", "#c", "#d"};
  for (int i = 0; i < 30; ++i) {
    const std::string_view key = keys[(i * 7) % 6];
    const double w = 1 + i % 4;
    const double est = cms.update(hash_key(key), w);
    heap.offer(key, hash_key(key), w, est);
    const std::uint64_t h = hash_key(key);
    augmented.apply(augmented_sketch, &key, &h, &w, 1);
    space.update(key, hash_key(key), w);
    exact.add(key, w, 1000.0 + i);
  }
  ForwardDecay clock = ForwardDecay::with_half_life(60);
  clock.anchor(1000);
  seed("fuzz_blobs", "count-min", "01", cms.serialize());
  seed("fuzz_blobs", "candidate-heap", "11", heap.serialize());
  seed("fuzz_blobs", "space-saving", "21", space.serialize());
  seed("fuzz_blobs", "forward-decay", "31", clock.serialize());
  seed("fuzz_blobs", "exact-counter", "41", exact.serialize());
  seed("fuzz_blobs", "count-min-raw", "00", cms.serialize());
  seed("fuzz_blobs", "candidate-heap-capacity-4", "13", heap.serialize());
  seed("fuzz_blobs", "space-saving-capacity-4", "23", space.serialize());
  seed("fuzz_blobs", "augmented-heap", "51", augmented.serialize());
  seed("fuzz_blobs", "augmented-heap-capacity-4", "53", augmented.serialize());

  // The cluster's records: option '0' a commit, '1' a query, '1' + kind a reply, ';' a merge.
  cluster::CommitRecord commit{"batch-7", {{0, 12}, {3, 15}}, {{"tags", 2}}, {}, std::nullopt};
  seed("fuzz_cluster_records", "commit", "0", cluster::encode_commit(commit));
  commit.clocks = {{"tags", std::nan(""), 1.7e9 + 5}};
  seed("fuzz_cluster_records", "commit-clocked", "0", cluster::encode_commit(commit));
  commit.key = cluster::CommitRecord::Key{"retry-7", 0x1234567890abcdefULL};
  seed("fuzz_cluster_records", "commit-keyed", "0", cluster::encode_commit(commit));
  const cluster::MergeRecord merge{"sum", {{"tags", 2}, {"sum", 1}}, {{"sum", 4}, {"tags", 2}}};
  seed("fuzz_cluster_records", "merge", ";", cluster::encode_merge(merge));
  cluster::QueryRequest q;
  q.ns = "tags";
  q.view = engine::ViewSpec::decayed(300);
  q.k = 10;
  q.items = {"#rust", "#go"};
  q.min_position = 42;
  q.wait_ms = 2000;
  q.from = 1.7e9;
  q.to = 1.7e9 + 60;
  for (int kind = 1; kind <= 9; ++kind) {
    q.kind = static_cast<cluster::QueryRequest::Kind>(kind);
    q.rate = kind == 5 ? std::optional<double>(0.5) : std::nullopt;
    seed("fuzz_cluster_records", "query-" + std::to_string(kind), "1", cluster::encode_query(q));
  }
  cluster::QueryReply reply;
  reply.partition = 3;
  reply.top.view = engine::ViewSpec::all_time();
  CountedItem item;
  item.key = "#rust";
  item.estimate = 5;
  item.lower = 4;
  item.upper = 6;
  reply.top.items.push_back(item);
  reply.points.emplace_back();
  reply.points.back().item = item;
  engine::TrendingItem trend;
  trend.key = "#go";
  trend.score = 2.5;
  trend.short_count = item;
  reply.trending.items.push_back(trend);
  engine::HotKey hot;
  hot.key = "#zig";
  hot.rate = 12.5;
  hot.since = 1.7e9;
  reply.hot.items.push_back(hot);
  engine::DistributionAnswer colors;
  colors.distribution = "colors";
  colors.z = 6;
  colors.t = 1.7e9;
  colors.decay = engine::DistributionDecay::poisson;
  colors.bins.emplace_back();
  colors.bins.back().bin = "red";
  colors.bins.back().count = 3.5;
  reply.distribution = colors;
  reply.count = 9;
  engine::NamespaceStats stats;
  stats.events = 10;
  stats.weight = 12.5;
  stats.views.emplace_back();
  stats.views.back().view = engine::ViewSpec::sliding(3600);
  stats.views.back().dropped = 4;
  reply.stats.emplace_back("tags", stats);
  reply.history.view = engine::ViewSpec::decayed(300);
  reply.history.points.resize(2);
  reply.history.points[0].t = 1.7e9;
  reply.history.points[0].rank = 2;
  reply.history.points[0].estimate = 5;
  reply.history.points[1].t = 1.7e9 + 10;
  reply.history.points[1].upper = 3;
  for (int kind = 1; kind <= 9; ++kind) {
    const auto k = static_cast<cluster::QueryRequest::Kind>(kind);
    seed("fuzz_cluster_records", "reply-" + std::to_string(kind), std::string(1, static_cast<char>('1' + kind)), cluster::encode_reply(reply, k));
  }
  reply.error = service::ServiceError(service::ErrorKind::unavailable, "partition_behind", "partition 3 is behind");
  seed("fuzz_cluster_records", "reply-error", "2", cluster::encode_reply(reply, cluster::QueryRequest::Kind::top));
  return 0;
}
