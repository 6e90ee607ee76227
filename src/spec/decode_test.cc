#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "spec/test_util.h"

namespace tau::spec {
namespace {

using ::testing::HasSubstr;
using testing::LoadText;

constexpr char kSeed[] = R"(schema_version: 1
name: aks-gpu-quickstart
run:
  entrypoint: train.py
  workload_kind: rayjob
compute:
  gpus: 1
  workers: 1
  cpus: 16
  memory: 64Gi
runtime:
  image: mcr.microsoft.com/aks/ai-runtime/ray:py3.12-ray2.56.0-cuda13.0
  pip:
    - torch>=2.4.0
)";

TEST(DecodeTest, AcceptsTheSeedExampleVerbatim) {
  auto loaded = LoadText(kSeed);
  ASSERT_TRUE(loaded.result.ok()) << loaded.diagnostics;
  EXPECT_EQ(loaded.diagnostics, "");
  const JobSpec& s = loaded.result->spec;
  EXPECT_EQ(s.name, "aks-gpu-quickstart");
  EXPECT_EQ(s.run.workload_kind, WorkloadKind::kRayJob);
  EXPECT_EQ(s.run.launcher, Launcher::kPython);
  EXPECT_EQ(s.compute.gpus, 1);
  EXPECT_EQ(s.compute.cpus, Quantity::FromUnits(16));
  EXPECT_EQ(s.compute.memory.ToString(), "64Gi");
  EXPECT_EQ(s.runtime.pip, std::vector<std::string>{"torch>=2.4.0"});
}

TEST(DecodeTest, AppliesDefaults) {
  auto loaded = LoadText("schema_version: 1\nname: a\nrun:\n  entrypoint: echo hi\n");
  ASSERT_TRUE(loaded.result.ok()) << loaded.diagnostics;
  const JobSpec& s = loaded.result->spec;
  EXPECT_EQ(s.workspace, "default");
  EXPECT_EQ(s.queue, "default");
  EXPECT_EQ(s.run.workload_kind, WorkloadKind::kJob);
  EXPECT_EQ(s.run.launcher, Launcher::kCommand);
  EXPECT_EQ(s.run.working_dir, ".");
  EXPECT_EQ(s.compute.gpus, 0);
  EXPECT_EQ(s.compute.workers, 1);
  EXPECT_EQ(s.compute.cpus.ToString(), "1");
  EXPECT_EQ(s.compute.memory.ToString(), "2Gi");
  EXPECT_EQ(s.compute.gpu_class, "any");
  EXPECT_EQ(s.compute.processes_per_worker, 1);
  EXPECT_EQ(s.checkpoint.keep, 3);
  EXPECT_EQ(s.checkpoint.grace_period, std::chrono::seconds(30));
  EXPECT_EQ(s.retry.max_restarts, 0);
  EXPECT_EQ(s.retry.backoff, std::chrono::seconds(10));
  EXPECT_EQ(s.retry.max_backoff, std::chrono::minutes(5));
  EXPECT_FALSE(s.limits.max_runtime.has_value());
}

TEST(DecodeTest, ProcessesPerWorkerDefaultsToGpus) {
  auto loaded = LoadText(
      "schema_version: 1\nname: a\nrun: {entrypoint: t.py, launcher: torchrun}\ncompute: {gpus: 4}\n");
  ASSERT_TRUE(loaded.result.ok()) << loaded.diagnostics;
  EXPECT_EQ(loaded.result->spec.compute.processes_per_worker, 4);
}

TEST(DecodeTest, DecodesEveryField) {
  auto loaded = LoadText(R"(schema_version: 1
name: full
workspace: vision
queue: training
priority: high
run:
  workload_kind: job
  entrypoint: train.py
  args: [--lr, 3e-4, --epochs, 10]
  launcher: torchrun
  working_dir: src
  exclude: [data/, "*.ckpt"]
compute:
  gpus: 2
  workers: 4
  cpus: 500m
  memory: 1.5Gi
  gpu_class: h200-141gb
  processes_per_worker: 2
runtime:
  image: nvcr.io/nvidia/pytorch:24.08-py3
  pip: [numpy==2.1.0]
  env:
    HF_HOME: /data/hf
    OMP_NUM_THREADS: 4
checkpoint: {keep: 5, grace_period: 2m}
retry:
  max_restarts: 3
  on: [oom, "exit:137", preempted]
  backoff: 30s
  max_backoff: 10m
limits: {max_runtime: 12h}
experiment:
  project: llama
  tags: {arm: baseline}
depends_on: [preprocess, j_abcdefgh23]
)");
  ASSERT_TRUE(loaded.result.ok()) << loaded.diagnostics;
  const JobSpec& s = loaded.result->spec;
  EXPECT_EQ(s.priority, "high");
  EXPECT_EQ(s.run.args, (std::vector<std::string>{"--lr", "3e-4", "--epochs", "10"}));
  EXPECT_EQ(s.run.launcher, Launcher::kTorchrun);
  EXPECT_EQ(s.run.working_dir, "src");
  EXPECT_EQ(loaded.result->working_dir, "/work/src");
  EXPECT_EQ(s.compute.cpus.milli(), 500);
  EXPECT_EQ(s.compute.memory.milli(), int64_t{1536} * 1024 * 1024 * 1000);
  EXPECT_EQ(s.runtime.env[1], (std::pair<std::string, std::string>{"OMP_NUM_THREADS", "4"}));
  EXPECT_EQ(s.checkpoint.keep, 5);
  ASSERT_EQ(s.retry.on.size(), 3u);
  EXPECT_EQ(s.retry.on[1].kind, RetryCondition::Kind::kExitCode);
  EXPECT_EQ(s.retry.on[1].exit_code, 137);
  EXPECT_EQ(*s.limits.max_runtime, std::chrono::hours(12));
  EXPECT_EQ(s.experiment.tags.size(), 1u);
  EXPECT_EQ(s.depends_on.size(), 2u);
}

TEST(DecodeTest, ReportsEveryErrorWithItsPosition) {
  auto loaded = LoadText(R"(schema_version: 1
name: Bad_Name
run:
  entrypoint: train.py
  launchr: torchrun
compute:
  gpus: two
  memory: 64GB
)");
  EXPECT_FALSE(loaded.result.ok());
  EXPECT_THAT(loaded.diagnostics, HasSubstr("job.yaml:2:7: error: name: \"Bad_Name\" has an uppercase"));
  EXPECT_THAT(loaded.diagnostics,
              HasSubstr("job.yaml:5:3: error: unknown field \"launchr\" in run; did you mean \"launcher\"?"));
  EXPECT_THAT(loaded.diagnostics, HasSubstr("job.yaml:7:9: error: compute.gpus: expected an integer, got \"two\""));
  EXPECT_THAT(loaded.diagnostics, HasSubstr("job.yaml:8:11: error: compute.memory: \"64GB\": unknown suffix \"GB\""));
}

// An explicit tag says what type the author meant; one that is not the
// field's type is an error even when the text would parse as that type.
TEST(DecodeTest, TagsThatContradictTheFieldTypeAreErrors) {
  auto err = [](const std::string& body) {
    return LoadText("schema_version: 1\nname: a\nrun: {entrypoint: x.py}\n" + body).diagnostics;
  };
  EXPECT_THAT(err("compute:\n  gpus: !!float 1\n"),
              HasSubstr("job.yaml:5:9: error: compute.gpus: expected an integer, but the value is tagged !!float"));
  EXPECT_THAT(err("compute:\n  cpus: !!bool true\n"),
              HasSubstr("job.yaml:5:9: error: compute.cpus: expected a quantity, but the value is tagged !!bool"));
  EXPECT_THAT(err("retry:\n  max_restarts: !!str 2\n"),
              HasSubstr("job.yaml:5:17: error: retry.max_restarts: expected an integer, but the value is tagged !!str"));
  EXPECT_EQ(err("compute:\n  gpus: !!int 1\n  cpus: !!float 1.5\n"), "");
}

TEST(DecodeTest, CheckpointLayoutAndIncludeGlobs) {
  auto loaded = LoadText(
      "schema_version: 1\nname: a\nrun: {entrypoint: x.py}\n"
      "checkpoint:\n  layout: deepspeed\n  include: [\"global_step*\", \"best\"]\n");
  ASSERT_TRUE(loaded.result.ok()) << loaded.diagnostics;
  EXPECT_EQ(loaded.result->spec.checkpoint.layout, CheckpointLayout::kDeepSpeed);
  EXPECT_EQ(loaded.result->spec.checkpoint.include, (std::vector<std::string>{"global_step*", "best"}));
  auto err = [](const std::string& body) {
    return LoadText("schema_version: 1\nname: a\nrun: {entrypoint: x.py}\n" + body).diagnostics;
  };
  EXPECT_THAT(err("checkpoint:\n  include: [\"ckpt/*.pt\"]\n"),
              HasSubstr("job.yaml:5:13: error: checkpoint.include[0]: \"ckpt/*.pt\" has a '/'; a pattern names a file "
                        "or folder directly in TAU_CHECKPOINT_DIR"));
  EXPECT_THAT(err("checkpoint:\n  include: [\"\"]\n"), HasSubstr("checkpoint.include[0]: empty pattern"));
  EXPECT_THAT(err("checkpoint:\n  layout: hugginface\n"),
              HasSubstr("checkpoint.layout: \"hugginface\" is not valid; expected one of"));
  EXPECT_THAT(err("checkpoint:\n  layout: hugginface\n"), HasSubstr("did you mean \"huggingface\"?"));
}

TEST(DecodeTest, SignalRetryConditions) {
  auto loaded = LoadText("schema_version: 1\nname: a\nrun: {entrypoint: x.py}\n"
                         "retry:\n  on: [\"signal:KILL\", \"signal:SIGSEGV\", \"signal:6\"]\n");
  ASSERT_TRUE(loaded.result.ok()) << loaded.diagnostics;
  std::vector<std::string> on;
  for (const auto& c : loaded.result->spec.retry.on) on.push_back(c.ToString());
  EXPECT_EQ(on, (std::vector<std::string>{"signal:KILL", "signal:SEGV", "signal:ABRT"}));
  auto err = [](const std::string& body) {
    return LoadText("schema_version: 1\nname: a\nrun: {entrypoint: x.py}\n" + body).diagnostics;
  };
  EXPECT_THAT(err("retry:\n  on: [\"signal:KILLL\"]\n"),
              HasSubstr("retry.on: \"signal:KILLL\" is not a retry condition"));
  EXPECT_THAT(err("retry:\n  on: [\"signal:65\"]\n"), HasSubstr("signal:<number> from 1 to 64"));
}

TEST(DecodeTest, ANulInAnyStringIsAnErrorAtItsValue) {
  auto err = [](const std::string& body) { return LoadText("schema_version: 1\nname: a\n" + body).diagnostics; };
  EXPECT_THAT(err("run:\n  entrypoint: echo\n  args: [\"a\\0b\", c]\n"),
              HasSubstr("job.yaml:5:10: error: run.args[0]: holds a NUL character (\\0, at character 2 of the value)"));
  EXPECT_THAT(err("run: {entrypoint: \"echo\\0\"}\n"), HasSubstr("run.entrypoint: holds a NUL character"));
  EXPECT_THAT(err("run: {entrypoint: echo}\nruntime:\n  env:\n    FOO: \"x\\0y\"\n"),
              HasSubstr("runtime.env.FOO: holds a NUL character"));
}

TEST(DecodeTest, AMemoryWithoutAUnitIsRefusedTaggedOrNotWithAHintThatFits) {
  auto err = [](const std::string& body) {
    return LoadText("schema_version: 1\nname: a\nrun: {entrypoint: x.py}\ncompute:\n  memory: " + body + "\n")
        .diagnostics;
  };
  EXPECT_THAT(err("!!int 64"), HasSubstr("compute.memory: 64 has no unit, which would mean 64 bytes; did you mean 64Gi?"));
  EXPECT_THAT(err("1e9"), HasSubstr("compute.memory: 1e9 has no unit, which would mean 1e9 bytes; write it with a unit"));
  EXPECT_THAT(err("1e9"), Not(HasSubstr("1e9Gi")));
  EXPECT_EQ(err("\"1073741824\""), "") << "a quoted byte count is meant";
}

TEST(DecodeTest, ATagNameIsCountedInCharactersNotBytes) {
  auto err = [](const std::string& name) {
    return LoadText("schema_version: 1\nname: a\nrun: {entrypoint: x.py}\nexperiment:\n  tags:\n    " + name +
                    ": v\n")
        .diagnostics;
  };
  std::string accents;
  for (int i = 0; i < 63; ++i) accents += "\xC3\xA9";  // 63 characters, 126 bytes
  EXPECT_EQ(err(accents), "");
  EXPECT_THAT(err(accents + "\xC3\xA9"), HasSubstr("a tag name is 1 to 63 printable characters"));
}

TEST(DecodeTest, SuggestsTheRightSectionForMisplacedFields) {
  auto loaded = LoadText("schema_version: 1\nname: a\ngpus: 2\nrun: {entrypoint: x}\n");
  EXPECT_THAT(loaded.diagnostics,
              HasSubstr("job.yaml:3:1: error: unknown field \"gpus\" at the top level; did you mean "
                        "\"compute.gpus\"?"));
}

TEST(DecodeTest, CrossFieldRules) {
  auto err = [](const std::string& body) {
    return LoadText("schema_version: 1\nname: a\n" + body).diagnostics;
  };
  EXPECT_THAT(err("run: {entrypoint: ./go.sh, launcher: torchrun}\n"),
              HasSubstr("launcher torchrun runs a Python file"));
  EXPECT_THAT(err("run: {entrypoint: t.py, launcher: torchrun, workload_kind: rayjob}\n"),
              HasSubstr("torchrun cannot launch a rayjob"));
  EXPECT_THAT(err("run: {entrypoint: t.py}\ncompute: {workers: 2}\n"),
              HasSubstr("2 workers need launcher torchrun or command"));
  EXPECT_THAT(err("run: {entrypoint: echo, launcher: python}\n"),
              HasSubstr("launcher python runs a .py file"));
  EXPECT_THAT(err("run: {entrypoint: t.py}\ncompute: {processes_per_worker: 2}\n"),
              HasSubstr("applies only to launcher torchrun"));
  EXPECT_THAT(err("run: {entrypoint: t.py}\nretry: {backoff: 10m, max_backoff: 1m}\n"),
              HasSubstr("retry.max_backoff (1m) is shorter than retry.backoff (10m)"));
  EXPECT_THAT(err("run: {entrypoint: t.py}\nruntime: {env: {TAU_JOB_ID: x}}\n"),
              HasSubstr("TAU_JOB_ID is set by TauGrid"));
  // Several workers are fine with command, torchrun and rayjob.
  EXPECT_EQ(err("run: {entrypoint: ./go.sh}\ncompute: {workers: 2}\n"), "");
  EXPECT_EQ(err("run: {entrypoint: t.py, launcher: torchrun}\ncompute: {workers: 2}\n"), "");
  EXPECT_EQ(err("run: {entrypoint: t.py, workload_kind: rayjob}\ncompute: {workers: 2}\n"), "");
}

TEST(DecodeTest, WarningsDoNotFail) {
  auto loaded = LoadText(
      "schema_version: 1\nname: a\nrun: {entrypoint: t.py}\nretry: {on: [oom]}\n");
  EXPECT_TRUE(loaded.result.ok());
  EXPECT_THAT(loaded.diagnostics,
              HasSubstr("job.yaml:4:14: warning: retry.on: \"oom\" is never retried because "
                        "retry.max_restarts is 0"));
}

TEST(DecodeTest, RayJobNamesAreShorter) {
  std::string name(48, 'a');
  auto loaded = LoadText("schema_version: 1\nname: " + name +
                         "\nrun: {entrypoint: t.py, workload_kind: rayjob}\n");
  EXPECT_THAT(loaded.diagnostics, HasSubstr("at most 47 characters"));
}

}  // namespace
}  // namespace tau::spec
