// The folder of a node's partition checkpoints (cluster/replica_checkpoints.hpp).
#include "ebb/cluster/replica_checkpoints.hpp"

#include <system_error>

#include "ebb/storage/file_io.hpp"

namespace ebb::cluster {

ReplicaCheckpoints::ReplicaCheckpoints(std::filesystem::path root, const std::string& stream, std::int64_t stream_created_ns,
                                       std::uint32_t partitions, const std::shared_ptr<spdlog::logger>& log)
    : root_(std::move(root)), lock_(root_, "cluster checkpoint directory") {
  const std::string identity = "ebb partition checkpoints\nstream " + stream + "\ncreated_ns " + std::to_string(stream_created_ns) +
                               "\npartitions " + std::to_string(partitions) + "\n";
  const auto file = root_ / "STREAM";
  std::string held;
  std::error_code ec;
  if (std::filesystem::exists(file, ec)) {
    try {
      held = storage::read_whole_file(file);
    } catch (const std::exception& e) {
      log->warn("{}: unreadable ({}); its checkpoints are dropped", file.string(), e.what());
    }
  }
  if (held == identity) return;
  // Another stream's sequences (or checkpoints of unknown provenance): a
  // replica resuming from them would skip or repeat records.
  for (const auto& entry : std::filesystem::directory_iterator(root_, ec)) {
    const auto name = entry.path().filename().string();
    if (!name.starts_with("partition-")) continue;
    log->warn("dropping the checkpoints in {}: they are of another stream than {} (made at {} ns)", entry.path().string(), stream,
              stream_created_ns);
    std::filesystem::remove_all(entry.path(), ec);
    if (ec) throw storage::IoError("cannot remove", entry.path(), ec.value());
  }
  storage::write_file_atomically(file, identity);
}

std::filesystem::path ReplicaCheckpoints::partition_dir(std::uint32_t partition) const {
  return root_ / ("partition-" + std::to_string(partition));
}

}  // namespace ebb::cluster
