#pragma once

#include <cstdint>
#include <string>

namespace tau::exec {

// What the evidence of a job records about the machine it ran on.
struct HostFacts {
  std::string hostname;
  std::string os;      // PRETTY_NAME of /etc/os-release
  std::string kernel;  // uname -r
  std::string arch;    // uname -m
  std::string cpu_model;
  int64_t cpus = 0;          // online CPUs
  int64_t memory_bytes = 0;  // MemTotal
  std::string python3;       // `python3 --version`, "" when absent
};

// Reads them from /etc/os-release, uname, /proc and python3.
HostFacts ReadHostFacts();

}  // namespace tau::exec
