// Gangs on the local executor with real processes: ranks rendezvous over
// TCP at MASTER_ADDR:MASTER_PORT using the env contract, the first failure
// stops the rest, and torchrun runs with PyTorch from the project's venv.

#include <gmock/gmock.h>

#include <cstdlib>

#include "daemon_fixture.h"
#include "support/project_venv.h"

namespace tau::testing {
namespace {

using ::testing::HasSubstr;

class GangTest : public DaemonTest {};

constexpr char kRendezvous[] = R"(import os, socket, sys, time
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
assert os.environ["NODE_RANK"] == str(rank) == os.environ["TAU_WORKER_INDEX"], "worker index"
assert os.environ["LOCAL_RANK"] == "0" and os.environ["LOCAL_WORLD_SIZE"] == "1", "local contract"
if rank == 0:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((addr, port))
    server.listen()
    met = set()
    while len(met) < world - 1:
        conn, _ = server.accept()
        met.add(int(conn.recv(16).decode()))
        conn.close()
    print(f"rank 0 met ranks {sorted(met)} of {world}")
else:
    for _ in range(400):
        try:
            conn = socket.create_connection((addr, port))
            break
        except OSError:
            time.sleep(0.05)
    conn.sendall(str(rank).encode())
    conn.close()
    print(f"rank {rank} reached {addr}:{port}")
)";

TEST_F(GangTest, RanksRendezvousOverTcpWithTheEnvContract) {
  WriteFile("rendezvous.py", kRendezvous);
  std::string spec = WriteSpec("gang.yaml",
      "schema_version: 1\nname: gang\nrun:\n  entrypoint: python3 rendezvous.py\ncompute:\n  workers: 3\n  cpus: 100m\n  memory: 128Mi\n");
  CommandResult r = Tau({"run", "-f", spec});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("[rank 0] rank 0 met ranks [1, 2] of 3\n"));
  EXPECT_THAT(r.out, HasSubstr("[rank 1] rank 1 reached 127.0.0.1:"));
  EXPECT_THAT(r.out, HasSubstr("[rank 2] rank 2 reached 127.0.0.1:"));
  EXPECT_THAT(Tau({"logs", "gang", "--rank", "2"}).out, HasSubstr("rank 2 reached"));
  nlohmann::json job = Job("gang");
  EXPECT_EQ(job["state"], "Succeeded");
  EXPECT_EQ(job["resources"]["workers"], 3);
  EXPECT_EQ(Tau({"logs", "gang", "--rank", "3"}).exit_code, 1);
}

TEST_F(GangTest, TheFirstFailureStopsTheOtherRanks) {
  std::string spec = WriteSpec("fail.yaml",
      "schema_version: 1\nname: gang-fail\nrun:\n  entrypoint: 'if [ \"$RANK\" = 1 ]; then sleep 0.3; exit 3; fi; "
      "trap \"echo rank $RANK stopped; exit 143\" TERM; while :; do sleep 0.05; done'\n"
      "compute:\n  workers: 3\n  cpus: 100m\n  memory: 64Mi\ncheckpoint:\n  grace_period: 10s\n");
  CommandResult r = Tau({"run", "-f", spec});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("[rank 0] rank 0 stopped"));
  EXPECT_THAT(r.out, HasSubstr("[rank 2] rank 2 stopped"));
  nlohmann::json job = Job("gang-fail");
  EXPECT_EQ(job["state"], "Failed");
  EXPECT_EQ(job["reason"], "ExitCode");
}

// torchrun from the project's venv (scripts/install-deps), first on the
// daemon's PATH as an activated environment would put it.
class TorchrunGangTest : public DaemonTest {
 protected:
  void BeforeStart() override {
    if (std::string why = ProjectVenvLacks("torch"); !why.empty()) {
      GTEST_SKIP() << "PyTorch is not installed: " << why;
    }
    const char* path = std::getenv("PATH");
    extra_env_["PATH"] = ProjectVenv() + "/bin:" + (path ? path : "/usr/bin:/bin");
  }
};

TEST_F(TorchrunGangTest, TorchrunRunsADistributedJobOnEveryWorker) {
  CommandResult r = Tau({"run", "-f", SourcePath("examples/torchrun-multi.yaml"), "--set", "compute.gpus=0",
                         "--set", "compute.cpus=500m", "--set", "compute.memory=1Gi", "--set",
                         "compute.processes_per_worker=1", "--set", "run.args=[--steps, \"3\"]"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("world 2"));
}

}  // namespace
}  // namespace tau::testing
