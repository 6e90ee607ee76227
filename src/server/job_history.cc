#include "server/job_history.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <map>
#include <unordered_map>

#include "progress/progress.h"
#include "server/job_view.h"

namespace tau::server {
namespace {

// Idle read connections kept open; more are opened while many readers run
// at once, and closed again.
constexpr size_t kMaxIdleConnections = 4;
// How much of a metrics file is read back for an ended job's progress.
constexpr int64_t kMaxMetricsRead = int64_t{4} << 20;

// The progress an ended job reported, read back from its metrics file
// (its newest kMaxMetricsRead bytes); nullopt when it wrote none.
std::optional<progress::Snapshot> ReadProgress(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size == 0) {
    ::close(fd);
    return std::nullopt;
  }
  const int64_t start = std::max<int64_t>(0, st.st_size - kMaxMetricsRead);
  std::string data(static_cast<size_t>(st.st_size - start), '\0');
  ssize_t n = ::pread(fd, data.data(), data.size(), start);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  data.resize(static_cast<size_t>(n));
  if (start > 0) data.erase(0, std::min(data.size(), data.find('\n') + 1));  // a cut first line
  if (!data.empty() && data.back() != '\n') data += '\n';
  progress::Tracker tracker;
  tracker.Feed(data, static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000);
  if (tracker.snapshot().lines == 0 && tracker.snapshot().bad_lines == 0) return std::nullopt;
  return tracker.snapshot();
}

}  // namespace

std::string ContinueToken(int64_t seq) { return fmt::format("s{}", seq); }

Result<int64_t> ParseContinueToken(const std::string& token) {
  int64_t seq = 0;
  if (token.size() >= 2 && token[0] == 's') {
    auto [end, ec] = std::from_chars(token.data() + 1, token.data() + token.size(), seq);
    if (ec == std::errc() && end == token.data() + token.size() && seq > 0) return seq;
  }
  return InvalidArgumentError(
      fmt::format("\"{}\" is not a continue token (use the \"next\" of the page before)", token));
}

// A read connection taken from the pool, given back when it goes.
class JobHistory::Lease {
 public:
  Lease(const JobHistory* owner, std::unique_ptr<store::JobStore> store) : owner_(owner), store_(std::move(store)) {}
  Lease(Lease&& other) noexcept = default;
  ~Lease() {
    if (store_) owner_->Release(std::move(store_));
  }
  store::JobStore* operator->() { return store_.get(); }

 private:
  const JobHistory* owner_;
  std::unique_ptr<store::JobStore> store_;
};

JobHistory::JobHistory(std::string database_path, TauHome home, int64_t max_interruptions)
    : database_path_(std::move(database_path)), home_(std::move(home)), max_interruptions_(max_interruptions) {}

JobHistory::~JobHistory() = default;

Result<JobHistory::Lease> JobHistory::Acquire() const {
  {
    std::unique_lock lock(mu_);
    released_.wait(lock, [&] { return !idle_.empty() || open_ < kMaxConnections; });
    if (!idle_.empty()) {
      auto store = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(store));
    }
    ++open_;  // counted before it opens, so that no more than the most open
  }
  auto store = store::JobStore::Open(database_path_);
  if (!store.ok()) {
    std::lock_guard lock(mu_);
    --open_;
    released_.notify_one();
    return store.error();
  }
  return Lease(this, std::move(*store));
}

void JobHistory::Release(std::unique_ptr<store::JobStore> store) const {
  std::unique_ptr<store::JobStore> closing;
  {
    std::lock_guard lock(mu_);
    if (idle_.size() < kMaxIdleConnections) {
      idle_.push_back(std::move(store));
    } else {
      closing = std::move(store);
      --open_;
    }
  }
  closing.reset();  // closed outside the lock, before a waiter opens another
  released_.notify_one();
}

size_t JobHistory::open_connections() const {
  std::lock_guard lock(mu_);
  return open_;
}

Result<std::vector<store::EventRecord>> JobHistory::LoadEvents(const std::string& job_id, int64_t after_id,
                                                                 int limit) const {
  TAU_ASSIGN_OR_RETURN(Lease db, Acquire());
  return db->LoadEvents(job_id, after_id, limit);
}

Result<bool> JobHistory::SubmitRequestSeen(const std::string& request_id) const {
  TAU_ASSIGN_OR_RETURN(Lease db, Acquire());
  TAU_ASSIGN_OR_RETURN(auto seen, db->FindSubmitRequest(request_id));
  return seen.has_value();
}

Result<std::shared_ptr<const JobView>> JobHistory::ViewOf(store::JobRecord rec,
                                                          std::vector<store::AttemptRecord> attempts) const {
  // A spec this version no longer decodes still lists the job (with the
  // spec's defaults for what it asked for).
  auto spec = DecodeViewedSpec(rec.spec_json);
  auto view = NewJobView(rec, std::move(attempts), spec.ok() ? *spec : spec::JobSpec{}, home_, max_interruptions_);
  view->progress = ReadProgress(home_.metrics_file(rec.id).string());
  return std::shared_ptr<const JobView>(std::move(view));
}

Result<std::shared_ptr<const JobView>> JobHistory::Resolve(const std::string& id_or_name,
                                                           const StateView& active) const {
  TAU_ASSIGN_OR_RETURN(Lease db, Acquire());
  TAU_ASSIGN_OR_RETURN(std::string id, db->ResolveJobId(id_or_name));
  if (id.empty()) return std::shared_ptr<const JobView>();
  if (auto held = active.Find(id)) return held;
  TAU_ASSIGN_OR_RETURN(std::optional<store::JobRecord> rec, db->LoadJob(id));
  if (!rec) return std::shared_ptr<const JobView>();  // removed meanwhile
  TAU_ASSIGN_OR_RETURN(std::vector<store::AttemptRecord> attempts, db->LoadAttemptsOf({id}));
  return ViewOf(std::move(*rec), std::move(attempts));
}

Result<JobPage> JobHistory::List(const JobListQuery& query, const StateView& active) const {
  int64_t before = 0;
  if (!query.continue_token.empty()) {
    TAU_ASSIGN_OR_RETURN(before, ParseContinueToken(query.continue_token));
  }
  TAU_ASSIGN_OR_RETURN(Lease db, Acquire());
  // One more than asked: whether a next page exists.
  TAU_ASSIGN_OR_RETURN(std::vector<store::JobRecord> rows, db->ListJobs(query.filter, before, query.limit + 1));
  JobPage page;
  const bool more = static_cast<int>(rows.size()) > query.limit;
  if (more) rows.resize(static_cast<size_t>(query.limit));
  std::vector<std::string> stored_ids;
  for (const auto& r : rows) {
    if (!active.Find(r.id)) stored_ids.push_back(r.id);
  }
  TAU_ASSIGN_OR_RETURN(std::vector<store::AttemptRecord> attempts, db->LoadAttemptsOf(stored_ids));
  std::unordered_map<std::string, std::vector<store::AttemptRecord>> by_job;
  for (auto& a : attempts) by_job[a.job_id].push_back(std::move(a));
  for (auto& r : rows) {
    const int64_t seq = r.seq;
    if (auto held = active.Find(r.id)) {
      // What is shown is the view's: it must match the state filter too.
      if (!query.filter.state || held->job.state == *query.filter.state) page.jobs.push_back(held);
    } else {
      std::string id = r.id;
      TAU_ASSIGN_OR_RETURN(auto view, ViewOf(std::move(r), std::move(by_job[id])));
      page.jobs.push_back(std::move(view));
    }
    if (more) page.next = ContinueToken(seq);
  }
  return page;
}

Result<std::vector<std::pair<std::string, int64_t>>> JobHistory::CountByState(const StateView& active) const {
  using store::JobState;
  std::map<JobState, int64_t> counts;
  // The database counts ended jobs whose end it has; the view the rest.
  for (const auto& j : active.jobs) {
    if (!store::IsTerminal(j->job.state) || j->end_unrecorded) ++counts[j->job.state];
  }
  TAU_ASSIGN_OR_RETURN(Lease db, Acquire());
  TAU_ASSIGN_OR_RETURN(std::vector<store::JobCount> ended, db->CountEndedJobs());
  for (const auto& c : ended) counts[c.state] += c.count;
  std::vector<std::pair<std::string, int64_t>> out;
  for (JobState s : {JobState::kQueued, JobState::kAdmitted, JobState::kRunning, JobState::kRetrying,
                     JobState::kSucceeded, JobState::kFailed, JobState::kCancelled}) {
    out.emplace_back(std::string(store::JobStateName(s)), counts[s]);
  }
  return out;
}

}  // namespace tau::server
