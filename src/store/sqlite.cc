#include "store/sqlite.h"

#include <fmt/format.h>
#include <sqlite3.h>

namespace tau::store {
namespace {

Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  std::string msg = fmt::format("{}: {}", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_FULL: return ResourceExhaustedError(std::move(msg));
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return UnavailableError(std::move(msg));
    case SQLITE_CONSTRAINT: return AlreadyExistsError(std::move(msg));
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY: return PermissionDeniedError(std::move(msg));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return FailedPreconditionError(std::move(msg));
    default: return InternalError(std::move(msg));
  }
}

}  // namespace

Result<std::unique_ptr<Database>> Database::Open(const std::string& path, const std::string& vfs) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           vfs.empty() ? nullptr : vfs.c_str());
  if (rc != SQLITE_OK) {
    Status st = SqliteError(db, rc, fmt::format("open {}", path));
    sqlite3_close(db);
    return st;
  }
  sqlite3_busy_timeout(db, 5000);
  // The -wal and -shm files stay when the last connection closes (as they
  // do after a crash): a database reopened on a full disk still has its
  // shared-memory index, which could not be created then, and can be read.
  int persist_wal = 1;
  sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist_wal);
  std::unique_ptr<Database> out(new Database(db));
  TAU_RETURN_IF_ERROR(out->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                                "PRAGMA foreign_keys=ON;"));
  return out;
}

Database::~Database() {
  for (auto& [sql, cached] : cache_) sqlite3_finalize(cached.stmt);
  sqlite3_close_v2(db_);
}

Status Database::Exec(std::string_view sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    return SqliteError(nullptr, rc, msg);
  }
  return Status::Ok();
}

Result<Statement> Database::Prepare(std::string_view sql) {
  auto it = cache_.find(std::string(sql));
  if (it != cache_.end() && !it->second.in_use) {
    it->second.in_use = true;
    return Statement(this, db_, it->second.stmt, &it->second.in_use);
  }
  // Kept when there is room and the text is not cached yet; a text in use
  // (a statement of it is still stepping) gets a private copy.
  const bool keep = it == cache_.end() && cache_.size() < kMaxCachedStatements;
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), keep ? SQLITE_PREPARE_PERSISTENT : 0,
                              &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db_, rc, fmt::format("prepare \"{}\"", sql));
  ++compiled_;
  if (!keep || stmt == nullptr) return Statement(this, db_, stmt);  // nullptr: only white space or a comment
  CachedStatement& cached = cache_[std::string(sql)];
  cached.stmt = stmt;
  cached.in_use = true;
  return Statement(this, db_, stmt, &cached.in_use);
}

int64_t Database::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }
int Database::Changes() const { return sqlite3_changes(db_); }

Statement::Statement(Statement&& o) noexcept
    : owner_(o.owner_), db_(o.db_), stmt_(o.stmt_), cached_in_use_(o.cached_in_use_), bind_error_(o.bind_error_) {
  o.stmt_ = nullptr;
  o.cached_in_use_ = nullptr;
}

Statement& Statement::operator=(Statement&& o) noexcept {
  if (this != &o) {
    Release();
    owner_ = o.owner_;
    db_ = o.db_;
    stmt_ = o.stmt_;
    cached_in_use_ = o.cached_in_use_;
    bind_error_ = o.bind_error_;
    o.stmt_ = nullptr;
    o.cached_in_use_ = nullptr;
  }
  return *this;
}

Statement::~Statement() { Release(); }

void Statement::Release() {
  if (cached_in_use_ != nullptr) {
    // Reset ends the statement's read of the database (a cached statement
    // left mid-way would hold a snapshot open and stall checkpoints).
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    *cached_in_use_ = false;
    cached_in_use_ = nullptr;
  } else {
    sqlite3_finalize(stmt_);
  }
  stmt_ = nullptr;
}

Statement& Statement::Bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Statement& Statement::Bind(int index, std::string_view value) {
  int rc = sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Statement& Statement::Bind(int index, std::optional<int64_t> value) {
  return value ? Bind(index, *value) : BindNull(index);
}

Statement& Statement::BindNull(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Status Statement::BindStatus() const {
  if (bind_error_ == 0) return Status::Ok();
  return SqliteError(db_, bind_error_, "bind");
}

Result<bool> Statement::Step() {
  TAU_RETURN_IF_ERROR(BindStatus());
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  const bool writes = !sqlite3_stmt_readonly(stmt_);
  if (rc == SQLITE_DONE) {
    if (writes && sqlite3_get_autocommit(db_)) owner_->ObserveWrite(Status::Ok());
    return false;
  }
  Status st = SqliteError(db_, rc, fmt::format("step \"{}\"", sqlite3_sql(stmt_)));
  if (writes) owner_->ObserveWrite(st);
  return st;
}

Status Statement::Run() {
  while (true) {
    TAU_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return Status::Ok();
  }
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_error_ = 0;
}

int64_t Statement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

std::optional<int64_t> Statement::OptionalInt(int column) const {
  if (IsNull(column)) return std::nullopt;
  return Int(column);
}

std::string Statement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  int n = sqlite3_column_bytes(stmt_, column);
  return text ? std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(n)) : std::string();
}

bool Statement::IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

Result<Transaction> Transaction::Begin(Database* db) {
  TAU_RETURN_IF_ERROR(db->Exec("BEGIN IMMEDIATE"));
  return Transaction(db);
}

Transaction::~Transaction() {
  if (db_ != nullptr) (void)db_->Exec("ROLLBACK");
}

Status Transaction::Commit() {
  Status st = db_->Exec("COMMIT");
  db_->ObserveWrite(st);
  if (st.ok()) db_ = nullptr;
  return st;
}

}  // namespace tau::store
