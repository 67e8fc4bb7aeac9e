// Writes the seed inputs of the fuzz targets whose inputs are binary (log
// records, segments, manifests, checkpoint states, sketch blobs) into
// fuzz/corpus/<target>/seed-*, made with ebb's own encoders so that they
// are valid and the fuzzer starts from real files. The text targets' seeds
// are written by hand. Run by `scripts/fuzz seeds` (then commit the files):
//   fuzz_make_seeds <corpus dir>
#include <filesystem>
#include <fstream>
#include <iostream>

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
  return 0;
}
