#pragma once
// Where a cluster keeps what in NATS (docs/cluster.md): one JetStream stream
// holding the batches' parts (one subject per partition) and, on one more
// subject, the commits and the namespace changes in a single order; query
// subjects per partition (plain NATS request/reply, not stored); a
// key-value bucket of the live nodes, and one mirroring the namespaces'
// configurations.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ebb::cluster {

struct ClusterLayout {
  std::string stream = "EBB";
  std::string prefix = "EBB";  // ebb serve: the stream's name
  std::uint32_t partitions = 16;

  std::string part_subject(std::uint32_t p) const { return prefix + ".p." + std::to_string(p); }
  std::string commit_subject() const { return prefix + ".c"; }
  std::string query_subject(std::uint32_t p) const { return prefix + ".q." + std::to_string(p); }
  std::vector<std::string> stream_subjects() const { return {prefix + ".p.*", commit_subject()}; }
  std::string stream_filter() const { return prefix + ".>"; }  // a consumer's filter reading every subject of the stream
  // Shared checkpoints (shared_checkpoints.hpp): a stream of their own.
  std::string checkpoint_stream() const { return stream + "_checkpoints"; }
  // Slot p < partitions: partition p's; p == partitions: the catalog's.
  std::string checkpoint_slot(std::uint32_t p) const { return p < partitions ? std::to_string(p) : std::string("catalog"); }
  std::string checkpoint_data_subject(std::uint32_t p) const { return prefix + ".k." + checkpoint_slot(p) + ".d"; }
  std::string checkpoint_head_subject(std::uint32_t p) const { return prefix + ".k." + checkpoint_slot(p) + ".h"; }
  std::vector<std::string> checkpoint_subjects() const { return {prefix + ".k.>"}; }
  std::string nodes_bucket() const { return stream + "_nodes"; }
  std::string namespaces_bucket() const { return stream + "_namespaces"; }
};

}  // namespace ebb::cluster
