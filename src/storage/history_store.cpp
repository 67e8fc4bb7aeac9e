#include "ebb/storage/history_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <optional>
#include <vector>

namespace ebb::storage {
namespace {

constexpr int kSchemaVersion = 1;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots(
  id INTEGER PRIMARY KEY,
  namespace TEXT NOT NULL,
  view TEXT NOT NULL,
  t REAL NOT NULL,
  window_start REAL NOT NULL,
  window_end REAL NOT NULL,
  total REAL NOT NULL,
  epsilon REAL NOT NULL,
  confidence REAL NOT NULL,
  max_error REAL NOT NULL,
  guarantee_threshold REAL NOT NULL,
  k INTEGER NOT NULL,
  unlisted_bound REAL NOT NULL,
  UNIQUE(namespace, view, t));
CREATE TABLE IF NOT EXISTS items(
  snapshot INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  item TEXT NOT NULL,
  estimate REAL NOT NULL,
  lower REAL NOT NULL,
  upper REAL NOT NULL,
  PRIMARY KEY(snapshot, rank)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS items_by_item ON items(item, snapshot);
)sql";

// A prepared statement, finalized on every path.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) fail("prepare");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, std::string_view text) {
    check(sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT), "bind");
    return *this;
  }
  Statement& bind(int i, double v) {
    check(sqlite3_bind_double(stmt_, i, v), "bind");
    return *this;
  }
  Statement& bind_int(int i, std::int64_t v) {
    check(sqlite3_bind_int64(stmt_, i, v), "bind");
    return *this;
  }
  // True while there is a row.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) fail("step");
    return false;
  }
  void run() {
    while (step()) {
    }
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
  }

 private:
  void check(int rc, const char* what) {
    if (rc != SQLITE_OK) fail(what);
  }
  [[noreturn]] void fail(const char* what) const { throw HistoryError(std::string("history: ") + what + ": " + sqlite3_errmsg(db_)); }

  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

HistorySnapshot read_snapshot(sqlite3* db, Statement& s) {
  HistorySnapshot h;
  const std::int64_t id = s.integer(0);
  h.ns = s.text(1);
  h.view = s.text(2);
  h.t = s.real(3);
  h.window_start = s.real(4);
  h.window_end = s.real(5);
  h.total = s.real(6);
  h.epsilon = s.real(7);
  h.confidence = s.real(8);
  h.max_error = s.real(9);
  h.guarantee_threshold = s.real(10);
  h.k = static_cast<std::uint32_t>(s.integer(11));
  h.unlisted = s.real(12);
  Statement items(db, "SELECT item, estimate, lower, upper FROM items WHERE snapshot = ? ORDER BY rank");
  items.bind_int(1, id);
  while (items.step()) h.items.push_back({items.text(0), items.real(1), items.real(2), items.real(3)});
  return h;
}

}  // namespace

double HistorySnapshot::unlisted_bound() const noexcept { return std::max(unlisted, guarantee_threshold); }

HistoryStore::HistoryStore(const std::filesystem::path& file) : file_(file) {
  if (sqlite3_open_v2(file.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw HistoryError("history: cannot open " + file.string() + ": " + why);
  }
  try {
    sqlite3_busy_timeout(db_, 5000);  // a user's sqlite3 shell may hold a read lock a moment
    // WAL: readers (a user's shell) do not block the writer; NORMAL: a
    // committed snapshot survives a process crash (an OS crash may lose the
    // last few, which are a history's newest points, not acknowledged data).
    // The version first, before anything writes (journal_mode=WAL rewrites
    // the header): a file another build wrote, or a database that is not
    // ours, is refused untouched.
    std::optional<std::string> version;
    {
      Statement has_meta(db_, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
      if (has_meta.step()) {
        Statement v(db_, "SELECT value FROM meta WHERE key = 'schema_version'");
        if (v.step()) version = v.text(0);
      } else {
        Statement tables(db_, "SELECT COUNT(*) FROM sqlite_master");
        if (tables.step() && tables.integer(0) > 0) throw HistoryError("history: " + file.string() + " is a database of something else (no schema version)");
      }
    }
    if (version && *version != std::to_string(kSchemaVersion)) {
      throw HistoryError("history: " + file.string() + " has schema version " + *version + ", this build reads " + std::to_string(kSchemaVersion));
    }
    exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;");
    exec(kSchema);
    if (!version) exec(("INSERT INTO meta(key, value) VALUES('schema_version', '" + std::to_string(kSchemaVersion) + "')").c_str());
  } catch (const HistoryError& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    // Name the file: "file is not a database" alone does not say which.
    const std::string what = e.what();
    if (what.find(file.string()) != std::string::npos) throw;
    throw HistoryError("history: " + file.string() + ": " + what.substr(what.starts_with("history: ") ? 9 : 0));
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

HistoryStore::~HistoryStore() { sqlite3_close(db_); }

void HistoryStore::exec(const char* sql) const {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string why = error ? error : sqlite3_errmsg(db_);
    sqlite3_free(error);
    throw HistoryError("history: " + why);
  }
}

std::size_t HistoryStore::write(const std::vector<HistorySnapshot>& snapshots) {
  std::lock_guard lock(mu_);
  exec("BEGIN IMMEDIATE");
  std::size_t written = 0;
  try {
    Statement snap(db_,
                   "INSERT OR IGNORE INTO snapshots(namespace, view, t, window_start, window_end, total, epsilon, confidence, max_error, "
                   "guarantee_threshold, k, unlisted_bound) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    Statement item(db_, "INSERT INTO items(snapshot, rank, item, estimate, lower, upper) VALUES(?, ?, ?, ?, ?, ?)");
    for (const auto& h : snapshots) {
      snap.bind(1, h.ns).bind(2, h.view).bind(3, h.t).bind(4, h.window_start).bind(5, h.window_end).bind(6, h.total);
      snap.bind(7, h.epsilon).bind(8, h.confidence).bind(9, h.max_error).bind(10, h.guarantee_threshold);
      snap.bind_int(11, h.k).bind(12, h.unlisted_bound());
      snap.run();
      if (sqlite3_changes(db_) == 0) continue;  // already stored
      ++written;
      const std::int64_t id = sqlite3_last_insert_rowid(db_);
      for (std::size_t r = 0; r < h.items.size(); ++r) {
        const auto& i = h.items[r];
        item.bind_int(1, id).bind_int(2, static_cast<std::int64_t>(r + 1)).bind(3, i.item).bind(4, i.estimate).bind(5, i.lower).bind(6, i.upper);
        item.run();
      }
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return written;
}

std::optional<HistorySnapshot> HistoryStore::at(std::string_view ns, std::string_view view, double t) const {
  std::lock_guard lock(mu_);
  Statement s(db_,
              "SELECT id, namespace, view, t, window_start, window_end, total, epsilon, confidence, max_error, guarantee_threshold, k, "
              "unlisted_bound "
              "FROM snapshots WHERE namespace = ? AND view = ? AND t <= ? ORDER BY t DESC LIMIT 1");
  s.bind(1, ns).bind(2, view).bind(3, t);
  if (!s.step()) return std::nullopt;
  return read_snapshot(db_, s);
}

std::vector<HistoryPoint> HistoryStore::series(std::string_view ns, std::string_view view, std::string_view item, double from, double to,
                                               std::size_t limit) const {
  std::lock_guard lock(mu_);
  Statement s(db_,
              "SELECT s.t, i.rank, i.estimate, i.lower, i.upper, s.unlisted_bound FROM snapshots s "
              "LEFT JOIN items i ON i.snapshot = s.id AND i.item = ? "
              "WHERE s.namespace = ? AND s.view = ? AND s.t >= ? AND s.t <= ? ORDER BY s.t LIMIT ?");
  s.bind(1, item).bind(2, ns).bind(3, view).bind(4, from).bind(5, to).bind_int(6, static_cast<std::int64_t>(limit));
  std::vector<HistoryPoint> points;
  while (s.step()) {
    HistoryPoint p;
    p.t = s.real(0);
    if (!s.null(1)) {
      p.rank = static_cast<std::uint32_t>(s.integer(1));
      p.estimate = s.real(2);
      p.lower = s.real(3);
      p.upper = s.real(4);
    } else {
      p.upper = s.real(5);
    }
    points.push_back(p);
  }
  return points;
}

std::uint64_t HistoryStore::apply_retention(double now, const HistoryRetention& r) {
  // Which snapshots go is read first (one query per rule); they are then
  // deleted a few at a time, each batch its own transaction, so a first
  // pass over a large backlog (a restart after weeks, a lowered retention)
  // never holds the database, and the queries and passes waiting on it,
  // for more than a moment.
  std::vector<std::int64_t> doomed;
  {
    std::lock_guard lock(mu_);
    Statement too_old(db_, "SELECT id FROM snapshots WHERE t < ?");
    too_old.bind(1, now - r.hours);
    while (too_old.step()) doomed.push_back(too_old.integer(0));
    // Thin a span to its first point per `seconds` (per namespace and view).
    auto thin = [&](double older_than, double newer_than, double seconds) {
      Statement s(db_,
                  "SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY namespace, view, CAST(t / ?3 AS INTEGER) ORDER BY t) AS n "
                  "FROM snapshots WHERE t < ?1 AND t >= ?2) WHERE n > 1");
      s.bind(1, older_than).bind(2, newer_than).bind(3, seconds);
      while (s.step()) doomed.push_back(s.integer(0));
    };
    thin(now - r.minutes, now - r.hours, 3600);
    thin(now - r.full, now - r.minutes, 60);
  }
  constexpr std::size_t kBatch = 64;  // snapshots (each with its k items) a transaction
  std::uint64_t deleted = 0;
  for (std::size_t at = 0; at < doomed.size(); at += kBatch) {
    std::lock_guard lock(mu_);
    exec("BEGIN IMMEDIATE");
    try {
      Statement del(db_, "DELETE FROM snapshots WHERE id = ?");
      for (std::size_t i = at; i < std::min(doomed.size(), at + kBatch); ++i) {
        del.bind_int(1, doomed[i]);
        del.run();
        deleted += static_cast<std::uint64_t>(sqlite3_changes(db_));
      }
      exec("COMMIT");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }
  return deleted;
}

void HistoryStore::drop_namespace(std::string_view ns) {
  constexpr std::int64_t kBatch = 64;
  for (;;) {
    std::lock_guard lock(mu_);
    Statement s(db_, "DELETE FROM snapshots WHERE id IN (SELECT id FROM snapshots WHERE namespace = ? LIMIT ?)");
    s.bind(1, ns).bind_int(2, kBatch);
    s.run();
    if (sqlite3_changes(db_) < kBatch) return;
  }
}

std::vector<std::string> HistoryStore::namespaces() const {
  std::lock_guard lock(mu_);
  Statement s(db_, "SELECT DISTINCT namespace FROM snapshots");
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

std::uint64_t HistoryStore::snapshots() const {
  std::lock_guard lock(mu_);
  Statement s(db_, "SELECT COUNT(*) FROM snapshots");
  return s.step() ? static_cast<std::uint64_t>(s.integer(0)) : 0;
}

std::uint64_t HistoryStore::bytes() const {
  std::lock_guard lock(mu_);
  Statement count(db_, "PRAGMA page_count");
  Statement size(db_, "PRAGMA page_size");
  const std::int64_t pages = count.step() ? count.integer(0) : 0;
  const std::int64_t page = size.step() ? size.integer(0) : 0;
  return static_cast<std::uint64_t>(pages * page);
}

}  // namespace ebb::storage
