#pragma once

#include <string>
#include <vector>

#include "spec/job_spec.h"

namespace tau::spec {

// How a torchrun worker finds its gang. Values are passed through as text,
// so the Kubernetes renderer can use "$(NODE_RANK)" style references.
struct Rendezvous {
  std::string nnodes = "1";
  std::string node_rank = "0";
  std::string master_addr = "127.0.0.1";
  std::string master_port = "29500";
};

// The argv one worker of a workload_kind job runs:
//   python:   python3 ENTRYPOINT ARGS...
//   command:  /bin/sh -c 'ENTRYPOINT "$@"' tau ARGS...  (just ENTRYPOINT
//             when there are no args)
//   torchrun: python3 -m torch.distributed.run --nnodes N --node_rank I
//             --nproc_per_node P --master_addr A --master_port PORT ENTRYPOINT ARGS...
std::vector<std::string> BuildWorkerCommand(const JobSpec& spec, const Rendezvous& rendezvous);

// The shell command line `ray job submit` runs for a rayjob:
// "python3 train.py --lr 0.1" or "ENTRYPOINT ARGS..." with args shell-quoted.
std::string BuildRayEntrypoint(const JobSpec& spec);

}  // namespace tau::spec
