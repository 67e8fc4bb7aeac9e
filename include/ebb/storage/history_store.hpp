#pragma once
// Persisted history: every snapshot interval the service writes each view's
// top K here, so "the list as it was at 3 PM yesterday" and an item's
// series over time outlive the in-memory rings. A real SQLite database
// (<data dir>/history.sqlite3) a user can open with the sqlite3 shell;
// docs/formats.md has the schema.
//
// Retention thins old points instead of keeping them all: every point for
// `full` (a day), the first of each minute until `minutes` (7 days), the
// first of each hour until `hours` (90 days), nothing older.
//
// Thread-safe: one connection behind a mutex (writes come from one thread
// a few times a minute; reads are a request's worth).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;

namespace ebb::storage {

struct HistoryItem {
  std::string item;
  double estimate = 0;
  double lower = 0;
  double upper = 0;
};

// One view's top K at one time.
struct HistorySnapshot {
  std::string ns;
  std::string view;  // "all", "w:1h" (window), "h:5m" (half-life)
  double t = 0;      // the view's "now" when it was taken
  double window_start = 0;  // windows and all-time: the counted span
  double window_end = 0;
  double total = 0;
  double epsilon = 0, confidence = 0, max_error = 0;
  double guarantee_threshold = 0;
  std::uint32_t k = 0;              // the K asked (a shorter list holds every candidate)
  std::vector<HistoryItem> items;   // rank order
  // What the view said bounds every item it did not list (its answer's
  // unlisted_upper; stored as the unlisted_bound column).
  double unlisted = 0;
  // The most an item outside `items` can have counted: `unlisted`, never
  // below the view's guarantee threshold. (Rows written before the views
  // gave it hold the bound of lists ranked by upper bound then: the lowest
  // listed estimate once the list was full.)
  double unlisted_bound() const noexcept;
};

struct HistoryPoint {
  double t = 0;
  std::optional<std::uint32_t> rank;  // none: not in that snapshot's list
  double estimate = 0;                // listed only
  double lower = 0;
  double upper = 0;                   // unlisted: the snapshot's unlisted_bound()
};

struct HistoryRetention {
  double full = 86400;          // every point
  double minutes = 7 * 86400;   // the first of each minute
  double hours = 90 * 86400;    // the first of each hour; older points are deleted
};

class HistoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class HistoryStore {
 public:
  // Opens or creates the database (schema version checked). HistoryError
  // when it cannot.
  explicit HistoryStore(const std::filesystem::path& file);
  ~HistoryStore();
  HistoryStore(const HistoryStore&) = delete;
  HistoryStore& operator=(const HistoryStore&) = delete;

  // All in one transaction; a snapshot already stored (same namespace, view
  // and t) is left as it is. HistoryError on failure (nothing written).
  // Returns the snapshots written (not those already stored).
  std::size_t write(const std::vector<HistorySnapshot>& snapshots);
  // The newest snapshot of the view at or before t.
  std::optional<HistorySnapshot> at(std::string_view ns, std::string_view view, double t) const;
  // The item's points in [from, to], oldest first, at most `limit`.
  std::vector<HistoryPoint> series(std::string_view ns, std::string_view view, std::string_view item, double from, double to,
                                   std::size_t limit) const;
  // Thins and deletes old points as `retention` says, relative to `now`;
  // returns the snapshots deleted.
  std::uint64_t apply_retention(double now, const HistoryRetention& retention);
  // In transactions of a few snapshots: a large history never holds the
  // database for long.
  void drop_namespace(std::string_view ns);
  // The namespaces with snapshots (a service drops those it no longer has).
  std::vector<std::string> namespaces() const;
  std::uint64_t snapshots() const;
  std::uint64_t bytes() const;  // the database file's pages
  const std::filesystem::path& file() const noexcept { return file_; }

 private:
  void exec(const char* sql) const;

  std::filesystem::path file_;
  sqlite3* db_ = nullptr;
  mutable std::mutex mu_;
};

}  // namespace ebb::storage
