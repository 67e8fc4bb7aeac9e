#pragma once
// The server's data directory: one configuration file and one state
// checkpoint per namespace.
//
//   <dir>/LOCK                      held (flock) while a server uses the directory
//   <dir>/namespaces/<name>.json    the resolved configuration (written on create/patch)
//   <dir>/namespaces/<name>.state   the counting state (written by checkpoints)
//
// Every write goes to a temporary file, is fsync'ed, renamed over the old
// one and the directory fsync'ed: a crash leaves the old file or the new
// one, never a torn one. State files carry their own checksum (the binary
// envelope), so damage is detected on load.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ebb::storage {

class CheckpointStore {
 public:
  // Creates the directory if needed and takes its lock; throws
  // std::runtime_error naming the path if it cannot (another server has it).
  explicit CheckpointStore(std::filesystem::path dir);
  ~CheckpointStore();
  CheckpointStore(const CheckpointStore&) = delete;
  CheckpointStore& operator=(const CheckpointStore&) = delete;

  const std::filesystem::path& dir() const noexcept { return dir_; }

  void save_config(const std::string& name, std::string_view json);
  void save_state(const std::string& name, std::string_view blob);
  void remove(const std::string& name);

  struct Stored {
    std::string name;
    std::string config_json;
    std::optional<std::string> state;
    std::filesystem::path config_path, state_path;
  };
  // Every namespace found, sorted by name.
  std::vector<Stored> load_all() const;

 private:
  void write_atomically(const std::filesystem::path& path, std::string_view bytes);
  std::filesystem::path dir_;
  std::filesystem::path ns_dir_;
  int lock_fd_ = -1;
};

}  // namespace ebb::storage
