#pragma once
// The data directory of `ebb serve` (docs/formats.md has every byte):
//
//   <dir>/LOCK                                  flock'ed while a server uses the directory
//   <dir>/wal/<first lsn>.log                   the write-ahead log (SegmentLog)
//   <dir>/checkpoints/<start lsn>.manifest      a checkpoint: every namespace's configuration,
//                                               its state file and the LSN that state includes
//   <dir>/checkpoints/state/<name>.<lsn>.state  one namespace's counting state as of that LSN
//   <dir>/checkpoints/state/<part>.<lsn>.state  a part of the service's state outside the
//                                               namespaces (distributions.<shard>), as of that LSN
//   <dir>/namespaces/<name>.json|.state         the layout before the log (read once, then migrated)
//
// A checkpoint with start LSN S holds, for each namespace, a state that
// includes every record up to S for it (and maybe later ones: its own LSN
// says which). Recovery loads the newest readable manifest and replays the
// log after S. The newest two manifests are kept, so a damaged newest one
// falls back to the previous; state files neither names are removed.
// States are immutable files named by their LSN: a namespace that did not
// change keeps its file, so a checkpoint writes only what changed.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ebb/storage/directory_lock.hpp"

namespace ebb::storage {

struct ManifestNamespace {
  std::string name;
  std::string config_json;    // the namespace's stored configuration
  std::uint64_t state_lsn = 0;  // the newest record its state includes
  std::string state_file;     // under checkpoints/state/
  // The record that set its configuration (create or patch): what a cluster
  // commit names as the revision it was checked against. Version 3 on;
  // older manifests read it as state_lsn.
  std::uint64_t config_lsn = 0;
};

// State that is not a namespace's (the distribution store's shards): a
// part name (which holds a '.', so it is never a namespace's file name:
// those encode '.'), its file and the newest record it includes.
struct ManifestPart {
  std::string name;
  std::uint64_t state_lsn = 0;
  std::string state_file;
};

struct ManifestKey {  // an idempotency key still inside its window
  std::string key;
  std::uint64_t body_hash = 0;
  std::uint64_t lsn = 0;
  double received_at = 0;
};

struct Manifest {
  std::uint64_t start_lsn = 0;
  double written_at = 0;
  std::vector<ManifestNamespace> namespaces;
  std::vector<ManifestKey> keys;
  std::vector<ManifestPart> parts;  // version 2 on; none in a version 1 manifest

  std::string serialize() const;
  static Manifest parse(std::string_view blob);  // FormatError
};

struct LegacyNamespace {
  std::string name;
  std::string config_json;
  std::optional<std::string> state;
  std::filesystem::path config_path, state_path;
};

class CheckpointStore {
 public:
  // Creates the directory if needed and takes its lock; throws IoError or
  // std::runtime_error naming the path (another server has it).
  explicit CheckpointStore(std::filesystem::path dir);
  ~CheckpointStore();
  CheckpointStore(const CheckpointStore&) = delete;
  CheckpointStore& operator=(const CheckpointStore&) = delete;

  const std::filesystem::path& dir() const noexcept { return dir_; }
  std::filesystem::path wal_dir() const { return dir_ / "wal"; }

  // Removes the temporaries a crash can leave (*.tmp); returns their paths.
  std::vector<std::filesystem::path> remove_temporaries();

  // Manifests, newest first.
  std::vector<std::filesystem::path> manifests() const;
  Manifest read_manifest(const std::filesystem::path& path) const;  // IoError, FormatError
  std::string read_state(const std::string& state_file) const;

  // Writes one namespace's state (if that file does not exist yet) and
  // returns its file name.
  std::string write_state(const std::string& name, std::uint64_t lsn, std::string_view blob);
  // The same for a part (ManifestPart; the name must hold a '.').
  std::string write_part_state(const std::string& part, std::uint64_t lsn, std::string_view blob);
  // Makes `m` the newest checkpoint, then drops all but the newest two
  // manifests and every state file neither of them names. Returns the
  // start LSN of the older kept manifest (the log may go up to there).
  std::uint64_t commit(const Manifest& m);

  // The pre-log layout.
  std::vector<LegacyNamespace> legacy_namespaces() const;
  void remove_legacy();

  // Files the store does not know in its folders (left alone, reported).
  std::vector<std::filesystem::path> foreign_files() const;

 private:
  std::filesystem::path dir_, checkpoints_, states_, legacy_;
  DirectoryLock lock_;
};

// A checkpoint as bytes, to copy it to another machine (a cluster's shared
// checkpoints, docs/cluster.md): its manifest and the state files it names.
struct CheckpointCopy {
  std::uint64_t start_lsn = 0;
  std::string manifest;                                   // its bytes
  std::vector<std::pair<std::string, std::string>> states;  // file name under checkpoints/state/, bytes
};
// The newest checkpoint of the data directory `dir` whose manifest and
// state files all read (nullopt: none). Safe beside the directory's store,
// also while another thread commits checkpoints there: states are
// immutable once named, and a read that commits outran is made again.
std::optional<CheckpointCopy> read_newest_checkpoint(const std::filesystem::path& dir);
// FormatError unless the copy is whole: a manifest that parses, every
// state it names present once and nothing else, file names inside their
// folder, each state a sealed blob whose checksum holds.
void check_checkpoint(const CheckpointCopy& copy);
// Writes a checked copy into the data directory `dir` (not in use by a
// store): the state files it lacks, then the manifest, each atomically, so
// a crash midway leaves the directory's newest checkpoint as it was.
// Returns the files written (the manifest last), for the caller to remove
// should the copy not load.
std::vector<std::filesystem::path> write_checkpoint(const std::filesystem::path& dir, const CheckpointCopy& copy);

// File-name form of a namespace name: bytes outside [A-Za-z0-9_-] as %XX;
// past 177 bytes, the first 160 or so of that, '~' and the name's hash.
std::string encode_file_name(std::string_view name);

}  // namespace ebb::storage
