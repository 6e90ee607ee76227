// The floor under any job runner: posix_spawn + waitpid of /bin/true, N
// times in a row. Prints one JSON object: {"n", "seconds", "per_sec",
// "p50_ms", "p99_ms"}.
//   tau-bench-spawn-floor [N]

#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

extern char** environ;

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 500;
  std::vector<double> ms;
  char prog[] = "/bin/true";
  char* args[] = {prog, nullptr};
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    pid_t pid;
    if (posix_spawn(&pid, prog, nullptr, nullptr, args, environ) != 0) return 1;
    int status;
    waitpid(pid, &status, 0);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::sort(ms.begin(), ms.end());
  std::printf("{\"n\": %d, \"seconds\": %.3f, \"per_sec\": %.1f, \"p50_ms\": %.3f, \"p99_ms\": %.3f}\n", n, seconds,
              n / seconds, ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 99 / 100)]);
  return 0;
}
