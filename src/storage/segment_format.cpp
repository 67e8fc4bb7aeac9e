#include "ebb/storage/segment_format.hpp"

#include <xxhash.h>

#include <cstring>

namespace ebb::storage {
namespace {

constexpr char kMagic[8] = {'E', 'B', 'B', 'W', 'A', 'L', '0', '1'};

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void store(std::string& out, T v) {
  char b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.append(b, sizeof v);
}

}  // namespace

std::uint64_t segment_record_checksum(std::uint64_t lsn, std::string_view payload) noexcept {
  return XXH3_64bits_withSeed(payload.data(), payload.size(), lsn ^ (static_cast<std::uint64_t>(payload.size()) << 40));
}

void append_segment_header(std::string& out, std::uint64_t first_lsn) {
  out.append(kMagic, 8);
  store<std::uint64_t>(out, first_lsn);
}

void append_segment_record_header(std::string& out, std::uint64_t lsn, std::string_view payload) {
  store<std::uint32_t>(out, static_cast<std::uint32_t>(payload.size()));
  store<std::uint64_t>(out, lsn);
  store<std::uint64_t>(out, segment_record_checksum(lsn, payload));
}

void append_segment_record(std::string& out, std::uint64_t lsn, std::string_view payload) {
  append_segment_record_header(out, lsn, payload);
  out.append(payload);
}

SegmentScan scan_segment(std::string_view data, std::uint64_t first_lsn,
                         const std::function<void(std::uint64_t lsn, std::string_view payload)>& on_record) {
  if (data.size() < kSegmentHeaderBytes || std::memcmp(data.data(), kMagic, 8) != 0 || load<std::uint64_t>(data.data() + 8) != first_lsn) {
    SegmentScan scan;
    scan.next_lsn = first_lsn;
    scan.error = data.size() < kSegmentHeaderBytes ? "torn segment header" : "bad segment header";
    return scan;
  }
  return scan_segment_records(data, kSegmentHeaderBytes, first_lsn, on_record);
}

SegmentScan scan_segment_records(std::string_view data, std::size_t from, std::uint64_t next_lsn,
                                 const std::function<void(std::uint64_t lsn, std::string_view payload)>& on_record) {
  SegmentScan scan;
  scan.next_lsn = next_lsn;
  std::size_t pos = from;
  while (pos < data.size()) {
    if (data.size() - pos < kRecordHeaderBytes) {
      scan.error = "torn record header";
      break;
    }
    const auto n = load<std::uint32_t>(data.data() + pos);
    const auto lsn = load<std::uint64_t>(data.data() + pos + 4);
    const auto sum = load<std::uint64_t>(data.data() + pos + 12);
    if (n > kMaxRecordBytes || data.size() - pos - kRecordHeaderBytes < n) {
      scan.error = "torn record (length past the end of the segment)";
      break;
    }
    if (lsn != scan.next_lsn) {
      scan.error = "record number " + std::to_string(lsn) + " where " + std::to_string(scan.next_lsn) + " was expected";
      break;
    }
    const std::string_view payload(data.data() + pos + kRecordHeaderBytes, n);
    if (segment_record_checksum(lsn, payload) != sum) {
      scan.error = "checksum mismatch in record " + std::to_string(lsn);
      break;
    }
    on_record(lsn, payload);
    ++scan.next_lsn;
    pos += kRecordHeaderBytes + n;
  }
  scan.valid_bytes = pos;
  return scan;
}

std::size_t find_segment_record(std::string_view data, std::size_t from, std::uint64_t min_lsn, std::uint64_t& lsn) noexcept {
  for (std::size_t q = from; q + kRecordHeaderBytes <= data.size(); ++q) {
    const auto n = load<std::uint32_t>(data.data() + q);
    if (n > kMaxRecordBytes || data.size() - q - kRecordHeaderBytes < n) continue;
    const auto candidate = load<std::uint64_t>(data.data() + q + 4);
    if (candidate < min_lsn || candidate - min_lsn > (1ull << 32)) continue;
    if (segment_record_checksum(candidate, data.substr(q + kRecordHeaderBytes, n)) != load<std::uint64_t>(data.data() + q + 12)) continue;
    lsn = candidate;
    return q;
  }
  return std::string_view::npos;
}

}  // namespace ebb::storage
