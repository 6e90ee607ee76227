#include "common/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace tau {

Result<CapturedRun> RunCapture(const std::vector<std::string>& argv, const std::string& cwd, size_t max_output) {
  if (argv.empty()) return InvalidArgumentError("no command to run");
  int out[2];
  int ready[2];  // closed on exec; carries errno when exec fails
  if (::pipe2(out, O_CLOEXEC) != 0) return ErrnoError(errno, "pipe");
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return ErrnoError(errno, "pipe");
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    for (int fd : {out[0], out[1], ready[0], ready[1]}) ::close(fd);
    return ErrnoError(err, "fork");
  }
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(out[1], 1);
    ::dup2(devnull, 2);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      int err = errno;
      (void)!::write(ready[1], &err, sizeof err);
      ::_exit(127);
    }
    ::execvp(args[0], args.data());
    int err = errno;
    (void)!::write(ready[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(ready[1]);
  int exec_errno = 0;
  bool exec_failed = ::read(ready[0], &exec_errno, sizeof exec_errno) == static_cast<ssize_t>(sizeof exec_errno);
  ::close(ready[0]);
  CapturedRun run;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t room = max_output > run.out.size() ? max_output - run.out.size() : 0;
    if (static_cast<size_t>(n) > room) run.truncated = true;
    run.out.append(buf, std::min(room, static_cast<size_t>(n)));
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (exec_failed) return ErrnoError(exec_errno, fmt::format("cannot run {}", argv[0]));
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

}  // namespace tau
