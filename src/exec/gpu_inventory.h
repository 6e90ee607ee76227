#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace tau::exec {

// One GPU of the machine.
struct GpuDevice {
  int index = 0;        // NVML/CUDA index
  std::string uuid;     // "GPU-..."; opaque
  std::string model;    // "NVIDIA H200"
  int64_t memory_mib = 0;
};

// Where the machine's GPUs come from. The NVML implementation arrives with
// GPU health monitoring; until then an operator may list them in a file.
class GpuInventory {
 public:
  virtual ~GpuInventory() = default;
  virtual Result<std::vector<GpuDevice>> List() = 0;
};

// Reads TAU_HOME/gpus.json (docs/control-plane.md#gpus):
//   {"gpus": [{"uuid": "GPU-…", "model": "NVIDIA H200", "memory_mib": 143771}, …]}
// Indexes are the positions in the list unless given. A missing file means
// no GPUs; a malformed one is an error naming the problem.
class GpuConfigFile final : public GpuInventory {
 public:
  explicit GpuConfigFile(std::string path) : path_(std::move(path)) {}
  Result<std::vector<GpuDevice>> List() override;

 private:
  std::string path_;
};

}  // namespace tau::exec
