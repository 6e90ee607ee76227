#pragma once

#include <string>
#include <vector>

namespace tau::server {

// runtime.pip on the local executor: the attempt's command is wrapped so
// that, before the job starts, it finds or builds a virtual environment for
// its requirements and runs inside it. Environments live in
// TAU_HOME/venvs/KEY, KEY being a digest of the python3 version and the
// requirements, so jobs with the same list share one; building takes a
// lock, so two jobs never build the same one at once. pip's output goes to
// the job's log. When the build fails, the wrapper creates
// `setup_failed_marker` and exits 1; the attempt then ends SetupFailed.
struct PipSetup {
  std::string requirements_file;  // written by the daemon, one requirement per line
  std::string venv_root;          // TAU_HOME/venvs
  std::string setup_failed_marker;
  // "" : the environment is built from python3 on PATH. Otherwise a Python
  // whose packages the environment also sees (Ray's, for a local rayjob);
  // it is part of KEY, and pip installs only what that Python lacks.
  std::string base_python;
};

// `argv` run inside the environment: /bin/sh -c SCRIPT tau-pip ARGV...
std::vector<std::string> WrapWithPipSetup(const PipSetup& setup, const std::vector<std::string>& argv);

}  // namespace tau::server
