#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "spec/test_util.h"

namespace tau::spec {
namespace {

using ::testing::HasSubstr;
using testing::LoadText;

constexpr char kBase[] = "schema_version: 1\nname: a\nrun:\n  entrypoint: echo\n";

TEST(OverridesTest, SetsScalarsListsAndNewSections) {
  auto loaded = LoadText(kBase, {"compute.gpus=2", "run.args=[--lr, \"0.1\"]",
                                 "runtime.env.HF_HOME=/data/hf", "name=b"});
  ASSERT_TRUE(loaded.result.ok()) << loaded.diagnostics;
  const JobSpec& s = loaded.result->spec;
  EXPECT_EQ(s.compute.gpus, 2);
  EXPECT_EQ(s.run.args, (std::vector<std::string>{"--lr", "0.1"}));
  ASSERT_EQ(s.runtime.env.size(), 1u);
  EXPECT_EQ(s.runtime.env[0].second, "/data/hf");
  EXPECT_EQ(s.name, "b");
}

TEST(OverridesTest, ErrorsNameTheOverride) {
  EXPECT_THAT(LoadText(kBase, {"compute.gpus=two"}).diagnostics,
              HasSubstr("--set compute.gpus=two: error: compute.gpus: expected an integer"));
  EXPECT_THAT(LoadText(kBase, {"compute.gpu=2"}).diagnostics,
              HasSubstr("--set compute.gpu=2: error: unknown field \"gpu\" in compute; did you "
                        "mean \"gpus\"?"));
  EXPECT_THAT(LoadText(kBase, {"gpus"}).diagnostics, HasSubstr("expected PATH=VALUE"));
  EXPECT_THAT(LoadText(kBase, {"name.x=1"}).diagnostics, HasSubstr("cannot set a field inside \"name\""));
  EXPECT_THAT(LoadText(kBase, {"a..b=1"}).diagnostics, HasSubstr("empty part between dots"));
}

}  // namespace
}  // namespace tau::spec
