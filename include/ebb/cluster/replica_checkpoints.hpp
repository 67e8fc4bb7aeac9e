#pragma once
// Where a node keeps its partitions' checkpoints (ebb serve --nats with a
// --data-dir; docs/cluster.md):
//
//   <data-dir>/cluster/<stream>/LOCK             held while the node runs
//   <data-dir>/cluster/<stream>/STREAM           which stream the checkpoints are of
//   <data-dir>/cluster/<stream>/partition-<p>/   one partition's service data
//                                                directory: checkpoints only
//                                                (docs/formats.md), no log
//
// A checkpoint names stream sequences, which mean something only in the
// stream that gave them: when STREAM does not name this stream (deleted
// and made again: another creation time, or other partitions), every
// partition's checkpoints are removed and replicas replay from the start.
#include <spdlog/logger.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "ebb/storage/directory_lock.hpp"

namespace ebb::cluster {

class ReplicaCheckpoints {
 public:
  // Locks the folder (std::runtime_error when another node has it) and
  // drops checkpoints of another stream. Throws IoError naming the path.
  ReplicaCheckpoints(std::filesystem::path root, const std::string& stream, std::int64_t stream_created_ns, std::uint32_t partitions,
                     const std::shared_ptr<spdlog::logger>& log);

  const std::filesystem::path& root() const noexcept { return root_; }
  std::filesystem::path partition_dir(std::uint32_t partition) const;

 private:
  std::filesystem::path root_;
  storage::DirectoryLock lock_;
};

}  // namespace ebb::cluster
