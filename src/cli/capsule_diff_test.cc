#include "cli/capsule_diff.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tau::cli {
namespace {

using nlohmann::json;

json Capsule() {
  return {{"spec", {{"name", "exp"}, {"compute", {{"cpus", "1"}}}, {"run", {{"args", {"--lr", "0.1"}}}}}},
          {"code", {{"snapshot", "sha256:a"}, {"files", {{{"path", "train.py"}, {"sha256", "11"}}}}}},
          {"git", {{"commit", "abc"}, {"dirty", false}, {"diff", ""}}},
          {"environment", {{"PATH", "/usr/bin"}}},
          {"host", {{"python3", "Python 3.11.2"}, {"os", "Debian 12"}}},
          {"pip_freeze", {"numpy==1.26.0"}}};
}

TEST(CapsuleDiffTest, IdenticalCapsulesHaveNoDifferences) { EXPECT_TRUE(DiffCapsules(Capsule(), Capsule()).empty()); }

TEST(CapsuleDiffTest, EachSectionNamesWhatChanged) {
  json b = Capsule();
  b["spec"]["compute"]["cpus"] = "2";
  b["spec"]["run"]["args"][1] = "0.2";
  b["code"]["snapshot"] = "sha256:b";
  b["code"]["files"] = {{{"path", "train.py"}, {"sha256", "22"}}, {{"path", "new.py"}, {"sha256", "33"}}};
  b["git"]["dirty"] = true;
  b["git"]["diff"] = "diff --git\n+x\n";
  b["environment"]["HF_HOME"] = "/data";
  b["pip_freeze"] = {"numpy==2.0.0"};
  std::vector<std::string> expected = {
      "spec:",        "  ~ compute.cpus: 1 -> 2",       "  ~ run.args[1]: 0.1 -> 0.2",
      "code:",        "  + new.py",                     "  ~ train.py",
      "git:",         "  ~ diff:  -> <2 lines>",        "  ~ dirty: false -> true",
      "environment:", "  + HF_HOME: /data",
      "python:",      "  - numpy==1.26.0",              "  + numpy==2.0.0",
  };
  EXPECT_EQ(DiffCapsules(Capsule(), b), expected);
}

TEST(CapsuleDiffTest, ARayJobsRayVersionIsComparedWithItsPython) {
  json a = Capsule(), b = Capsule();
  a["ray"] = {{"version", "2.59.0"}, {"python", "3.11.2"}};
  b["ray"] = {{"version", "2.60.0"}, {"python", "3.11.2"}};
  EXPECT_EQ(DiffCapsules(a, b), (std::vector<std::string>{"python:", "  ~ ray: \"2.59.0\" -> \"2.60.0\""}));
  EXPECT_TRUE(DiffCapsules(b, b).empty());
}

}  // namespace
}  // namespace tau::cli
