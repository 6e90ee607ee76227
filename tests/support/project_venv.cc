#include "support/project_venv.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/subprocess.h"

namespace tau::testing {

std::string ProjectVenv() {
  const char* venv = std::getenv("TAU_TEST_VENV");
  return venv && *venv ? venv : SourcePath(".venv");
}

std::string ProjectVenvProgram(const std::string& name) { return ProjectVenv() + "/bin/" + name; }

namespace {

// The last lines of what install-deps wrote when it could not install.
std::string InstallLogTail() {
  std::ifstream in(ProjectVenv() + "/install.log");
  if (!in) return "";
  std::stringstream all;
  all << in.rdbuf();
  std::string text = all.str();
  constexpr size_t kTail = 1200;
  if (text.size() > kTail) text = "..." + text.substr(text.size() - kTail);
  return "; install-deps could not install it:\n" + text;
}

}  // namespace

std::string ProjectVenvLacks(const std::string& modules) {
  const std::string python = ProjectVenvProgram("python");
  const std::string how = " (scripts/install-deps installs the pinned scripts/venv-lock.txt there)";
  if (::access(python.c_str(), X_OK) != 0) {
    return python + " does not exist" + how + InstallLogTail();
  }
  CommandResult r = RunCommand({python, "-c", "import " + modules});
  if (r.exit_code == 0) return "";
  std::string last = r.err;
  while (!last.empty() && last.back() == '\n') last.pop_back();
  last = last.substr(last.rfind('\n') + 1);
  return "cannot import " + modules + " with " + python + ": " + last + how + InstallLogTail();
}

}  // namespace tau::testing
