#pragma once
// Percent-encoding (RFC 3986 style, upper-case hex): ASCII letters and
// digits and the bytes in `also_safe` are kept, every other byte is %XX.
// URLs keep "-_.~"; file names keep only "-_" so that no name can be "." or
// "..". Where '%' is not allowed (NATS key-value keys), another escape byte
// writes =XX; it must not be in `also_safe`, so it is encoded itself and
// the encoding stays one-to-one.
#include <string>
#include <string_view>

namespace ebb {

std::string percent_encode(std::string_view text, std::string_view also_safe, char escape = '%');

}  // namespace ebb
