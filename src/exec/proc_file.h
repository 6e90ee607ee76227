#pragma once

#include <optional>
#include <string>

namespace tau::exec {

// Reads a whole /proc (or sysfs) file with open(2) and read(2): no stream
// buffers or locale, since the control loop reads some of these on every
// attempt's start (a process's start time, the kernel's OOM kill count).
// nullopt when the file cannot be opened or read. Such files report a size
// of 0, so it reads until end of file, up to `limit` bytes.
std::optional<std::string> ReadProcFile(const std::string& path, size_t limit = size_t{1} << 20);

}  // namespace tau::exec
