#include "ebb/core/binary_io.hpp"

#include <xxhash.h>

#include "ebb/core/error.hpp"

namespace ebb {
namespace {

constexpr char kMagic[4] = {'E', 'B', 'B', '\0'};
constexpr std::size_t kHeaderBytes = 4 + 2 + 2 + 8;
constexpr std::size_t kTrailerBytes = 8;

std::uint64_t checksum(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

}  // namespace

const char* blob_kind_name(BlobKind kind) noexcept {
  switch (kind) {
    case BlobKind::count_min: return "count-min sketch";
    case BlobKind::forward_decay: return "forward-decay clock";
    case BlobKind::space_saving: return "space-saving summary";
    case BlobKind::candidate_heap: return "candidate heap";
    case BlobKind::exact_decayed_counter: return "exact decayed counter";
    case BlobKind::decayed_view: return "decayed view";
    case BlobKind::namespace_state: return "namespace state";
    case BlobKind::checkpoint_manifest: return "checkpoint manifest";
    case BlobKind::time_rings: return "time rings";
    case BlobKind::window_view: return "window view";
    case BlobKind::hot_key_detector: return "hot-key detector";
    case BlobKind::distribution_store: return "distribution store";
    case BlobKind::exact_table: return "exact table";
    case BlobKind::exact_view: return "exact view";
    case BlobKind::augmented_heap: return "augmented heap";
    case BlobKind::shared_checkpoint: return "shared checkpoint";
    case BlobKind::shared_checkpoint_head: return "shared checkpoint head";
    case BlobKind::catalog_snapshot: return "catalog snapshot";
    case BlobKind::accuracy_audit: return "accuracy audit";
  }
  return "unknown";
}

std::string BinaryReader::get_string(std::size_t max_len) {
  const auto n = get<std::uint32_t>();
  if (n > max_len) fail("string of " + std::to_string(n) + " bytes exceeds limit " + std::to_string(max_len));
  return std::string(get_bytes(n));
}

void BinaryReader::need(std::size_t n) const {
  if (n > in_.size() - pos_) fail("truncated (needs " + std::to_string(n) + " more bytes at offset " + std::to_string(pos_) + ")");
}

void BinaryReader::expect_end() const {
  if (pos_ != in_.size()) fail(std::to_string(in_.size() - pos_) + " trailing bytes");
}

void BinaryReader::fail(const std::string& why) const {
  throw FormatError(std::string("corrupt ") + what_ + ": " + why);
}

std::size_t BinaryWriter::begin_blob(BlobKind kind, std::uint16_t version) {
  const std::size_t at = out_.size();
  put_bytes(std::string_view(kMagic, 4));
  put<std::uint16_t>(static_cast<std::uint16_t>(kind));
  put<std::uint16_t>(version);
  put<std::uint64_t>(0);  // the payload's length, at end_blob()
  return at;
}

void BinaryWriter::end_blob(std::size_t at) {
  const std::uint64_t length = out_.size() - at - kHeaderBytes;
  std::memcpy(out_.data() + at + kHeaderBytes - sizeof(length), &length, sizeof(length));
  put<std::uint64_t>(checksum(std::string_view(out_).substr(at)));
}

void BinaryWriter::end_string(std::size_t at) {
  const std::size_t n = out_.size() - at;
  if (n > UINT32_MAX) throw FormatError("a serialised part of " + std::to_string(n) + " bytes exceeds the format's 4 GiB limit");
  const auto length = static_cast<std::uint32_t>(n);
  std::memcpy(out_.data() + at - sizeof(length), &length, sizeof(length));
}

std::string seal_blob(BlobKind kind, std::uint16_t version, std::string_view payload) {
  BinaryWriter w;
  const auto at = w.begin_blob(kind, version);
  w.put_bytes(payload);
  w.end_blob(at);
  return std::move(w.buffer());
}

void check_sealed(std::string_view blob) {
  if (blob.size() < kHeaderBytes + kTrailerBytes || std::memcmp(blob.data(), kMagic, 4) != 0) throw FormatError("not an ebb blob");
  BinaryReader header(blob.substr(4, kHeaderBytes - 4), "blob header");
  (void)header.get<std::uint16_t>();
  (void)header.get<std::uint16_t>();
  if (header.get<std::uint64_t>() != blob.size() - kHeaderBytes - kTrailerBytes) throw FormatError("a blob is truncated or padded");
  std::uint64_t stored;
  std::memcpy(&stored, blob.data() + blob.size() - kTrailerBytes, 8);
  if (stored != checksum(blob.substr(0, blob.size() - kTrailerBytes))) throw FormatError("a blob failed its checksum");
}

OpenedBlob open_blob(std::string_view blob, BlobKind expected_kind, std::uint16_t max_version) {
  const std::string what = blob_kind_name(expected_kind);
  if (blob.size() < kHeaderBytes + kTrailerBytes) {
    throw FormatError("not an ebb " + what + " blob: " + std::to_string(blob.size()) + " bytes is too short");
  }
  if (std::memcmp(blob.data(), kMagic, 4) != 0) throw FormatError("not an ebb blob (bad magic) where a " + what + " was expected");
  BinaryReader header(blob.substr(4, kHeaderBytes - 4), "blob header");
  const auto kind = header.get<std::uint16_t>();
  const auto version = header.get<std::uint16_t>();
  const auto length = header.get<std::uint64_t>();
  if (kind != static_cast<std::uint16_t>(expected_kind)) {
    throw FormatError("blob holds a " + std::string(blob_kind_name(static_cast<BlobKind>(kind))) + " (kind " +
                      std::to_string(kind) + "), expected a " + what);
  }
  if (version == 0 || version > max_version) {
    throw FormatError(what + " blob has format version " + std::to_string(version) + "; this build reads up to " +
                      std::to_string(max_version));
  }
  if (length != blob.size() - kHeaderBytes - kTrailerBytes) {
    throw FormatError(what + " blob is truncated or padded: header says " + std::to_string(length) +
                      " payload bytes, found " + std::to_string(blob.size() - kHeaderBytes - kTrailerBytes));
  }
  std::uint64_t stored;
  std::memcpy(&stored, blob.data() + blob.size() - kTrailerBytes, 8);
  if (stored != checksum(blob.substr(0, blob.size() - kTrailerBytes))) {
    throw FormatError(what + " blob failed its checksum (corrupted in storage or transit)");
  }
  return {blob.substr(kHeaderBytes, length), version};
}

}  // namespace ebb
