// Job progress (docs/observability.md#progress): the JSON lines a job
// appends to TAU_METRICS_FILE are followed while it runs; progress, rate
// and ETA reach tau status, tau list -o wide and the portal, and a job
// whose lines stop for too long is marked stalled.

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include "common/beneath.h"
#include "common/duration.h"
#include "server/job_manager.h"

namespace tau::server {
using store::JobState;

bool JobManager::FollowMetricsFile(Job& job) {
  if (!job.progress) job.progress = std::make_shared<progress::Tracker>();
  // Opened beneath TAU_HOME without following links: the job owns the file.
  auto file = OpenPathBeneath(home_.root(), home_.metrics_file(job.rec.id));
  if (!file.ok()) return false;
  const int fd = file->get();
  const int64_t before = job.progress->snapshot().lines + job.progress->snapshot().bad_lines;
  char buf[65536];
  // At most 4 MiB per call: a job writing faster is followed over calls.
  for (int chunk = 0; chunk < 64; ++chunk) {
    ssize_t n = ::pread(fd, buf, sizeof buf, job.metrics_offset);
    if (n <= 0) break;
    job.metrics_offset += n;
    job.progress->Feed(std::string_view(buf, static_cast<size_t>(n)), NowMs());
  }
  if (job.progress->snapshot().lines + job.progress->snapshot().bad_lines == before) return false;
  job.view.reset();
  return true;
}

void JobManager::RefreshProgress() {
  const int64_t now = NowMs();
  bool changed = false;
  for (auto& [seq, job_ptr] : jobs_by_seq_) {
    Job& job = *job_ptr;
    if (job.rec.state != JobState::kRunning) continue;
    if (FollowMetricsFile(job)) changed = true;
    const progress::Snapshot& s = job.progress->snapshot();
    if (options_.progress_stall_after.count() <= 0 || s.lines == 0) continue;
    const int64_t since_line = now - std::max(s.last_line_ms, job.rec.started_at.value_or(0));
    const bool stalled = since_line > options_.progress_stall_after.count();
    if (stalled == job.progress_stalled) continue;
    job.progress_stalled = stalled;
    job.progress->SetStalled(stalled);  // no ETA while stalled
    job.view.reset();
    changed = true;
    std::string message =
        stalled ? fmt::format("no line in TAU_METRICS_FILE for {}{}", FormatDuration(Duration(since_line)),
                              s.step ? fmt::format(" (last step {})", *s.step) : "")
                : "metrics lines arrive again";
    if (stalled) Count("taugrid_job_progress_stalls_total", {{"queue", job.rec.queue}});
    if (Status st = AppendEvent(job, stalled ? "ProgressStalled" : "ProgressResumed", "", message); !st.ok()) {
      LogStoreFailure(job, st);
    }
  }
  if (changed) Publish();
}

}  // namespace tau::server
