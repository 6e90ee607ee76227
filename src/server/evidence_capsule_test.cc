#include "server/evidence_capsule.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tau::server {
namespace {

using nlohmann::json;

TEST(EvidenceCapsuleTest, RedactCapsuleHidesSecretsAStoredCapsuleStillHolds) {
  json stored = {
      {"submit_command", "tau run a.yaml --set runtime.env.HF_TOKEN=hf_raw"},
      {"environment", {{"HF_TOKEN", "hf_raw"}, {"HTTPS_PROXY", "http://me:pw@proxy:3128"}, {"LR", "0.1"}}},
      {"spec", {{"runtime", {{"env", {{"WANDB_API_KEY", "w"}, {"DATA", "s3://k:s@bucket/x"}}}}}}},
      {"events", json::array()}};
  json shown = json::parse(RedactCapsule(stored.dump()));
  EXPECT_EQ(shown["submit_command"], "tau run a.yaml --set runtime.env.HF_TOKEN=<redacted>");
  EXPECT_EQ(shown["environment"]["HF_TOKEN"], "<redacted>");
  EXPECT_EQ(shown["environment"]["HTTPS_PROXY"], "http://me:<redacted>@proxy:3128");
  EXPECT_EQ(shown["environment"]["LR"], "0.1");
  EXPECT_EQ(shown["spec"]["runtime"]["env"]["WANDB_API_KEY"], "<redacted>");
  EXPECT_EQ(shown["spec"]["runtime"]["env"]["DATA"], "s3://k:<redacted>@bucket/x");
  // Idempotent: a capsule recorded under these rules comes out unchanged.
  EXPECT_EQ(RedactCapsule(shown.dump()), shown.dump());
  EXPECT_EQ(RedactCapsule("not json"), "not json");
}

}  // namespace
}  // namespace tau::server
