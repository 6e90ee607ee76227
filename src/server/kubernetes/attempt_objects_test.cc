// The objects of one attempt on Kubernetes: names, environment, code
// delivery and the snapshot limit.

#include "server/kubernetes/attempt_objects.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "spec/load.h"

namespace tau::server::kubernetes {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

spec::JobSpec Spec(const std::string& body) {
  spec::Diagnostics diags;
  spec::LoadOptions o;
  o.check_files = false;
  auto loaded = spec::LoadJobSpecText("schema_version: 1\n" + body, "t.yaml", "/", o, &diags);
  EXPECT_TRUE(loaded.ok()) << diags.Format();
  return loaded->spec;
}

AttemptPlan Plan(const std::string& body, int64_t attempt = 1) {
  AttemptPlan plan;
  plan.job_id = "j_abcdefgh23";
  plan.attempt = attempt;
  plan.spec = Spec(body);
  plan.env = {"TAU_JOB_ID=j_abcdefgh23", "TAU_JOB_NAME=" + plan.spec.name, "TAU_ATTEMPT=" + std::to_string(attempt),
              "TAU_WORKSPACE=default"};
  return plan;
}

std::string Env(const json& container, const std::string& name) {
  for (const json& e : container["env"]) {
    if (e["name"] == name) {
      return e.value("value", "");
    }
  }
  return "<unset>";
}

constexpr char kJob[] = "name: train\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 1, gpus: 4}\n";

TEST(AttemptObjectName, IsTheJobNameIdAndAttemptCutToADns1123LabelAndParsesBack) {
  EXPECT_EQ(AttemptObjectName("train", "j_abcdefgh23", 2), "train-abcdefgh23-2");
  const std::string longest = AttemptObjectName(std::string(63, 'x'), "j_abcdefgh23", 12);
  EXPECT_EQ(longest.size(), 52u);
  EXPECT_TRUE(longest.ends_with("x-abcdefgh23-12"));
  // A name cut at a '-' does not end the base with one.
  EXPECT_EQ(AttemptObjectName(std::string(38, 'a') + "-b", "j_abcdefgh23", 1), std::string(38, 'a') + "-abcdefgh23-1");
  auto parsed = ParseAttemptObjectName("my-train-abcdefgh23-12");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->job_id, "j_abcdefgh23");
  EXPECT_EQ(parsed->attempt, 12);
  EXPECT_FALSE(ParseAttemptObjectName("some-other-job").has_value());
  EXPECT_FALSE(ParseAttemptObjectName("train-abcdefgh23-x").has_value());
}

TEST(AttemptObjects, AreTheRenderedSuspendedJobForTheAttemptWithItsEnvLabelsAndCode) {
  AttemptPlan plan = Plan(kJob, 3);
  plan.env.push_back("TAU_RETRY_REASON=exit:3");
  plan.env.push_back("TAU_RESUME_FROM=/home/me/.tau/jobs/j_abcdefgh23/checkpoints/step-10");
  auto objects = BuildAttemptObjects(plan, "tar bytes", {"ckpt", {{"example.com/policy", "x"}}});
  ASSERT_TRUE(objects.ok()) << objects.status().ToString();
  const json& job = objects->main;
  EXPECT_EQ(job["kind"], "Job");
  EXPECT_EQ(job["metadata"]["name"], "train-abcdefgh23-3");
  EXPECT_EQ(job["metadata"]["namespace"], "default");
  EXPECT_EQ(job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "default");
  EXPECT_EQ(job["metadata"]["labels"]["taugrid.io/job-id"], "j_abcdefgh23");
  EXPECT_EQ(job["metadata"]["labels"]["taugrid.io/attempt"], "3");
  EXPECT_EQ(job["spec"]["suspend"], true);
  const json& pod = job["spec"]["template"];
  EXPECT_EQ(pod["metadata"]["labels"]["taugrid.io/job-id"], "j_abcdefgh23");
  EXPECT_EQ(pod["metadata"]["labels"]["app.kubernetes.io/managed-by"], "taugrid");
  EXPECT_EQ(pod["metadata"]["annotations"]["example.com/policy"], "x");
  const json& container = pod["spec"]["containers"][0];
  EXPECT_EQ(Env(container, "TAU_ATTEMPT"), "3");
  EXPECT_EQ(Env(container, "TAU_RETRY_REASON"), "exit:3");
  EXPECT_EQ(Env(container, "TAU_RESUME_FROM"), "/tau/checkpoints/j_abcdefgh23/step-10");
  EXPECT_EQ(Env(container, "TAU_CHECKPOINT_DIR"), "/tau/checkpoints/j_abcdefgh23");
  EXPECT_EQ(container["command"][0], "/bin/sh");
  EXPECT_THAT(container["command"][2].get<std::string>(), HasSubstr("tar -xf /tau/code/code.tar -C /tau/work"));
  EXPECT_EQ(container["command"][3], "tau");
  // Then the job's own command (a .sh entrypoint runs under /bin/sh -c).
  EXPECT_EQ(container["command"][4], "/bin/sh");
  EXPECT_EQ(container["command"][6], "./run.sh");
  EXPECT_EQ(container["workingDir"], "/tau/work");
  bool pvc = false;
  for (const json& v : pod["spec"]["volumes"]) {
    if (v["name"] == "checkpoints") {
      pvc = v["persistentVolumeClaim"]["claimName"] == "ckpt";
    }
  }
  EXPECT_TRUE(pvc) << pod["spec"]["volumes"].dump();
  ASSERT_EQ(objects->dependents.size(), 1u);
  const json& code = objects->dependents[0];
  EXPECT_EQ(code["kind"], "ConfigMap");
  EXPECT_EQ(code["metadata"]["name"], "train-abcdefgh23-3-code");
  EXPECT_EQ(code["binaryData"]["code.tar"], "dGFyIGJ5dGVz");  // base64("tar bytes")
}

TEST(AttemptObjects, TheSecretEnvironmentGoesInASecretTheContainersReadNotInTheJob) {
  AttemptPlan plan = Plan(kJob);
  plan.secret_env = {"API_KEY=hunter2"};
  auto objects = BuildAttemptObjects(plan, "", {});
  ASSERT_TRUE(objects.ok());
  EXPECT_EQ(objects->main.dump().find("hunter2"), std::string::npos);
  ASSERT_EQ(objects->dependents.size(), 2u);
  EXPECT_EQ(objects->dependents[1]["kind"], "Secret");
  EXPECT_EQ(objects->dependents[1]["stringData"]["API_KEY"], "hunter2");
  EXPECT_EQ(objects->main["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"],
            "train-abcdefgh23-1-env");
}

TEST(AttemptObjects, ASnapshotOverTheConfigMapLimitIsRefusedNamingItsSizeAndTheLimit) {
  auto objects = BuildAttemptObjects(Plan(kJob), std::string(kMaxSnapshotBytes + 1, 'x'), {});
  ASSERT_FALSE(objects.ok());
  EXPECT_EQ(objects.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(objects.status().message(), HasSubstr("1048569 bytes"));
  EXPECT_THAT(objects.status().message(), HasSubstr("at most 1048568 bytes"));
  EXPECT_TRUE(BuildAttemptObjects(Plan(kJob), std::string(kMaxSnapshotBytes, 'x'), {}).ok());
}

TEST(AttemptObjects, AGangGetsItsHeadlessServiceAsADependent) {
  auto objects = BuildAttemptObjects(Plan("name: g\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 1, workers: 2}\n"), "", {});
  ASSERT_TRUE(objects.ok());
  EXPECT_EQ(objects->main["spec"]["completions"], 2);
  ASSERT_EQ(objects->dependents.size(), 2u);
  EXPECT_EQ(objects->dependents[0]["kind"], "Service");
  EXPECT_EQ(objects->dependents[0]["metadata"]["name"], objects->name);
}

TEST(AttemptObjects, ARayJobGetsTheCodeUnpackedOnEveryNodeAndItsEntrypointRunsInIt) {
  auto objects = BuildAttemptObjects(
      Plan("name: r\nrun: {entrypoint: train.py, workload_kind: rayjob}\ncompute: {workers: 2, gpus: 1}\n"),
      "tar bytes", {"ckpt", {}});
  ASSERT_TRUE(objects.ok()) << objects.status().ToString();
  const json& rayjob = objects->main;
  ASSERT_EQ(rayjob["kind"], "RayJob");
  EXPECT_EQ(rayjob["spec"]["entrypoint"], "cd /tau/work && python3 train.py");
  const json& cluster = rayjob["spec"]["rayClusterSpec"];
  std::vector<const json*> pods = {&cluster["headGroupSpec"]["template"]["spec"],
                                   &cluster["workerGroupSpecs"][0]["template"]["spec"]};
  for (const json* pod : pods) {
    ASSERT_EQ((*pod)["initContainers"].size(), 1u) << pod->dump();
    const json& init = (*pod)["initContainers"][0];
    EXPECT_EQ(init["image"], (*pod)["containers"][0]["image"]) << "the job's image unpacks its code";
    EXPECT_THAT(init["command"][2].get<std::string>(), HasSubstr("tar -xf /tau/code/code.tar -C /tau/work"));
    EXPECT_THAT(init["command"][2].get<std::string>(), HasSubstr("mkdir -p /tau/work /tau/checkpoints/j_abcdefgh23"));
    const json& ray = (*pod)["containers"][0];
    EXPECT_FALSE(ray.contains("command")) << "KubeRay writes ray start into the Ray container";
    EXPECT_EQ(ray["workingDir"], "/tau/work");
    EXPECT_EQ(Env(ray, "PYTHONPATH"), "/tau/work");
    bool work = false;
    for (const json& m : ray["volumeMounts"]) work = work || m["mountPath"] == "/tau/work";
    EXPECT_TRUE(work) << ray["volumeMounts"].dump();
    std::set<std::string> volumes;
    for (const json& v : (*pod)["volumes"]) volumes.insert(v["name"].get<std::string>());
    EXPECT_EQ(volumes, (std::set<std::string>{"checkpoints", "outputs", "code", "work"}));
  }
  ASSERT_EQ(objects->dependents.size(), 1u);
  EXPECT_EQ(objects->dependents[0]["kind"], "ConfigMap");
  EXPECT_EQ(objects->dependents[0]["binaryData"]["code.tar"], "dGFyIGJ5dGVz");
}

TEST(AttemptObjects, AWorkspaceWithAClaimOfItsOwnKeepsItsCheckpointsThere) {
  BackendSettings settings;
  settings.checkpoint_pvc = "shared";
  settings.checkpoint_pvc_by_workspace = {{"vision", "vision-ckpt"}};
  auto claim_of = [&](const std::string& workspace) {
    auto objects = BuildAttemptObjects(Plan("name: t\nworkspace: " + workspace + "\nrun: {entrypoint: ./run.sh}\n"), "",
                                       settings);
    EXPECT_TRUE(objects.ok()) << objects.status().ToString();
    for (const json& v : objects->main["spec"]["template"]["spec"]["volumes"]) {
      if (v["name"] == "checkpoints") return v.contains("persistentVolumeClaim") ? v["persistentVolumeClaim"]["claimName"].get<std::string>() : std::string("emptyDir");
    }
    return std::string("none");
  };
  EXPECT_EQ(claim_of("vision"), "vision-ckpt");
  EXPECT_EQ(claim_of("nlp"), "shared");
  settings.checkpoint_pvc.clear();
  EXPECT_EQ(claim_of("nlp"), "emptyDir") << "no claim: checkpoints die with the pod";
  EXPECT_EQ(claim_of("vision"), "vision-ckpt");
}

}  // namespace
}  // namespace tau::server::kubernetes
