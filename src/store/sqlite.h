#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tau::store {

class Statement;

// A SQLite connection returning Status instead of error codes. Not
// thread-safe: one thread owns a Database (the control loop owns the
// writer). Opened in WAL mode with synchronous=NORMAL, foreign keys on and
// a busy timeout.
class Database {
 public:
  // Opens (creating when absent) the database file at `path`; ":memory:"
  // opens a private in-memory database. `vfs` names a registered SQLite VFS
  // (e.g. a FaultVfs in tests); "" is the platform's own.
  static Result<std::unique_ptr<Database>> Open(const std::string& path, const std::string& vfs = "");
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs one or more statements that return no rows.
  Status Exec(std::string_view sql);
  // A statement for `sql`. Statements are compiled once and kept (up to
  // kMaxCachedStatements distinct texts): a later Prepare of the same text
  // reuses the compiled one, reset and unbound, when it is not in use.
  Result<Statement> Prepare(std::string_view sql);
  static constexpr size_t kMaxCachedStatements = 64;
  // How many statements were compiled so far (cache misses); for tests.
  int64_t compiled_statements() const { return compiled_; }

  int64_t LastInsertRowId() const;
  // Rows changed by the last INSERT, UPDATE or DELETE.
  int Changes() const;

  sqlite3* raw() { return db_; }

  // Called with the outcome of every write that reaches the disk or fails
  // to: each COMMIT, each statement that changes rows outside a
  // transaction, and each failed write statement. Lets the owner notice a
  // full disk and when it is writable again.
  // Returns an id for RemoveWriteObserver.
  int AddWriteObserver(std::function<void(const Status&)> observer) {
    write_observers_.emplace_back(++last_observer_id_, std::move(observer));
    return last_observer_id_;
  }
  void RemoveWriteObserver(int id) {
    std::erase_if(write_observers_, [id](const auto& o) { return o.first == id; });
  }
  void ObserveWrite(const Status& st) const {
    for (const auto& [id, observer] : write_observers_) observer(st);
  }

 private:
  explicit Database(sqlite3* db) : db_(db) {}
  struct CachedStatement {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  sqlite3* db_;
  // By SQL text; node-based, so a Statement may point at its entry.
  std::unordered_map<std::string, CachedStatement> cache_;
  int64_t compiled_ = 0;
  std::vector<std::pair<int, std::function<void(const Status&)>>> write_observers_;
  int last_observer_id_ = 0;
};

// A prepared statement. Bind parameters by 1-based index, Step through rows,
// read columns by 0-based index.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  ~Statement();

  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, std::string_view value);
  Statement& Bind(int index, const char* value) { return Bind(index, std::string_view(value)); }
  Statement& Bind(int index, const std::string& value) { return Bind(index, std::string_view(value)); }
  Statement& Bind(int index, std::optional<int64_t> value);
  Statement& BindNull(int index);

  // Advances to the next row: true when there is one, false when done.
  Result<bool> Step();
  // Steps until done (for statements without rows).
  Status Run();
  // Makes the statement ready to bind and step again.
  void Reset();

  int64_t Int(int column) const;
  std::optional<int64_t> OptionalInt(int column) const;
  std::string Text(int column) const;
  bool IsNull(int column) const;

 private:
  friend class Database;
  Statement(Database* owner, sqlite3* db, sqlite3_stmt* stmt, bool* cached_in_use = nullptr)
      : owner_(owner), db_(db), stmt_(stmt), cached_in_use_(cached_in_use) {}
  Status BindStatus() const;
  // Finalizes an uncached statement; resets a cached one and gives it back.
  void Release();

  Database* owner_;
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  bool* cached_in_use_;  // the cache entry's flag; nullptr: not cached
  int bind_error_ = 0;
};

// BEGIN IMMEDIATE ... COMMIT; rolls back in the destructor unless committed.
class Transaction {
 public:
  static Result<Transaction> Begin(Database* db);
  Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  ~Transaction();
  Status Commit();

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_;
};

}  // namespace tau::store
