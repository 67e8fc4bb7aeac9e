// Write-ahead log segments (storage/segment_format.hpp scan_segment): the
// bytes recovery reads back from disk, torn or corrupt. Input: one option
// byte (bit 0: give every whole record its right checksum first, so the
// fuzzer gets past them; bit 1: the segment must begin at the LSN its own
// header names, else at 1), then the segment file.
// Checks: scanning never throws; the valid part is 0 (bad header) or the
// header plus whole records, all of the file when there is no error, and
// anything shorter comes with the reason; records come in LSN order from
// the first; and the valid part is byte for byte what writing those
// records again produces.
#include <cstring>
#include <vector>

#include "ebb/storage/segment_format.hpp"
#include "fuzz_support.hpp"

using namespace ebb;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const std::uint8_t options = in.byte();
  std::string segment(in.rest());
  if (options & 1) {
    for (std::size_t pos = storage::kSegmentHeaderBytes; pos < segment.size() && segment.size() - pos >= storage::kRecordHeaderBytes;) {
      std::uint32_t n;
      std::uint64_t lsn;
      std::memcpy(&n, segment.data() + pos, 4);
      std::memcpy(&lsn, segment.data() + pos + 4, 8);
      if (n > segment.size() - pos - storage::kRecordHeaderBytes) break;
      const std::uint64_t sum = storage::segment_record_checksum(lsn, std::string_view(segment).substr(pos + storage::kRecordHeaderBytes, n));
      std::memcpy(segment.data() + pos + 12, &sum, 8);
      pos += storage::kRecordHeaderBytes + n;
    }
  }
  std::uint64_t first = 1;
  if ((options & 2) && segment.size() >= 16) std::memcpy(&first, segment.data() + 8, 8);

  std::vector<std::pair<std::uint64_t, std::string_view>> records;
  const auto scan = storage::scan_segment(segment, first, [&](std::uint64_t lsn, std::string_view payload) { records.emplace_back(lsn, payload); });

  FUZZ_CHECK(scan.valid_bytes <= segment.size());
  if (scan.error.empty()) FUZZ_CHECK(scan.valid_bytes == segment.size());
  if (scan.valid_bytes < segment.size()) FUZZ_CHECK(!scan.error.empty());
  if (segment.size() < storage::kSegmentHeaderBytes) FUZZ_CHECK(!scan.error.empty());  // an empty file has no header either
  FUZZ_CHECK(scan.valid_bytes == 0 || scan.valid_bytes >= storage::kSegmentHeaderBytes);
  FUZZ_CHECK(scan.next_lsn == first + records.size());
  std::string again;
  if (scan.valid_bytes > 0) storage::append_segment_header(again, first);
  for (std::size_t i = 0; i < records.size(); ++i) {
    FUZZ_CHECK(records[i].first == first + i);
    storage::append_segment_record(again, records[i].first, records[i].second);
  }
  FUZZ_CHECK(again == std::string_view(segment).substr(0, scan.valid_bytes));
  return 0;
}
