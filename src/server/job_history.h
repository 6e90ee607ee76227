#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/tau_home.h"
#include "server/state_view.h"
#include "store/job_store.h"

namespace tau::server {

// One page of the job list, newest first.
struct JobPage {
  std::vector<std::shared_ptr<const JobView>> jobs;
  // Where the next page starts (the `continue` of the next request); ""
  // when this page is the last.
  std::string next;
};

struct JobListQuery {
  store::JobFilter filter;
  int limit = 100;
  // Jobs older than this one (a page's `next`); "" from the newest.
  std::string continue_token;
};

// The continue token that starts a page after the job with this seq, and
// back; InvalidArgument names a token that is not one.
std::string ContinueToken(int64_t seq);
Result<int64_t> ParseContinueToken(const std::string& token);

// Reads jobs from the database for readers off the control loop: the jobs
// the loop no longer keeps (ended ones) and pages of the job list. A job
// the published view holds is taken from the view (it carries the live
// progress; it may lag the database by the batch being committed).
// Thread-safe: each call uses a read connection of its own from a small
// pool (SQLite in WAL mode lets readers run beside the loop's writer).
class JobHistory {
 public:
  JobHistory(std::string database_path, TauHome home, int64_t max_interruptions);
  ~JobHistory();

  // The job with this id, else the newest job with this name; nullptr when
  // there is none.
  Result<std::shared_ptr<const JobView>> Resolve(const std::string& id_or_name, const StateView& active) const;
  Result<JobPage> List(const JobListQuery& query, const StateView& active) const;
  // How many jobs are in each state (every state named, 0 included):
  // unfinished ones from the view, ended ones from the database, but for
  // an end the database does not have yet (a full disk), from the view.
  Result<std::vector<std::pair<std::string, int64_t>>> CountByState(const StateView& active) const;
  // Events after `after_id` (of one job, or of all when `job_id` is ""),
  // oldest first, at most `limit`: what event streams poll.
  Result<std::vector<store::EventRecord>> LoadEvents(const std::string& job_id, int64_t after_id, int limit) const;
  // Whether a submit with this request id was committed (an id seen
  // before; the loop then decides what the repeat gets).
  Result<bool> SubmitRequestSeen(const std::string& request_id) const;

  // Read connections open now (idle or in use), and the most that may be:
  // a reader that finds all of them in use waits for one, so however many
  // requests and streams read at once the database holds a bounded number
  // of file descriptors.
  size_t open_connections() const;
  static constexpr size_t kMaxConnections = 8;

 private:
  class Lease;
  Result<Lease> Acquire() const;
  void Release(std::unique_ptr<store::JobStore> store) const;
  // A stored job as readers see it, its progress read from its metrics file.
  Result<std::shared_ptr<const JobView>> ViewOf(store::JobRecord rec, std::vector<store::AttemptRecord> attempts) const;

  std::string database_path_;
  TauHome home_;
  int64_t max_interruptions_;
  mutable std::mutex mu_;
  mutable std::condition_variable released_;
  mutable std::vector<std::unique_ptr<store::JobStore>> idle_;
  mutable size_t open_ = 0;  // idle_ and those lent out
};

}  // namespace tau::server
