#include "top_output.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "ebb/core/byte_size.hpp"
#include "ebb/service/answer_json.hpp"

namespace ebb::cli {
namespace {

// Counts print as integers when they are; decayed counts keep two decimals.
std::string count(double v) {
  char buf[48];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  }
  return buf;
}

std::string general(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

std::string printable(std::string_view key, std::size_t max) {
  std::string out;
  for (unsigned char c : key) out += c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);
  if (out.size() > max) out = out.substr(0, max - 3) + "...";
  return out;
}

std::string format_utc(double t) {
  const std::time_t secs = static_cast<std::time_t>(std::floor(t));
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void print_table(std::FILE* out, const engine::TopKAnswer& a, bool event_time) {
  std::fprintf(out, "%s  total %s  as of %s%s\n", a.view.label().c_str(), count(a.total).c_str(), format_utc(a.as_of).c_str(),
               event_time ? " (event time)" : "");
  if (a.view.kind == engine::ViewSpec::Kind::window) {
    // The buckets' true boundaries, not the asked ones.
    std::fprintf(out, "counted from %s to %s (boundaries exact to %s s)\n", format_utc(a.window_start).c_str(), format_utc(a.window_end).c_str(),
                 general(a.granularity).c_str());
  }
  if (!a.source.empty()) std::fprintf(out, "as it was at %s, from %s\n", format_utc(a.as_of).c_str(), a.source.c_str());
  std::size_t width = 4;
  for (const auto& item : a.items) width = std::max(width, std::min<std::size_t>(printable(item.key, 60).size(), 60));
  std::fprintf(out, "%5s  %-*s  %14s  %14s  %14s\n", "rank", static_cast<int>(width), "item", "estimate", "lower", "upper");
  for (std::size_t i = 0; i < a.items.size(); ++i) {
    const auto& item = a.items[i];
    std::fprintf(out, "%5zu  %-*s  %14s  %14s  %14s\n", i + 1, static_cast<int>(width), printable(item.key, 60).c_str(),
                 count(item.estimate).c_str(), count(item.lower).c_str(), count(item.upper).c_str());
  }
  if (a.items.empty()) std::fprintf(out, "%5s  (no events)\n", "");
  const auto& acc = a.accuracy;
  if (acc.tail_uncertain) std::fprintf(out, "note: the bounds overlap at the list's tail: its last items may not be the true top %zu\n", a.items.size());
  if (acc.type == "exact") {
    std::fprintf(out, "accuracy: exact counts, %llu items held", static_cast<unsigned long long>(acc.items));
    if (acc.evicted_items > 0) {
      std::fprintf(out, "; %llu evicted past max_items took %s (upper bounds include it)", static_cast<unsigned long long>(acc.evicted_items),
                   count(acc.max_error).c_str());
    }
    std::fprintf(out, "\n");
    return;
  }
  std::fprintf(out, "accuracy: epsilon %s, estimates at most %s over the true count with %.4g%% confidence; every item above %s is tracked (%u candidates)\n",
               general(acc.epsilon).c_str(), count(acc.max_error).c_str(), acc.confidence * 100, count(acc.guarantee_threshold).c_str(),
               acc.candidates);
  if (acc.memory_budget != 0) {
    std::fprintf(out, "memory: %s held of the %s budget (%u candidates fit)\n", format_byte_size(acc.memory_bytes).c_str(),
                 format_byte_size(acc.memory_budget).c_str(), acc.candidates);
  }
  if (acc.undersized) {
    std::fprintf(out, "warning: k exceeds the %u candidates kept: raise %s\n", acc.candidates, acc.memory_budget != 0 ? "--memory" : "--candidates");
  }
}

void print_json(std::FILE* out, const std::string& ns, const engine::TopKAnswer& answer) {
  io::JsonWriter w;
  service::write_top_k(w, ns, answer);
  std::fprintf(out, "%s\n", w.str().c_str());
}

}  // namespace ebb::cli
