#include "render/render.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "spec/load.h"
#include "spec/test_util.h"

namespace tau::render {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

spec::JobSpec Spec(const std::string& body) {
  auto loaded = spec::testing::LoadText("schema_version: 1\n" + body);
  EXPECT_TRUE(loaded.result.ok()) << loaded.diagnostics;
  return loaded.result->spec;
}

json FindEnv(const json& env, const std::string& name) {
  for (const json& e : env) {
    if (e["name"] == name) return e;
  }
  return nullptr;
}

TEST(RenderTest, CpuJobIsASuspendedQueuedJob) {
  auto objects = RenderObjects(Spec("name: a\nqueue: q\nrun: {entrypoint: t.py, args: [x]}\n"), {});
  ASSERT_EQ(objects.size(), 1u);
  const json& job = objects[0];
  EXPECT_EQ(job["apiVersion"], "batch/v1");
  EXPECT_EQ(job["kind"], "Job");
  EXPECT_EQ(job["metadata"]["name"], "a");
  EXPECT_FALSE(job["metadata"].contains("generateName"));
  EXPECT_EQ(job["metadata"]["namespace"], "default");
  EXPECT_EQ(job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "q");
  EXPECT_FALSE(job["metadata"]["labels"].contains("kueue.x-k8s.io/priority-class"));
  EXPECT_EQ(job["metadata"]["labels"]["taugrid.io/spec-sha256"].get<std::string>().size(), 16u);
  EXPECT_EQ(job["metadata"]["annotations"]["taugrid.io/spec-sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(job["spec"]["suspend"], true);
  EXPECT_EQ(job["spec"]["backoffLimit"], 0);
  EXPECT_TRUE(job["spec"]["ttlSecondsAfterFinished"].is_number_integer());
  const json& pod = job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["restartPolicy"], "Never");
  EXPECT_FALSE(pod.contains("tolerations"));
  const json& c = pod["containers"][0];
  EXPECT_EQ(c["name"], "main");
  EXPECT_EQ(c["image"], kDefaultJobImage);
  EXPECT_EQ(c["command"], json({"python3", "t.py", "x"}));
  EXPECT_EQ(c["resources"]["requests"], c["resources"]["limits"]);
  EXPECT_EQ(c["resources"]["requests"]["cpu"], "1");
  EXPECT_EQ(c["resources"]["requests"]["memory"], "2Gi");
  EXPECT_FALSE(c["resources"]["requests"].contains("nvidia.com/gpu"));
  EXPECT_EQ(FindEnv(c["env"], "TAU_JOB_NAME")["value"], "a");
}

TEST(RenderTest, GpuJobToleratesGpusAndSelectsItsClass) {
  auto objects = RenderObjects(
      Spec("name: g\npriority: high\nrun: {entrypoint: t.py}\ncompute: {gpus: 2, gpu_class: a100-80gb}\n"
           "limits: {max_runtime: 1h}\nruntime: {env: {A: '1'}, pip: [torch]}\n"),
      {.object_name = "", .job_id = "j_abcdefghij"});
  const json& job = objects[0];
  EXPECT_EQ(job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"], "high");
  EXPECT_EQ(job["metadata"]["labels"]["taugrid.io/job-id"], "j_abcdefghij");
  EXPECT_EQ(job["spec"]["activeDeadlineSeconds"], 3600);
  const json& pod = job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["tolerations"][0]["key"], "nvidia.com/gpu");
  EXPECT_EQ(pod["nodeSelector"]["taugrid.io/gpu-class"], "a100-80gb");
  const json& c = pod["containers"][0];
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"], "2");
  EXPECT_EQ(FindEnv(c["env"], "A")["value"], "1");
  EXPECT_EQ(FindEnv(c["env"], "TAU_JOB_ID")["value"], "j_abcdefghij");
  EXPECT_EQ(c["command"][0], "/bin/sh");
  EXPECT_NE(c["command"][2].get<std::string>().find("pip install"), std::string::npos);
  EXPECT_EQ(c["command"][4], "python3");
}

TEST(RenderTest, TorchrunGangIsAnIndexedJobWithAHeadlessService) {
  auto objects = RenderObjects(
      Spec("name: ddp\nrun: {entrypoint: t.py, launcher: torchrun}\ncompute: {workers: 3, gpus: 4}\n"), {});
  ASSERT_EQ(objects.size(), 2u);
  const json& svc = objects[0];
  EXPECT_EQ(svc["kind"], "Service");
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc["spec"]["ports"][0]["port"], 29500);
  EXPECT_FALSE(svc["metadata"]["labels"].contains("kueue.x-k8s.io/queue-name"));
  const json& job = objects[1];
  EXPECT_EQ(job["spec"]["completionMode"], "Indexed");
  EXPECT_EQ(job["spec"]["completions"], 3);
  EXPECT_EQ(job["spec"]["parallelism"], 3);
  const json& pod = job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["subdomain"], "ddp");
  const json& env = pod["containers"][0]["env"];
  EXPECT_EQ(FindEnv(env, "MASTER_ADDR")["value"], "ddp-0.ddp");
  EXPECT_EQ(FindEnv(env, "MASTER_PORT")["value"], "29500");
  EXPECT_EQ(FindEnv(env, "WORLD_SIZE")["value"], "12");
  EXPECT_TRUE(FindEnv(env, "NODE_RANK")["valueFrom"]["fieldRef"].is_object());
  const json& cmd = pod["containers"][0]["command"];
  EXPECT_EQ(cmd[2], "torch.distributed.run");
  EXPECT_EQ(cmd[4], "3");
  EXPECT_EQ(cmd[6], "$(NODE_RANK)");
  EXPECT_EQ(cmd[8], "4");
}

TEST(RenderTest, RayJobHasACpuOnlyHeadAndOneWorkerGroup) {
  auto objects = RenderObjects(
      Spec("name: r\nrun: {entrypoint: train.py, workload_kind: rayjob}\ncompute: {workers: 2, gpus: 1}\n"
           "runtime: {pip: [torch>=2.4.0], env: {K: v}}\n"),
      {});
  ASSERT_EQ(objects.size(), 1u);
  const json& rj = objects[0];
  EXPECT_EQ(rj["apiVersion"], "ray.io/v1");
  EXPECT_EQ(rj["kind"], "RayJob");
  EXPECT_EQ(rj["spec"]["suspend"], true);
  EXPECT_EQ(rj["spec"]["shutdownAfterJobFinishes"], true);
  EXPECT_FALSE(rj["spec"].contains("clusterSelector"));
  EXPECT_EQ(rj["spec"]["entrypoint"], "python3 train.py");
  EXPECT_NE(rj["spec"]["runtimeEnvYAML"].get<std::string>().find("- torch>=2.4.0"), std::string::npos);
  EXPECT_NE(rj["spec"]["runtimeEnvYAML"].get<std::string>().find("K: v"), std::string::npos);
  const json& head = rj["spec"]["rayClusterSpec"]["headGroupSpec"];
  EXPECT_EQ(head["rayStartParams"]["num-gpus"], "0");
  EXPECT_FALSE(head["template"]["spec"]["containers"][0]["resources"]["limits"].contains("nvidia.com/gpu"));
  const json& group = rj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0];
  EXPECT_EQ(group["replicas"], 2);
  EXPECT_EQ(group["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "1");
}

TEST(RenderTest, YamlQuotesQuantitiesAndKeepsKindsPlain) {
  std::string yaml = RenderYaml(Spec("name: a\nrun: {entrypoint: t.py}\ncompute: {cpus: 16}\n"), {});
  EXPECT_NE(yaml.find("kind: Job\n"), std::string::npos);
  EXPECT_NE(yaml.find("cpu: \"16\"\n"), std::string::npos);
  EXPECT_NE(yaml.find("suspend: true\n"), std::string::npos);
}

// Every example renders to the checked-in golden file. Set UPDATE_GOLDEN=1
// to rewrite them after an intended change.
TEST(RenderGoldenTest, Examples) {
  fs::path root = TAU_SOURCE_DIR;
  int count = 0;
  for (const auto& entry : fs::directory_iterator(root / "examples")) {
    if (entry.path().extension() != ".yaml") continue;
    ++count;
    spec::Diagnostics diags;
    spec::LoadOptions options;
    options.check_files = false;
    auto loaded = spec::LoadJobSpecFile(entry.path().string(), options, &diags);
    ASSERT_TRUE(loaded.ok()) << diags.Format();
    std::string yaml = RenderYaml(loaded->spec, {});
    fs::path golden = root / "tests/golden/render" / entry.path().filename();
    if (std::getenv("UPDATE_GOLDEN")) {
      fs::create_directories(golden.parent_path());
      std::ofstream(golden) << yaml;
      continue;
    }
    std::ifstream in(golden);
    ASSERT_TRUE(in) << "missing golden file " << golden << " (run with UPDATE_GOLDEN=1)";
    std::stringstream want;
    want << in.rdbuf();
    EXPECT_EQ(yaml, want.str()) << "rendering of " << entry.path() << " changed";
  }
  EXPECT_GE(count, 4);
}

}  // namespace
}  // namespace tau::render
