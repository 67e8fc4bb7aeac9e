#pragma once
// The bytes of one write-ahead log segment (segment_log.hpp, docs/formats.md):
//
//   header  (16 bytes): "EBBWAL01", u64 first LSN
//   record  (20 + n):   u32 n, u64 LSN, u64 XXH3-64 of the payload seeded
//                       with the LSN and n, then the n payload bytes
//
// Little-endian. SegmentLog writes with these and recovers with
// scan_segment(); fuzz/fuzz_segment.cpp feeds scan_segment() bytes.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace ebb::storage {

inline constexpr std::size_t kSegmentHeaderBytes = 16;
inline constexpr std::size_t kRecordHeaderBytes = 20;
inline constexpr std::uint32_t kMaxRecordBytes = 1u << 30;

// The checksum a record of `payload` with sequence number `lsn` carries.
std::uint64_t segment_record_checksum(std::uint64_t lsn, std::string_view payload) noexcept;

// Appends a segment header, or one record (header and payload), to `out`.
void append_segment_header(std::string& out, std::uint64_t first_lsn);
void append_segment_record(std::string& out, std::uint64_t lsn, std::string_view payload);
// Appends only the header of that record (kRecordHeaderBytes): a writer
// sends the payload from where it lies (writev) instead of copying it.
void append_segment_record_header(std::string& out, std::uint64_t lsn, std::string_view payload);

struct SegmentScan {
  std::size_t valid_bytes = 0;  // the header and the valid records before the first invalid one; 0 if the header is bad
  std::uint64_t next_lsn = 0;   // the LSN after the last valid record (first_lsn when there is none)
  std::string error;            // why the segment ends before its last byte; empty when all of it is valid
};

// Reads the segment `data` that must begin at `first_lsn`, handing each
// valid record to `on_record` in order (payload views point into `data`),
// and stops at the first invalid one: a torn or bad header, a torn record,
// a record numbered out of sequence or one that fails its checksum. Never
// throws for any bytes (only what `on_record` throws).
SegmentScan scan_segment(std::string_view data, std::uint64_t first_lsn,
                         const std::function<void(std::uint64_t lsn, std::string_view payload)>& on_record);

// The same from byte `from` (where a record begins), expecting `next_lsn`
// first: recovery goes on there after damage the checkpoint holds.
SegmentScan scan_segment_records(std::string_view data, std::size_t from, std::uint64_t next_lsn,
                                 const std::function<void(std::uint64_t lsn, std::string_view payload)>& on_record);

// The offset of the first whole record with a valid checksum at or after
// `from` and numbered `min_lsn` or later (within 2^32), its LSN in `lsn`;
// npos when there is none. A torn write leaves no valid record after it,
// so one found after damage means damage in the middle of the log.
std::size_t find_segment_record(std::string_view data, std::size_t from, std::uint64_t min_lsn, std::uint64_t& lsn) noexcept;

}  // namespace ebb::storage
