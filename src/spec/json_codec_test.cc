#include "spec/json_codec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "spec/test_util.h"

namespace tau::spec {
namespace {

TEST(JsonCodecTest, CanonicalJsonRoundTripsThroughTheDecoder) {
  auto first = testing::LoadText(R"(schema_version: 1
name: rt
priority: high
run: {entrypoint: t.py, args: [a, "1"], exclude: ["*.pt"]}
compute: {gpus: 2, cpus: 1.5, memory: 3Gi}
runtime: {image: x, pip: [numpy], env: {B: "2", A: "1"}}
retry: {max_restarts: 2, on: [oom, "exit:3"]}
limits: {max_runtime: 90m}
experiment: {project: p, tags: {k: v}}
depends_on: [prep]
)");
  ASSERT_TRUE(first.result.ok()) << first.diagnostics;
  std::string json = JobSpecToJson(first.result->spec);
  auto second = testing::LoadText(json);
  ASSERT_TRUE(second.result.ok()) << second.diagnostics << json;
  EXPECT_EQ(JobSpecToJson(second.result->spec), json);
  EXPECT_EQ(JobSpecSha256(second.result->spec), JobSpecSha256(first.result->spec));
  EXPECT_EQ(JobSpecSha256(first.result->spec).size(), 64u);
}

TEST(JsonCodecTest, SchemaDescribesEveryField) {
  auto schema = nlohmann::json::parse(JobSpecJsonSchema());
  EXPECT_EQ(schema["properties"]["compute"]["properties"]["gpus"]["type"], "integer");
  EXPECT_EQ(schema["properties"]["run"]["properties"]["workload_kind"]["enum"],
            nlohmann::json::array({"job", "rayjob"}));
  EXPECT_EQ(schema["properties"]["run"]["required"], nlohmann::json::array({"entrypoint"}));
  EXPECT_EQ(schema["required"], nlohmann::json::array({"schema_version", "name", "run"}));
  EXPECT_FALSE(schema["additionalProperties"].get<bool>());
}

}  // namespace
}  // namespace tau::spec
