#pragma once
// The reference for ebb's own date parsing in tests and fuzz targets: the C
// library's timegm() of a broken-down UTC time, in Unix seconds.
#include <ctime>

namespace ebb::testing {

inline double utc_seconds(int y, int mo, int d, int h, int mi, int sec) {
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  return static_cast<double>(timegm(&tm));
}

}  // namespace ebb::testing
