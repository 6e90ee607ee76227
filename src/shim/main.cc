// tau-shim: runs one attempt of a job (the containerd-shim / conmon
// pattern). Uses libc only. Protocol: docs/shim.md.
//
//   tau-shim --status FILE --log FILE [--cwd DIR] [--grace-ms N]
//            [--deadline-ms N] [--lock-fd N] [--cgroup DIR] [--cpu-list L]
//            [--rlimit-data BYTES] [--status-retry-ms N]
//            [--fail-status-writes N] -- PROGRAM ARGS...
//
// It starts PROGRAM in its own process group with stdout and stderr
// appended to the log file, keeps running when its parent (taugridd) dies,
// turns SIGTERM/SIGINT/SIGHUP into "SIGTERM to the job's process group,
// SIGKILL after the grace period", enforces the deadline the same way, and
// finally writes the exit status atomically to the status file, into
// space reserved before the job started (so a disk the job filled cannot
// lose it), retrying for --status-retry-ms when even that fails.

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

namespace {

struct Options {
  const char* status_path = nullptr;
  const char* log_path = nullptr;
  const char* cwd = nullptr;
  long long grace_ms = 30000;
  long long deadline_ms = 0;  // 0: none
  int lock_fd = -1;           // an inherited, locked descriptor held until exit
  const char* cgroup = nullptr;  // a cgroup v2 folder to join before starting the job
  const char* cpu_list = nullptr;  // "0,3": CPUs the job may run on (without cgroups)
  long long rlimit_data = 0;       // RLIMIT_DATA for the job in bytes (without cgroups)
  long long status_retry_ms = 300000;  // how long a failing status write is retried
  int fail_status_writes = 0;          // fault injection: the first N status writes fail (ENOSPC)
  char** argv = nullptr;
};

long long NowMs(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

[[noreturn]] void Usage(const char* why) {
  fprintf(stderr, "tau-shim: %s\nusage: tau-shim --status FILE --log FILE [--cwd DIR] "
                  "[--grace-ms N] [--deadline-ms N] [--lock-fd N] [--cgroup DIR] [--cpu-list L] "
                  "[--rlimit-data BYTES] [--status-retry-ms N] [--fail-status-writes N] "
                  "-- PROGRAM ARGS...\n", why);
  exit(2);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> char* {
      if (i + 1 >= argc) Usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--status") o.status_path = value();
    else if (a == "--log") o.log_path = value();
    else if (a == "--cwd") o.cwd = value();
    else if (a == "--grace-ms") o.grace_ms = atoll(value());
    else if (a == "--deadline-ms") o.deadline_ms = atoll(value());
    else if (a == "--lock-fd") o.lock_fd = atoi(value());
    else if (a == "--cgroup") o.cgroup = value();
    else if (a == "--cpu-list") o.cpu_list = value();
    else if (a == "--rlimit-data") o.rlimit_data = atoll(value());
    else if (a == "--status-retry-ms") o.status_retry_ms = atoll(value());
    else if (a == "--fail-status-writes") o.fail_status_writes = atoi(value());
    else if (a == "--") {
      o.argv = argv + i + 1;
      break;
    } else Usage(("unknown option " + a).c_str());
  }
  if (!o.status_path || !o.log_path) Usage("--status and --log are required");
  if (!o.argv || !o.argv[0]) Usage("no program after --");
  return o;
}

void AppendJsonString(std::string* out, const char* s) {
  out->push_back('"');
  for (; *s; ++s) {
    unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", c);
      out->append(buf);
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
  out->push_back('"');
}

bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// The status is written into PATH.tmp, a file of kStatusReserve bytes
// made before the job starts: overwriting blocks a file already has needs
// no free space, so a job that fills the disk cannot keep its own end from
// being recorded. The write itself takes the space (ext4 and XFS reserve a
// delayed allocation's blocks at write(), refusing it with ENOSPC then), so
// no fsync is needed here; the status is fsynced when it is written.
constexpr size_t kStatusReserve = 4096;

std::string TmpPath(const char* path) { return std::string(path) + ".tmp"; }

// What is at `path` when it is not a regular file, in words ("" when it
// is one, or nothing is there).
std::string NotRegular(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  if (S_ISFIFO(st.st_mode)) return "a fifo";
  if (S_ISDIR(st.st_mode)) return "a folder";
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "a device";
}

// Creates PATH.tmp afresh (a link is never followed, nor a fifo opened: the
// folder is the job's, and a later attempt's job may have left anything
// there), or -1 with errno set. A regular file already there is replaced;
// anything else is left alone and EEXIST returned.
int CreateFresh(const std::string& tmp, int flags) {
  for (int tries = 0; tries < 2; ++tries) {
    int fd = open(tmp.c_str(), flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST || !NotRegular(tmp).empty()) return fd;
    unlink(tmp.c_str());
  }
  errno = EEXIST;
  return -1;
}

// Creates PATH.tmp with kStatusReserve bytes of blanks (a JSON reader sees
// no status in it); -1, with errno set and no file left, on failure.
int ReserveStatus(const char* path) {
  std::string tmp = TmpPath(path);
  int fd = CreateFresh(tmp, O_RDWR);
  if (fd < 0) return -1;
  std::string blanks(kStatusReserve - 1, ' ');
  blanks.push_back('\n');
  if (!WriteAll(fd, blanks)) {
    int err = errno;
    close(fd);
    unlink(tmp.c_str());
    errno = err;
    return -1;
  }
  return fd;
}

// Whether PATH.tmp is still the file behind `fd` (the job may have
// replaced it: it lives in the job's folder).
bool StillReserved(const std::string& tmp, int fd) {
  struct stat at_path, held;
  return lstat(tmp.c_str(), &at_path) == 0 && fstat(fd, &held) == 0 && at_path.st_dev == held.st_dev &&
         at_path.st_ino == held.st_ino;
}

// Writes `json` to PATH.tmp (into the reservation `reserved_fd` when there
// is one and PATH.tmp is still it), fsyncs it, renames it over PATH and
// fsyncs the folder, so readers see either no file or the whole status.
// Whether the folder `path` lies in is still there.
bool FolderExists(const char* path) {
  std::string dir = path;
  size_t slash = dir.rfind('/');
  dir = slash == std::string::npos ? "." : dir.substr(0, slash == 0 ? 1 : slash);
  struct stat st;
  // A removed folder that is still the working folder has no links left.
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_nlink > 0;
}

bool WriteStatusAtomically(const char* path, int reserved_fd, const std::string& json) {
  std::string tmp = TmpPath(path);
  bool ok;
  if (reserved_fd >= 0 && json.size() <= kStatusReserve && StillReserved(tmp, reserved_fd)) {
    // Overwrite the blanks and cut off the rest, then one fsync makes both
    // durable. Should the cut fail, what is left of the blanks is trailing
    // white space, which a JSON reader skips; a crash before the fsync
    // leaves blanks (no status), as a crash before the write would.
    ok = lseek(reserved_fd, 0, SEEK_SET) == 0 && WriteAll(reserved_fd, json);
    if (ok) (void)ftruncate(reserved_fd, static_cast<off_t>(json.size()));
    ok = ok && fsync(reserved_fd) == 0;
  } else {
    // No reservation (the job never started, and a partial file must not
    // suggest it did: see docs/shim.md), or the job replaced it: a new
    // file. A link or fifo the job put there is removed first (a folder
    // stays: unlink refuses it, and so the write fails).
    if (!NotRegular(tmp).empty()) unlink(tmp.c_str());
    int fd = CreateFresh(tmp, O_WRONLY);
    if (fd < 0) return false;
    ok = WriteAll(fd, json) && fsync(fd) == 0;
    int err = errno;
    close(fd);
    if (!ok) {
      unlink(tmp.c_str());
      errno = err;
      return false;
    }
  }
  if (!ok || rename(tmp.c_str(), path) != 0) return false;
  std::string dir = path;
  size_t slash = dir.rfind('/');
  dir = slash == std::string::npos ? "." : dir.substr(0, slash == 0 ? 1 : slash);
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return true;
}

// Writes the lock file's record over what it holds (each version is longer
// than the one before).
bool WriteRecord(int fd, const std::string& line) {
  return pwrite(fd, line.data(), line.size(), 0) == static_cast<ssize_t>(line.size());
}

// Field 22 of /proc/self/stat: this process's start time in clock ticks
// since boot, or 0.
long long SelfStartTicks() {
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* p = strrchr(buf, ')');
  if (!p) return 0;
  // Fields after the name start at 3; starttime is the 20th of them.
  for (int field = 3; field <= 22 && p; ++field) p = strchr(p + 1, ' ');
  return p ? atoll(p + 1) : 0;
}

// /proc/sys/kernel/random/boot_id without its newline, or "".
std::string BootId() {
  int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[64];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return "";
  std::string id(buf, static_cast<size_t>(n));
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

// The parent of `pid` from /proc/PID/stat, or -1.
pid_t ParentOf(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[512];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses.
  const char* close_paren = strrchr(buf, ')');
  if (!close_paren) return -1;
  char state;
  int ppid;
  if (sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2) return -1;
  return ppid;
}

// Every live process below this one. The shim is a child subreaper, so a
// process whose parent ended (a daemon, a Ray worker, the driver Ray starts
// in a session of its own) is reparented here and is still found.
std::vector<pid_t> Descendants() {
  std::vector<std::pair<pid_t, pid_t>> all;  // (pid, parent)
  if (DIR* dir = opendir("/proc")) {
    while (struct dirent* e = readdir(dir)) {
      if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
      pid_t pid = static_cast<pid_t>(atoi(e->d_name));
      pid_t parent = ParentOf(pid);
      if (parent > 0) all.emplace_back(pid, parent);
    }
    closedir(dir);
  }
  std::vector<pid_t> found = {getpid()};
  for (size_t i = 0; i < found.size(); ++i) {
    for (const auto& [pid, parent] : all) {
      if (parent == found[i]) found.push_back(pid);
    }
  }
  found.erase(found.begin());
  return found;
}

// SIGTERM or SIGKILL to the job: its process group and every descendant
// that left the group (each process gets the signal once).
void SignalJob(pid_t group, int sig) {
  kill(-group, sig);
  for (pid_t pid : Descendants()) {
    if (getpgid(pid) != group) kill(pid, sig);
  }
}

// After the job's main process ended: kills and reaps whatever it left
// behind, until the shim has no children (or 10 s passed, for a process
// stuck in the kernel).
void KillLeftovers(pid_t group) {
  const long long give_up = NowMs(CLOCK_MONOTONIC) + 10000;
  for (;;) {
    // Every process of the job descends from the shim, and one whose
    // parent ended is the shim's child: no children, nothing left (the
    // usual case, which so costs no scan of /proc).
    pid_t reaped;
    do {
      errno = 0;
      reaped = waitpid(-1, nullptr, WNOHANG);
    } while (reaped > 0);
    if (reaped < 0 && errno == ECHILD) return;
    if (NowMs(CLOCK_MONOTONIC) > give_up) return;
    SignalJob(group, SIGKILL);
    usleep(10000);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = Parse(argc, argv);
  std::string record;  // "PID START_TICKS BOOT_ID[ started]" as written to the lock file
  // Nothing of the parent's reaches the job: close every inherited
  // descriptor above stderr (the daemon's sockets, database, ...).
  // The lock descriptor stays open (and locked) until this process exits.
  if (opt.lock_fd >= 3) {
    if (opt.lock_fd > 3) syscall(SYS_close_range, 3U, static_cast<unsigned>(opt.lock_fd - 1), 0U);
    syscall(SYS_close_range, static_cast<unsigned>(opt.lock_fd + 1), ~0U, 0U);
    fcntl(opt.lock_fd, F_SETFD, FD_CLOEXEC);
    // "PID START_TICKS BOOT_ID": the shim (whose pid is also the session of
    // every process of the job) as a restarted daemon can tell it apart
    // from a later process that reuses the pid, or a later boot.
    record = std::to_string(getpid()) + " " + std::to_string(SelfStartTicks()) + " " + BootId();
    const std::string line = record + "\n";
    if (ftruncate(opt.lock_fd, 0) != 0 || !WriteRecord(opt.lock_fd, line)) {
      fprintf(stderr, "tau-shim: cannot record pid in the lock file: %s\n", strerror(errno));
    }
  } else {
    syscall(SYS_close_range, 3U, ~0U, 0U);
  }
  setsid();
  prctl(PR_SET_CHILD_SUBREAPER, 1);

  sigset_t handled;
  sigemptyset(&handled);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, s);
  sigset_t original;
  sigprocmask(SIG_BLOCK, &handled, &original);
  signal(SIGPIPE, SIG_IGN);

  std::string error;
  int log_fd = open(opt.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) error = std::string("cannot open log ") + opt.log_path + ": " + strerror(errno);

  // Join the attempt's cgroup first, so the job and everything it starts
  // are inside it from their first instruction.
  if (error.empty() && opt.cgroup) {
    std::string procs = std::string(opt.cgroup) + "/cgroup.procs";
    int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    char pid_text[32];
    int len = snprintf(pid_text, sizeof pid_text, "%d\n", static_cast<int>(getpid()));
    if (fd < 0 || write(fd, pid_text, static_cast<size_t>(len)) != len) {
      error = std::string("cannot join cgroup ") + opt.cgroup + ": " + strerror(errno);
    }
    if (fd >= 0) close(fd);
  }
  // The status's space, before the job can fill the disk. Without it the
  // job's end could not be recorded, so it is not started.
  int reserved_fd = -1;
  if (error.empty()) {
    reserved_fd = ReserveStatus(opt.status_path);
    const int reserve_err = errno;
    const std::string tmp = TmpPath(opt.status_path);
    if (reserved_fd < 0 && reserve_err == EEXIST && !NotRegular(tmp).empty()) {
      // Not the shim's, and not to be removed: the job (an earlier
      // attempt's, still running?) put it there. Nothing is started and no
      // status written; taugridd reads what is there and says so.
      fprintf(stderr, "tau-shim: not starting the job: the status reservation %s is not a regular file (%s)\n",
              tmp.c_str(), NotRegular(tmp).c_str());
      return 3;
    }
    if (reserved_fd < 0) error = std::string("cannot reserve the status file: ") + strerror(reserve_err);
  }
  // "The job was started", where the job cannot reach it (the lock file is
  // in taugridd's state folder, the reservation in the job's): written
  // before the fork, so a shim that dies at any point after leaves it.
  if (error.empty() && opt.lock_fd >= 3) {
    if (WriteRecord(opt.lock_fd, record + " started\n")) {
      record += " started";
    } else {
      error = std::string("cannot record the job's start in the lock file: ") + strerror(errno);
    }
  }
  const long long started_at = NowMs(CLOCK_REALTIME);
  const long long started_mono = NowMs(CLOCK_MONOTONIC);
  pid_t child = -1;
  if (error.empty()) {
    child = fork();
    if (child < 0) error = std::string("fork: ") + strerror(errno);
  }
  if (child == 0) {
    setpgid(0, 0);
    sigprocmask(SIG_SETMASK, &original, nullptr);
    signal(SIGPIPE, SIG_DFL);
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    if (opt.cpu_list) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (const char* p = opt.cpu_list; *p;) {
        CPU_SET(atoi(p), &set);
        while (*p && *p != ',') ++p;
        if (*p == ',') ++p;
      }
      if (sched_setaffinity(0, sizeof set, &set) != 0) {
        dprintf(2, "tau-shim: cannot pin to CPUs %s: %s\n", opt.cpu_list, strerror(errno));
      }
    }
    if (opt.rlimit_data > 0) {
      struct rlimit limit = {static_cast<rlim_t>(opt.rlimit_data), static_cast<rlim_t>(opt.rlimit_data)};
      if (setrlimit(RLIMIT_DATA, &limit) != 0) {
        dprintf(2, "tau-shim: cannot limit memory: %s\n", strerror(errno));
      }
    }
    if (opt.cwd && chdir(opt.cwd) != 0) {
      dprintf(2, "tau-shim: cannot enter %s: %s\n", opt.cwd, strerror(errno));
      _exit(126);
    }
    execvp(opt.argv[0], opt.argv);
    dprintf(2, "tau-shim: cannot run %s: %s\n", opt.argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  if (child > 0) setpgid(child, child);  // also done by the child; whichever runs first

  int wait_status = 0;
  struct rusage usage;
  memset(&usage, 0, sizeof usage);
  const char* terminated_by = "";
  long long kill_at_mono = -1;
  while (child > 0) {
    long long now = NowMs(CLOCK_MONOTONIC);
    bool timed = false;  // whether a timed action is pending
    long long next = 0;  // ms until it is due
    if (kill_at_mono >= 0) {
      timed = true;
      next = kill_at_mono - now;
    } else if (opt.deadline_ms > 0) {
      timed = true;
      next = started_mono + opt.deadline_ms - now;
    }
    if (timed && next <= 0) {
      if (kill_at_mono >= 0) {
        SignalJob(child, SIGKILL);
        kill_at_mono = now + 3600 * 1000LL;  // nothing else to escalate to
      } else {
        terminated_by = "deadline";
        SignalJob(child, SIGTERM);
        kill_at_mono = now + opt.grace_ms;
      }
      continue;
    }
    siginfo_t info;
    int sig;
    if (!timed) {
      sig = sigwaitinfo(&handled, &info);
    } else {
      struct timespec ts = {static_cast<time_t>(next / 1000), static_cast<long>((next % 1000) * 1000000)};
      sig = sigtimedwait(&handled, &info, &ts);
    }
    if (sig == SIGCHLD) {
      // Reap everything that ended: the job, or orphans reparented here.
      bool job_ended = false;
      for (;;) {
        int st = 0;
        struct rusage ru;
        pid_t r = wait4(-1, &st, WNOHANG, &ru);
        if (r <= 0) break;
        if (r == child) {
          wait_status = st;
          usage = ru;
          job_ended = true;
        }
      }
      if (job_ended) break;
    } else if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
      if (kill_at_mono < 0) {
        if (*terminated_by == '\0') terminated_by = "signal";
        SignalJob(child, SIGTERM);
        kill_at_mono = NowMs(CLOCK_MONOTONIC) + opt.grace_ms;
      }
    }
  }
  // While stopping, what the job left running (a process that left its
  // group) keeps the rest of the grace period to end by itself.
  while (child > 0 && kill_at_mono >= 0 && NowMs(CLOCK_MONOTONIC) < kill_at_mono && !Descendants().empty()) {
    struct timespec ts = {0, 50 * 1000000L};
    sigtimedwait(&handled, nullptr, &ts);
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }
  // Whatever the job left running goes with it.
  if (child > 0) KillLeftovers(child);

  std::string json = "{\"version\":1";
  char buf[256];
  if (child > 0 && WIFEXITED(wait_status)) {
    snprintf(buf, sizeof buf, ",\"exit_code\":%d,\"signal\":null", WEXITSTATUS(wait_status));
  } else if (child > 0 && WIFSIGNALED(wait_status)) {
    snprintf(buf, sizeof buf, ",\"exit_code\":null,\"signal\":%d", WTERMSIG(wait_status));
  } else {
    snprintf(buf, sizeof buf, ",\"exit_code\":null,\"signal\":null");
  }
  json += buf;
  snprintf(buf, sizeof buf,
           ",\"child_pid\":%d,\"started_at_ms\":%lld,\"finished_at_ms\":%lld,\"user_cpu_ms\":%lld,"
           "\"system_cpu_ms\":%lld,\"max_rss_kb\":%ld,\"terminated_by\":",
           static_cast<int>(child), started_at, NowMs(CLOCK_REALTIME),
           static_cast<long long>(usage.ru_utime.tv_sec) * 1000 + usage.ru_utime.tv_usec / 1000,
           static_cast<long long>(usage.ru_stime.tv_sec) * 1000 + usage.ru_stime.tv_usec / 1000,
           usage.ru_maxrss);
  json += buf;
  AppendJsonString(&json, terminated_by);
  json += ",\"error\":";
  AppendJsonString(&json, error.c_str());
  json += "}\n";
  // A failed write (the disk is full, an I/O error) is retried with a
  // growing pause: the status is the only record of how the job ended.
  // Nothing is left to wait for when the status's folder is gone (the
  // attempt was removed), and a stop signal ends the retrying after one
  // more try: the job has ended, and a shim must not outlive a stop.
  // A stop asked while the job ran counts too: a few seconds of tries, not
  // the whole --status-retry-ms.
  const long long retry_ms =
      strcmp(terminated_by, "signal") == 0 && opt.status_retry_ms > 2000 ? 2000 : opt.status_retry_ms;
  const long long give_up = NowMs(CLOCK_MONOTONIC) + retry_ms;
  long long pause_ms = 100;
  bool stopping = false;
  for (int tries = 1;; ++tries) {
    bool ok;
    if (tries <= opt.fail_status_writes) {
      errno = ENOSPC;
      ok = false;
    } else {
      ok = WriteStatusAtomically(opt.status_path, reserved_fd, json);
    }
    if (ok) break;
    fprintf(stderr, "tau-shim: cannot write %s (try %d): %s\n", opt.status_path, tries, strerror(errno));
    if (!FolderExists(opt.status_path)) {
      fprintf(stderr, "tau-shim: the folder of %s is gone; the status is not written\n", opt.status_path);
      return 3;
    }
    if (stopping) {
      fprintf(stderr, "tau-shim: stopped by a signal; the status is not written\n");
      return 3;
    }
    if (NowMs(CLOCK_MONOTONIC) + pause_ms > give_up) return 3;
    const long long wake = NowMs(CLOCK_MONOTONIC) + pause_ms;
    for (long long left = pause_ms; left > 0 && !stopping; left = wake - NowMs(CLOCK_MONOTONIC)) {
      struct timespec ts = {static_cast<time_t>(left / 1000), static_cast<long>((left % 1000) * 1000000)};
      int sig = sigtimedwait(&handled, nullptr, &ts);
      if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) stopping = true;
      while (waitpid(-1, nullptr, WNOHANG) > 0) {
      }
    }
    pause_ms = pause_ms * 2 > 5000 ? 5000 : pause_ms * 2;
  }
  if (reserved_fd >= 0) close(reserved_fd);
  // "This status is mine", where the job cannot reach it: the status lies
  // in the job's folder, and a job may write one of its own there and kill
  // its shim. Written only now, once nothing of the job is left and its
  // status is in place; a daemon that finds a status without it kills what
  // is left of the attempt before believing the status (docs/shim.md).
  if (opt.lock_fd >= 3 && !WriteRecord(opt.lock_fd, record + " ended\n")) {
    fprintf(stderr, "tau-shim: cannot record the status in the lock file: %s\n", strerror(errno));
  }
  return 0;
}
