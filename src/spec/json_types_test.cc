// A spec sent as JSON is typed: a number where a string belongs is the
// client's mistake, named by its path, not a string to guess at.

#include "spec/json_types.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "spec/job_spec.h"
#include "spec/json_codec.h"

namespace tau::spec {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json Minimal() {
  return json::parse(R"({"schema_version": 1, "name": "x", "run": {"entrypoint": "train.py", "args": ["--lr", "0.1"]},
                         "compute": {"cpus": 2, "memory": "4Gi"}, "runtime": {"env": {"A": "1"}}})");
}

TEST(SpecJsonTypes, AWellTypedSpecPasses) {
  EXPECT_TRUE(CheckSpecJsonTypes(Minimal()).ok());
  // What the CLI sends: the resolved spec, every field present.
  JobSpec spec;
  spec.name = "x";
  spec.run.entrypoint = "train.py";
  Status st = CheckSpecJsonTypes(JobSpecToJsonValue(spec));
  EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST(SpecJsonTypes, ANumberWhereAStringBelongsIsRefusedByItsPath) {
  json j = Minimal();
  j["runtime"]["image"] = 5;
  Status st = CheckSpecJsonTypes(j);
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("spec.runtime.image: expected a string"));
  EXPECT_THAT(st.message(), HasSubstr("got the number 5"));
}

TEST(SpecJsonTypes, ListItemsMapValuesAndIntegersAreTypedToo) {
  json j = Minimal();
  j["run"]["args"][1] = 0.1;
  EXPECT_THAT(CheckSpecJsonTypes(j).message(), HasSubstr("spec.run.args[1]: expected a string"));
  j = Minimal();
  j["runtime"]["env"]["A"] = true;
  EXPECT_THAT(CheckSpecJsonTypes(j).message(), HasSubstr("spec.runtime.env.A: expected a string (")) ;
  EXPECT_THAT(CheckSpecJsonTypes(j).message(), HasSubstr("got true"));
  j = Minimal();
  j["compute"]["gpus"] = "2";
  EXPECT_THAT(CheckSpecJsonTypes(j).message(), HasSubstr("spec.compute.gpus: expected an integer"));
  j = Minimal();
  j["compute"] = nullptr;
  EXPECT_THAT(CheckSpecJsonTypes(j).message(), HasSubstr("spec.compute: expected an object"));
  EXPECT_FALSE(CheckSpecJsonTypes(json::array()).ok());
}

TEST(SpecJsonTypes, AQuantityMayBeANumberAndUnknownFieldsAreLeftToTheDecoder) {
  json j = Minimal();
  j["compute"]["memory"] = 1073741824;
  j["compute"]["colour"] = 3;
  EXPECT_TRUE(CheckSpecJsonTypes(j).ok());
}

}  // namespace
}  // namespace tau::spec
