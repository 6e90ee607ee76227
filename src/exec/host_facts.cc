#include "exec/host_facts.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>

#include "common/subprocess.h"

namespace tau::exec {
namespace {

std::string Unquote(std::string v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
  return v;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

}  // namespace

HostFacts ReadHostFacts() {
  HostFacts h;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) h.hostname = name;
  struct utsname u;
  if (::uname(&u) == 0) {
    h.kernel = u.release;
    h.arch = u.machine;
  }
  std::ifstream os("/etc/os-release");
  for (std::string line; std::getline(os, line);) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) h.os = Unquote(line.substr(12));
  }
  std::ifstream cpu("/proc/cpuinfo");
  for (std::string line; std::getline(cpu, line);) {
    if (line.rfind("model name", 0) == 0 && h.cpu_model.empty()) {
      auto colon = line.find(':');
      if (colon != std::string::npos) h.cpu_model = Trim(line.substr(colon + 1));
    }
  }
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  h.cpus = n > 0 ? n : 0;
  std::ifstream mem("/proc/meminfo");
  for (std::string line; std::getline(mem, line);) {
    if (line.rfind("MemTotal:", 0) == 0) h.memory_bytes = std::atoll(line.c_str() + 9) * 1024;
  }
  if (auto py = RunCapture({"python3", "--version"}); py.ok() && py->exit_code == 0) h.python3 = Trim(py->out);
  return h;
}

}  // namespace tau::exec
