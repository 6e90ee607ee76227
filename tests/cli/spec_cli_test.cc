// End-to-end tests of the spec commands through the real `tau` binary:
// exit codes, the malformed-spec corpus (tests/specs/invalid, each with the
// exact expected diagnostics) and the valid corpus.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/subprocess.h"

namespace tau::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::vector<std::string> SpecFiles(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(SourcePath(dir))) {
    if (e.path().extension() == ".yaml") names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(0, info.param.size() - 5);
  std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return name;
}

// Each malformed spec exits 2, prints nothing on stdout, and prints exactly
// the diagnostics in its .expected file (set UPDATE_GOLDEN=1 to rewrite).
class InvalidSpecTest : public ::testing::TestWithParam<std::string> {};

TEST_P(InvalidSpecTest, ReportsPositionedErrors) {
  const std::string dir = SourcePath("tests/specs/invalid");
  CommandResult r = RunCommand({BinPath("tau"), "validate", GetParam()}, dir, {{"NO_COLOR", "1"}});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr(GetParam() + ":"));
  EXPECT_THAT(r.err, HasSubstr(": error: "));
  fs::path expected = fs::path(dir) / (GetParam().substr(0, GetParam().size() - 5) + ".expected");
  if (std::getenv("UPDATE_GOLDEN")) {
    std::ofstream(expected) << r.err;
    return;
  }
  ASSERT_TRUE(fs::exists(expected)) << expected << " is missing (run with UPDATE_GOLDEN=1)";
  EXPECT_EQ(r.err, ReadFile(expected));
}

INSTANTIATE_TEST_SUITE_P(Corpus, InvalidSpecTest,
                         ::testing::ValuesIn(SpecFiles("tests/specs/invalid")), TestName);

class ValidSpecTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ValidSpecTest, ExitsZero) {
  CommandResult r = RunCommand({BinPath("tau"), "validate", GetParam()},
                               SourcePath("tests/specs/valid"), {{"NO_COLOR", "1"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(GetParam() + ": valid"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("error:")));
}

INSTANTIATE_TEST_SUITE_P(Corpus, ValidSpecTest, ::testing::ValuesIn(SpecFiles("tests/specs/valid")),
                         TestName);

TEST(SpecCliTest, CorpusIsLargeEnough) { EXPECT_GE(SpecFiles("tests/specs/invalid").size(), 40u); }

TEST(SpecCliTest, WarningsAreReportedButDoNotFail) {
  CommandResult r = RunCommand({BinPath("tau"), "validate", "warnings.yaml"},
                               SourcePath("tests/specs/valid"), {{"NO_COLOR", "1"}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("warnings.yaml:5:15: warning: run.entrypoint: \"missing_script.py\" is not in working_dir"));
  EXPECT_THAT(r.err, HasSubstr("warnings.yaml:7:14: warning: compute.gpu_class: \"a100-80gb\" has no effect"));
  EXPECT_THAT(r.err, HasSubstr("warnings.yaml:9:13: warning: retry.on lists \"oom\" more than once"));
}

TEST(SpecCliTest, SeedExampleValidates) {
  CommandResult r = RunCommand({BinPath("tau"), "validate", SourcePath("examples/seed-rayjob.yaml")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST(SpecCliTest, SetOverridesApplyBeforeValidation) {
  CommandResult ok = RunCommand({BinPath("tau"), "validate", "-o", "json", "--set", "compute.gpus=3",
                                 SourcePath("examples/quickstart.yaml")});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("\"gpus\": 3"));
  CommandResult bad = RunCommand({BinPath("tau"), "render", "--set", "compute.gpus=lots",
                                  SourcePath("examples/quickstart.yaml")},
                                 "", {{"NO_COLOR", "1"}});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.out, "");
  EXPECT_THAT(bad.err, HasSubstr("--set compute.gpus=lots: error: compute.gpus: expected an integer"));
}

TEST(SpecCliTest, RenderPrintsMultiDocumentYaml) {
  CommandResult r = RunCommand({BinPath("tau"), "render", SourcePath("examples/torchrun-multi.yaml")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("kind: Service\n"));
  EXPECT_THAT(r.out, HasSubstr("\n---\napiVersion: batch/v1\nkind: Job\n"));
  CommandResult json = RunCommand({BinPath("tau"), "render", "-o", "json", SourcePath("examples/seed-rayjob.yaml")});
  EXPECT_EQ(json.exit_code, 0);
  EXPECT_THAT(json.out, HasSubstr("\"kind\": \"RayJob\""));
}

TEST(SpecCliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunCommand({BinPath("tau")}).exit_code, 2);
  EXPECT_EQ(RunCommand({BinPath("tau"), "validate"}).exit_code, 2);
  EXPECT_EQ(RunCommand({BinPath("tau"), "frobnicate"}).exit_code, 2);
  EXPECT_EQ(RunCommand({BinPath("tau"), "render", "-o", "xml", SourcePath("examples/cpu-job.yaml")}).exit_code, 2);
  CommandResult missing = RunCommand({BinPath("tau"), "validate", "/nonexistent/job.yaml"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("cannot read /nonexistent/job.yaml: No such file or directory"));
  // A folder stands for its specs; one that holds none is an error.
  CommandResult dir = RunCommand({BinPath("tau"), "validate", SourcePath("tests/specs")});
  EXPECT_EQ(dir.exit_code, 2);
  EXPECT_THAT(dir.err, HasSubstr("specs: folder holds no .yaml, .yml or .json file"));
}

TEST(SpecCliTest, EveryCommandHasHelp) {
  for (const char* cmd : {"validate", "render", "schema", "explain", "version"}) {
    CommandResult r = RunCommand({BinPath("tau"), cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_THAT(r.out, HasSubstr("Usage")) << cmd;
  }
  CommandResult top = RunCommand({BinPath("tau"), "--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_THAT(top.out, HasSubstr("validate"));
}

TEST(SpecCliTest, SchemaAndExplain) {
  CommandResult schema = RunCommand({BinPath("tau"), "schema"});
  EXPECT_EQ(schema.exit_code, 0);
  EXPECT_THAT(schema.out, HasSubstr("\"$schema\": \"https://json-schema.org/draft/2020-12/schema\""));
  CommandResult explain = RunCommand({BinPath("tau"), "explain", "compute.gpus"}, "", {{"NO_COLOR", "1"}});
  EXPECT_EQ(explain.exit_code, 0);
  EXPECT_THAT(explain.out, HasSubstr("FIELD: compute.gpus"));
  EXPECT_THAT(explain.out, HasSubstr("DEFAULT: 0"));
  CommandResult unknown = RunCommand({BinPath("tau"), "explain", "compute.gpu"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("did you mean \"compute.gpus\"?"));
}

TEST(SpecCliTest, VersionNeedsNoServer) {
  CommandResult r = RunCommand({BinPath("tau"), "version"}, "", {{"TAU_HOME", "/nonexistent"}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("tau 0.1.0"));
}

}  // namespace
}  // namespace tau::testing
