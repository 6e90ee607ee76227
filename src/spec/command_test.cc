#include "spec/command.h"

#include <gtest/gtest.h>

#include "spec/test_util.h"

namespace tau::spec {
namespace {

using V = std::vector<std::string>;

JobSpec Spec(const std::string& run, const std::string& extra = "") {
  auto loaded = testing::LoadText("schema_version: 1\nname: a\nrun: " + run + "\n" + extra);
  EXPECT_TRUE(loaded.result.ok()) << loaded.diagnostics;
  return loaded.result->spec;
}

TEST(CommandTest, PythonFileRunsWithPython3) {
  EXPECT_EQ(BuildWorkerCommand(Spec("{entrypoint: train.py, args: [--lr, '0.1']}"), {}),
            (V{"python3", "train.py", "--lr", "0.1"}));
}

TEST(CommandTest, CommandRunsThroughShellWithArgsAsWords) {
  EXPECT_EQ(BuildWorkerCommand(Spec("{entrypoint: 'echo $HOME | wc', args: [a b, c]}"), {}),
            (V{"/bin/sh", "-c", "echo $HOME | wc \"$@\"", "tau", "a b", "c"}));
}

TEST(CommandTest, TorchrunGetsTheRendezvousFlags) {
  Rendezvous r{"4", "$(NODE_RANK)", "job-0.job", "29500"};
  EXPECT_EQ(BuildWorkerCommand(Spec("{entrypoint: t.py, launcher: torchrun, args: [-x]}",
                                    "compute: {gpus: 8}\n"),
                               r),
            (V{"python3", "-m", "torch.distributed.run", "--nnodes", "4", "--node_rank",
               "$(NODE_RANK)", "--nproc_per_node", "8", "--master_addr", "job-0.job",
               "--master_port", "29500", "t.py", "-x"}));
}

TEST(CommandTest, RayEntrypointIsOneShellLine) {
  EXPECT_EQ(BuildRayEntrypoint(Spec("{entrypoint: train.py, workload_kind: rayjob, args: [a b]}")),
            "python3 train.py 'a b'");
  EXPECT_EQ(BuildRayEntrypoint(Spec("{entrypoint: ./go.sh --x, workload_kind: rayjob}")),
            "./go.sh --x");
}

}  // namespace
}  // namespace tau::spec
