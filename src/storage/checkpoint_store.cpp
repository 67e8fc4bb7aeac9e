#include "ebb/storage/checkpoint_store.hpp"

#include <algorithm>
#include <cerrno>
#include <set>

#include "ebb/core/binary_io.hpp"
#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/core/percent_encoding.hpp"
#include "ebb/storage/file_io.hpp"

namespace ebb::storage {
namespace {

// Version 2 added the parts (the distribution store), version 3 each
// namespace's configuration LSN (a section after the parts, so the layout
// before it is version 2's); older manifests still load.
constexpr std::uint16_t kManifestVersion = 3;
constexpr std::size_t kMaxText = std::size_t{1} << 26;

std::string manifest_name(std::uint64_t start_lsn) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%020llu.manifest", static_cast<unsigned long long>(start_lsn));
  return buf;
}

bool is_manifest_name(const std::string& n) {
  return n.size() == 29 && n.ends_with(".manifest") && std::all_of(n.begin(), n.begin() + 20, [](char c) { return c >= '0' && c <= '9'; });
}

void make_dir(const std::filesystem::path& p) {
  std::error_code ec;
  std::filesystem::create_directories(p, ec);
  if (ec) throw IoError("cannot create directory", p, ec.value());
}

}  // namespace

std::string encode_file_name(std::string_view name) {
  std::string encoded = percent_encode(name, "-_");
  // A name may be 256 bytes of UTF-8, three times that encoded: past a file
  // name's 255 bytes. A long one keeps a readable head (never cut inside a
  // %XX) and a hash of the whole name; the manifest maps names to files.
  constexpr std::size_t kKeep = 160;
  if (encoded.size() <= kKeep + 17) return encoded;
  std::size_t cut = kKeep;
  if (encoded[cut - 1] == '%') cut -= 1;
  else if (encoded[cut - 2] == '%') cut -= 2;
  encoded.resize(cut);
  return encoded + "~" + key_hash_hex(name);
}

std::string Manifest::serialize() const {
  BinaryWriter w;
  w.put<std::uint64_t>(start_lsn);
  w.put<double>(written_at);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(namespaces.size()));
  for (const auto& n : namespaces) {
    w.put_string(n.name);
    w.put_string(n.config_json);
    w.put<std::uint64_t>(n.state_lsn);
    w.put_string(n.state_file);
  }
  w.put<std::uint32_t>(static_cast<std::uint32_t>(keys.size()));
  for (const auto& k : keys) {
    w.put_string(k.key);
    w.put<std::uint64_t>(k.body_hash);
    w.put<std::uint64_t>(k.lsn);
    w.put<double>(k.received_at);
  }
  w.put<std::uint32_t>(static_cast<std::uint32_t>(parts.size()));
  for (const auto& p : parts) {
    w.put_string(p.name);
    w.put<std::uint64_t>(p.state_lsn);
    w.put_string(p.state_file);
  }
  for (const auto& n : namespaces) w.put<std::uint64_t>(n.config_lsn);  // one per namespace, in their order
  return seal_blob(BlobKind::checkpoint_manifest, kManifestVersion, w.buffer());
}

Manifest Manifest::parse(std::string_view blob) {
  const auto opened = open_blob(blob, BlobKind::checkpoint_manifest, kManifestVersion);
  BinaryReader r(opened.payload, "checkpoint manifest");
  Manifest m;
  m.start_lsn = r.get<std::uint64_t>();
  m.written_at = r.get<double>();
  const auto n = r.get<std::uint32_t>();
  if (n > r.remaining() / 24) r.fail("claims " + std::to_string(n) + " namespaces");
  for (std::uint32_t i = 0; i < n; ++i) {
    ManifestNamespace ns;
    ns.name = r.get_string(kMaxText);
    ns.config_json = r.get_string(kMaxText);
    ns.state_lsn = r.get<std::uint64_t>();
    ns.state_file = r.get_string(4096);
    if (ns.state_file.find('/') != std::string::npos || ns.state_file.starts_with(".")) r.fail("names a state file outside its folder");
    m.namespaces.push_back(std::move(ns));
  }
  const auto k = r.get<std::uint32_t>();
  if (k > r.remaining() / 28) r.fail("claims " + std::to_string(k) + " idempotency keys");
  for (std::uint32_t i = 0; i < k; ++i) {
    ManifestKey key;
    key.key = r.get_string(4096);
    key.body_hash = r.get<std::uint64_t>();
    key.lsn = r.get<std::uint64_t>();
    key.received_at = r.get<double>();
    m.keys.push_back(std::move(key));
  }
  if (opened.version >= 2) {
    const auto p = r.get<std::uint32_t>();
    if (p > r.remaining() / 16) r.fail("claims " + std::to_string(p) + " parts");
    for (std::uint32_t i = 0; i < p; ++i) {
      ManifestPart part;
      part.name = r.get_string(4096);
      part.state_lsn = r.get<std::uint64_t>();
      part.state_file = r.get_string(4096);
      if (part.state_file.find('/') != std::string::npos || part.state_file.starts_with(".")) r.fail("names a state file outside its folder");
      m.parts.push_back(std::move(part));
    }
  }
  for (auto& ns : m.namespaces) ns.config_lsn = opened.version >= 3 ? r.get<std::uint64_t>() : ns.state_lsn;
  r.expect_end();
  return m;
}

CheckpointStore::CheckpointStore(std::filesystem::path dir)
    : dir_(std::move(dir)),
      checkpoints_(dir_ / "checkpoints"),
      states_(checkpoints_ / "state"),
      legacy_(dir_ / "namespaces"),
      lock_(dir_, "data directory") {
  make_dir(states_);
  // Probe that the directory takes writes now, so a read-only data
  // directory is a startup error naming the path, not a first-request one.
  write_file_atomically(dir_ / ".write-probe", "ok");
  std::filesystem::remove(dir_ / ".write-probe");
}

CheckpointStore::~CheckpointStore() = default;

std::vector<std::filesystem::path> CheckpointStore::remove_temporaries() {
  std::vector<std::filesystem::path> removed;
  for (const auto& folder : {dir_, checkpoints_, states_, legacy_, dir_ / "wal"}) {
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec)) continue;
    for (const auto& e : std::filesystem::directory_iterator(folder)) {
      if (e.path().extension() == ".tmp" && e.is_regular_file()) {
        std::filesystem::remove(e.path(), ec);
        if (!ec) removed.push_back(e.path());
      }
    }
  }
  return removed;
}

std::vector<std::filesystem::path> CheckpointStore::manifests() const {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(checkpoints_)) {
    if (e.is_regular_file() && is_manifest_name(e.path().filename().string())) out.push_back(e.path());
  }
  std::sort(out.rbegin(), out.rend());  // zero-padded: name order is LSN order
  return out;
}

Manifest CheckpointStore::read_manifest(const std::filesystem::path& path) const {
  Manifest m = Manifest::parse(read_whole_file(path));
  // Manifests are chosen, newest first, by the start their name says: one
  // holding another start (a file copied or renamed by hand) would be
  // chosen again at every start however old it is.
  if (path.filename() != manifest_name(m.start_lsn)) {
    throw FormatError("its name says start " + path.filename().string().substr(0, 20) + " but it holds start " + std::to_string(m.start_lsn));
  }
  return m;
}

std::string CheckpointStore::read_state(const std::string& state_file) const { return read_whole_file(states_ / state_file); }

std::string CheckpointStore::write_state(const std::string& name, std::uint64_t lsn, std::string_view blob) {
  const std::string file = encode_file_name(name) + "." + std::to_string(lsn) + ".state";
  const auto path = states_ / file;
  if (!std::filesystem::exists(path)) write_file_atomically(path, blob);
  return file;
}

std::string CheckpointStore::write_part_state(const std::string& part, std::uint64_t lsn, std::string_view blob) {
  if (part.find('.') == std::string::npos || part.find('/') != std::string::npos || part.starts_with(".")) {
    throw std::logic_error("a part's name holds a '.' and no '/': " + part);
  }
  const std::string file = part + "." + std::to_string(lsn) + ".state";
  const auto path = states_ / file;
  if (!std::filesystem::exists(path)) write_file_atomically(path, blob);
  return file;
}

std::uint64_t CheckpointStore::commit(const Manifest& m) {
  write_file_atomically(checkpoints_ / manifest_name(m.start_lsn), m.serialize());
  auto all = manifests();
  std::set<std::string> keep_states;
  std::uint64_t older_start = m.start_lsn;
  std::size_t usable = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i >= 2) {
      std::error_code ec;
      std::filesystem::remove(all[i], ec);
      continue;
    }
    try {
      const Manifest kept = i == 0 && all[i].filename() == manifest_name(m.start_lsn) ? m : read_manifest(all[i]);
      for (const auto& n : kept.namespaces) keep_states.insert(n.state_file);
      for (const auto& p : kept.parts) keep_states.insert(p.state_file);
      older_start = std::min(older_start, kept.start_lsn);
      ++usable;
    } catch (const std::exception&) {
      // An unreadable older manifest protects nothing (see below).
    }
  }
  for (const auto& e : std::filesystem::directory_iterator(states_)) {
    if (e.path().extension() == ".state" && !keep_states.contains(e.path().filename().string())) {
      std::error_code ec;
      std::filesystem::remove(e.path(), ec);
    }
  }
  // Until two usable manifests exist, the whole log stays: a damaged sole
  // manifest then falls back to replaying the log from its start.
  return usable >= 2 ? older_start : 0;
}

namespace {

// The state files a manifest names, in its order.
std::vector<std::string> named_states(const Manifest& m) {
  std::vector<std::string> out;
  for (const auto& n : m.namespaces) out.push_back(n.state_file);
  for (const auto& p : m.parts) out.push_back(p.state_file);
  return out;
}

bool plain_file_name(std::string_view n) {
  return !n.empty() && n.size() <= 255 && n != "." && n != ".." && n.find('/') == std::string_view::npos &&
         n.find('\0') == std::string_view::npos && !n.ends_with(".tmp");
}

}  // namespace

std::optional<CheckpointCopy> read_newest_checkpoint(const std::filesystem::path& dir) {
  const auto folder = dir / "checkpoints";
  // A writer may commit checkpoints during the read (a cluster replica's
  // uploader reads while its follower writes): the store keeps the two
  // newest, so one commit leaves the one being read whole, and when two
  // outran it (a file listed had gone) the folder is listed again. A
  // damaged file is not read again: the one before it is tried, as
  // recovery would.
  constexpr int kListings = 3;
  for (int listing = 0; listing < kListings; ++listing) {
    std::vector<std::filesystem::path> all;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(folder, ec)) {
      if (e.is_regular_file() && is_manifest_name(e.path().filename().string())) all.push_back(e.path());
    }
    std::sort(all.rbegin(), all.rend());
    bool vanished = false;
    for (const auto& path : all) {
      try {
        CheckpointCopy copy;
        copy.manifest = read_whole_file(path);
        const Manifest m = Manifest::parse(copy.manifest);
        if (path.filename() != manifest_name(m.start_lsn)) continue;
        copy.start_lsn = m.start_lsn;
        std::set<std::string> seen;
        for (const auto& file : named_states(m)) {
          if (seen.insert(file).second) copy.states.emplace_back(file, read_whole_file(folder / "state" / file));
        }
        return copy;
      } catch (const IoError& e) {
        vanished = vanished || e.error_number() == ENOENT;  // (removed by a commit since the listing)
      } catch (const std::exception&) {
        // Damaged: the one before it.
      }
    }
    if (!vanished) break;
  }
  return std::nullopt;
}

void check_checkpoint(const CheckpointCopy& copy) {
  const Manifest m = Manifest::parse(copy.manifest);
  if (m.start_lsn != copy.start_lsn) throw FormatError("checkpoint copy: its manifest holds start " + std::to_string(m.start_lsn));
  const auto named = named_states(m);
  const std::set<std::string> wanted(named.begin(), named.end());
  std::set<std::string> have;
  for (const auto& [file, _] : copy.states) {
    if (!plain_file_name(file)) throw FormatError("checkpoint copy: a state file name outside its folder");
    if (!wanted.contains(file)) throw FormatError("checkpoint copy: it holds " + file + ", which its manifest does not name");
    if (!have.insert(file).second) throw FormatError("checkpoint copy: it holds " + file + " twice");
  }
  for (const auto& file : wanted) {
    if (!have.contains(file)) throw FormatError("checkpoint copy: its manifest names " + file + ", which it lacks");
  }
  for (const auto& [file, bytes] : copy.states) {
    try {
      check_sealed(bytes);
    } catch (const FormatError& e) {
      throw FormatError("checkpoint copy: " + file + ": " + e.what());
    }
  }
}

std::vector<std::filesystem::path> write_checkpoint(const std::filesystem::path& dir, const CheckpointCopy& copy) {
  check_checkpoint(copy);
  const Manifest m = Manifest::parse(copy.manifest);
  const auto states = dir / "checkpoints" / "state";
  make_dir(states);
  std::vector<std::filesystem::path> written;
  for (const auto& [file, bytes] : copy.states) {
    const auto path = states / file;
    if (std::filesystem::exists(path)) continue;  // (immutable once named: the same bytes)
    write_file_atomically(path, bytes);
    written.push_back(path);
  }
  const auto manifest = dir / "checkpoints" / manifest_name(m.start_lsn);
  write_file_atomically(manifest, copy.manifest);
  written.push_back(manifest);
  return written;
}

std::vector<LegacyNamespace> CheckpointStore::legacy_namespaces() const {
  std::vector<LegacyNamespace> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(legacy_, ec)) return out;
  for (const auto& entry : std::filesystem::directory_iterator(legacy_)) {
    const auto& p = entry.path();
    if (p.extension() != ".json") continue;
    LegacyNamespace s;
    s.name = p.stem().string();
    s.config_path = p;
    s.config_json = read_whole_file(p);
    s.state_path = legacy_ / (s.name + ".state");
    if (std::filesystem::exists(s.state_path)) s.state = read_whole_file(s.state_path);
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

void CheckpointStore::remove_legacy() {
  std::error_code ec;
  std::filesystem::remove_all(legacy_, ec);
  if (ec) throw IoError("cannot remove the migrated folder", legacy_, ec.value());
  fsync_directory(dir_);
}

std::vector<std::filesystem::path> CheckpointStore::foreign_files() const {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(checkpoints_, ec)) {
    const auto n = e.path().filename().string();
    if (e.path() != states_ && !is_manifest_name(n)) out.push_back(e.path());
  }
  for (const auto& e : std::filesystem::directory_iterator(states_, ec)) {
    if (e.path().extension() != ".state") out.push_back(e.path());
  }
  return out;
}

}  // namespace ebb::storage
