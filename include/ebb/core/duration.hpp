#pragma once
// Durations as users write them: "90s", "5m", "1h", "1d", "7d", "250ms",
// "1.5h", "2w". A bare number is seconds. Parsing never throws on user input
// without saying what was wrong.
#include <string>
#include <string_view>

namespace ebb {

// Seconds, rounded to whole milliseconds (at least 1 ms, at most 1e15 ms,
// about 31,700 years), so that format_duration(parse_duration(t)) parses
// back to the same double.
// Throws InvalidArgument naming the text.
double parse_duration(std::string_view text);

// The shortest exact spelling of a duration: 300 -> "5m", 90 -> "90s".
std::string format_duration(double seconds);

}  // namespace ebb
