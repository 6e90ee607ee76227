#include "spec/command.h"

#include <fmt/format.h>

#include "common/strings.h"

namespace tau::spec {

std::vector<std::string> BuildWorkerCommand(const JobSpec& spec, const Rendezvous& r) {
  const RunSpec& run = spec.run;
  std::vector<std::string> argv;
  switch (run.launcher) {
    case Launcher::kPython:
      argv = {"python3", run.entrypoint};
      break;
    case Launcher::kTorchrun:
      argv = {"python3",          "-m",
              "torch.distributed.run",
              "--nnodes",         r.nnodes,
              "--node_rank",      r.node_rank,
              "--nproc_per_node", fmt::format("{}", spec.compute.processes_per_worker),
              "--master_addr",    r.master_addr,
              "--master_port",    r.master_port,
              run.entrypoint};
      break;
    case Launcher::kCommand:
      // Without args "$@" would add nothing, and appending it would break
      // entrypoints that end in a compound command ("...; done").
      argv = {"/bin/sh", "-c", run.args.empty() ? run.entrypoint : run.entrypoint + " \"$@\"", "tau"};
      break;
  }
  argv.insert(argv.end(), run.args.begin(), run.args.end());
  return argv;
}

std::string BuildRayEntrypoint(const JobSpec& spec) {
  const RunSpec& run = spec.run;
  std::string line = run.launcher == Launcher::kPython ? "python3 " + ShellQuote(run.entrypoint)
                                                       : run.entrypoint;
  for (const std::string& arg : run.args) {
    line += ' ';
    line += ShellQuote(arg);
  }
  return line;
}

}  // namespace tau::spec
