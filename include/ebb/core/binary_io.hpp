#pragma once
// The one serialisation path for every structure that must survive
// (checkpoints, history, merges across machines all use it).
//
// A blob is an envelope:
//   magic "EBB\0" | u16 kind | u16 version | u64 payload length | payload | u64 XXH3 of all before
// Little-endian fixed-width fields. A reader checks magic, kind, version,
// length and checksum before it parses a byte of payload, so a corrupt,
// truncated or foreign blob is rejected with a FormatError that says which.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ebb {

// Kinds of blob. Values are part of the on-disk format: never renumber.
enum class BlobKind : std::uint16_t {
  count_min = 1,
  forward_decay = 2,
  space_saving = 3,
  candidate_heap = 4,
  exact_decayed_counter = 5,
  decayed_view = 6,
  namespace_state = 7,
  checkpoint_manifest = 8,
  time_rings = 9,
  window_view = 10,
  hot_key_detector = 11,
  distribution_store = 12,
  exact_table = 13,
  exact_view = 14,
  augmented_heap = 15,
  shared_checkpoint = 16,       // a cluster partition's checkpoint, in JetStream
  shared_checkpoint_head = 17,  // which checkpoint, and where its chunks are
  catalog_snapshot = 18,        // a cluster node's catalog: namespaces, clocks, idempotency keys
  accuracy_audit = 19,          // a namespace's audit: the items it counts exactly
};

const char* blob_kind_name(BlobKind kind) noexcept;

class BinaryWriter {
 public:
  template <typename T>
    requires std::is_arithmetic_v<T>
  void put(T value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));  // the project targets little-endian hosts (x86-64, arm64)
    out_.append(bytes, sizeof(T));
  }
  void put_string(std::string_view s) {
    put<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
    out_.append(s);
  }
  template <typename T>
  void put_array(const T* data, std::size_t n) {
    out_.append(reinterpret_cast<const char*>(data), n * sizeof(T));
  }
  void put_bytes(std::string_view s) { out_.append(s); }

  // A blob sealed in place: begin_blob() writes the envelope's header,
  // end_blob() its length and checksum. The same bytes as seal_blob() of
  // the payload, without copying it: a window's rings are tens of MiB, and
  // a checkpoint serialises them under the namespace's lock.
  std::size_t begin_blob(BlobKind kind, std::uint16_t version);
  void end_blob(std::size_t at);
  // A length-prefixed part written in place: the same bytes as put_string()
  // of what is written between the two calls.
  std::size_t begin_string() {
    put<std::uint32_t>(0);
    return out_.size();
  }
  void end_string(std::size_t at);
  // begin_string(), what `write(*this)` writes, end_string().
  template <typename F>
  void put_part(F&& write) {
    const auto at = begin_string();
    write(*this);
    end_string(at);
  }
  void reserve(std::size_t n) { out_.reserve(n); }

  std::string& buffer() { return out_; }

 private:
  std::string out_;
};

class BinaryReader {
 public:
  explicit BinaryReader(std::string_view in, const char* what) : in_(in), what_(what) {}

  template <typename T>
    requires std::is_arithmetic_v<T>
  T get() {
    need(sizeof(T));
    T value;
    std::memcpy(&value, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string get_string(std::size_t max_len);
  template <typename T>
  void get_array(T* data, std::size_t n) {
    need(n * sizeof(T));  // n * sizeof(T) was validated by the caller against sane limits
    std::memcpy(data, in_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
  }
  std::string_view get_bytes(std::size_t n) {
    need(n);
    auto s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::size_t remaining() const { return in_.size() - pos_; }
  // Throws unless every byte was consumed: trailing garbage is corruption too.
  void expect_end() const;
  [[noreturn]] void fail(const std::string& why) const;

 private:
  void need(std::size_t n) const;
  std::string_view in_;
  std::size_t pos_ = 0;
  const char* what_;
};

// Wraps a payload in the envelope.
std::string seal_blob(BlobKind kind, std::uint16_t version, std::string_view payload);

// What `write(w)` writes into a fresh writer, as a string: the serialize()
// of a structure that writes itself in place (serialize_into()).
template <typename F>
std::string written(F&& write) {
  BinaryWriter w;
  write(w);
  return std::move(w.buffer());
}

// Validates the envelope and returns the payload and its version.
struct OpenedBlob {
  std::string_view payload;
  std::uint16_t version;
};
OpenedBlob open_blob(std::string_view blob, BlobKind expected_kind, std::uint16_t max_version);
// The envelope alone, of any kind and version: magic, length, checksum
// (a file copied from elsewhere is checked before it is written).
void check_sealed(std::string_view blob);

}  // namespace ebb
