// kubectl and Slurm habits the `tau` binary honours without a server: `-`
// for the standard input, --version, did-you-mean for a mistyped command,
// several files and folders for render, and admin apply refusing workloads
// with a pointer to `tau run` (it refuses them before it looks for a server).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/subprocess.h"

namespace tau::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// A fresh folder under /tmp, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/tau-cli-habits-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string Write(const std::string& name, const std::string& text) const {
    fs::path p = fs::path(path_) / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// `tau ARGS < stdin_file`, through the shell.
CommandResult TauWithStdin(const std::string& args, const std::string& stdin_file, const std::string& home) {
  return RunCommand({"/bin/sh", "-c", "exec \"$0\" " + args + " < \"$1\"", BinPath("tau"), stdin_file}, "",
                    {{"NO_COLOR", "1"}, {"TAU_HOME", home}, {"TAU_SERVER", "http://127.0.0.1:9"}});
}

constexpr char kSpec[] = "schema_version: 1\nname: NAME\nrun:\n  entrypoint: 'echo hi'\n";

std::string Spec(const std::string& name) {
  std::string s = kSpec;
  return s.replace(s.find("NAME"), 4, name);
}

TEST(CliHabitsTest, DashReadsTheSpecFromStandardInput) {
  TempDir dir;
  std::string good = dir.Write("good.yaml", Spec("from-stdin"));
  CommandResult validate = TauWithStdin("validate -", good, dir.path());
  EXPECT_EQ(validate.exit_code, 0) << validate.err;
  EXPECT_THAT(validate.out, HasSubstr("<stdin>: valid job \"from-stdin\""));
  CommandResult render = TauWithStdin("render -", good, dir.path());
  EXPECT_EQ(render.exit_code, 0) << render.err;
  EXPECT_THAT(render.out, HasSubstr("name: from-stdin"));
  // Problems are positioned in <stdin>.
  std::string bad = dir.Write("bad.yaml", "schema_version: 1\nname: x\nrun:\n  entrypoint: 'echo hi'\ncompute:\n  gpus: -1\n");
  CommandResult invalid = TauWithStdin("validate -", bad, dir.path());
  EXPECT_EQ(invalid.exit_code, 2);
  EXPECT_THAT(invalid.err, HasSubstr("<stdin>:6:9: error: compute.gpus"));
}

TEST(CliHabitsTest, VersionFlagPrintsTheVersion) {
  CommandResult r = RunCommand({BinPath("tau"), "--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("tau 0.1.0 ("));
  CommandResult yaml = RunCommand({BinPath("tau"), "version", "-o", "yaml"});
  EXPECT_EQ(yaml.exit_code, 0) << yaml.err;
  EXPECT_THAT(yaml.out, HasSubstr("version: 0.1.0\n"));
}

TEST(CliHabitsTest, AMistypedCommandGetsTheNearestOne) {
  CommandResult top = RunCommand({BinPath("tau"), "valdate", "job.yaml"});
  EXPECT_EQ(top.exit_code, 2);
  EXPECT_THAT(top.err, HasSubstr("tau: unknown command \"valdate\"; did you mean \"validate\"?"));
  CommandResult nested = RunCommand({BinPath("tau"), "admin", "aply", "-f", "x.yaml"});
  EXPECT_EQ(nested.exit_code, 2);
  EXPECT_THAT(nested.err, HasSubstr("tau admin: unknown command \"aply\"; did you mean \"apply\"?"));
  CommandResult far = RunCommand({BinPath("tau"), "frobnicate"});
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_THAT(far.err, HasSubstr("unknown command \"frobnicate\""));
  EXPECT_THAT(far.err, Not(HasSubstr("did you mean")));
}

TEST(CliHabitsTest, RenderTakesSeveralFilesAndFolders) {
  TempDir dir;
  std::string a = dir.Write("a.yaml", Spec("job-a"));
  dir.Write("more/b.yaml", Spec("job-b"));
  dir.Write("more/c.yml", Spec("job-c"));
  dir.Write("more/notes.txt", "not a spec");
  CommandResult yaml = RunCommand({BinPath("tau"), "render", a, dir.path() + "/more"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  size_t at_a = yaml.out.find("name: job-a"), at_b = yaml.out.find("name: job-b"), at_c = yaml.out.find("name: job-c");
  ASSERT_NE(at_a, std::string::npos) << yaml.out;
  ASSERT_NE(at_b, std::string::npos) << yaml.out;
  ASSERT_NE(at_c, std::string::npos) << yaml.out;
  EXPECT_LT(at_a, at_b);
  EXPECT_LT(at_b, at_c);
  EXPECT_THAT(yaml.out, HasSubstr("---\napiVersion: batch/v1\n"));
  CommandResult json = RunCommand({BinPath("tau"), "render", "-o", "json", a, dir.path() + "/more"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json list = nlohmann::json::parse(json.out);
  ASSERT_EQ(list["items"].size(), 3u);
  EXPECT_EQ(list["items"][2]["metadata"]["name"], "job-c");
  // One bad spec: nothing is printed.
  std::string bad = dir.Write("bad.yaml", "schema_version: 1\nname: Bad\nrun:\n  entrypoint: x\n");
  CommandResult partly = RunCommand({BinPath("tau"), "render", a, bad});
  EXPECT_EQ(partly.exit_code, 2);
  EXPECT_EQ(partly.out, "");
  EXPECT_THAT(partly.err, HasSubstr("bad.yaml:2:7: error: name"));
  // A folder without specs is named.
  fs::create_directories(dir.path() + "/empty");
  CommandResult empty = RunCommand({BinPath("tau"), "render", dir.path() + "/empty"});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_THAT(empty.err, HasSubstr("empty: folder holds no .yaml, .yml or .json file"));
}

TEST(CliHabitsTest, ValidateTakesAFolder) {
  TempDir dir;
  dir.Write("specs/one.yaml", Spec("one"));
  dir.Write("specs/two.yaml", Spec("two"));
  CommandResult r = RunCommand({BinPath("tau"), "validate", dir.path() + "/specs"}, "", {{"NO_COLOR", "1"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("one.yaml: valid job \"one\""));
  EXPECT_THAT(r.out, HasSubstr("two.yaml: valid job \"two\""));
}

TEST(CliHabitsTest, RenderChecksFilesAsValidateDoes) {
  TempDir dir;
  std::string spec = dir.Write("job.yaml", Spec("files") + "  working_dir: no-such-folder\n");
  CommandResult validate = RunCommand({BinPath("tau"), "validate", spec}, "", {{"NO_COLOR", "1"}});
  CommandResult render = RunCommand({BinPath("tau"), "render", spec}, "", {{"NO_COLOR", "1"}});
  EXPECT_EQ(validate.exit_code, 2);
  EXPECT_EQ(render.exit_code, 2);
  EXPECT_THAT(render.err, HasSubstr("no-such-folder"));
  EXPECT_EQ(render.err, validate.err);
  EXPECT_EQ(render.out, "");
}

TEST(CliHabitsTest, ObjectNameIsCheckedLikeAJobName) {
  TempDir dir;
  std::string gang = dir.Write("gang.yaml", Spec("gang") + "  launcher: command\ncompute:\n  workers: 12\n");
  CommandResult upper = RunCommand({BinPath("tau"), "render", "--object-name", "Bad_Name", gang});
  EXPECT_EQ(upper.exit_code, 2);
  EXPECT_EQ(upper.out, "");
  EXPECT_THAT(upper.err, HasSubstr("--object-name \"Bad_Name\": "));
  EXPECT_THAT(upper.err, HasSubstr("uppercase"));
  // 60 characters plus "-11" is 63: fits; 61 plus "-11" does not.
  CommandResult fits = RunCommand({BinPath("tau"), "render", "--object-name", std::string(60, 'a'), gang});
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
  CommandResult too_long = RunCommand({BinPath("tau"), "render", "--object-name", std::string(61, 'a'), gang});
  EXPECT_EQ(too_long.exit_code, 2);
  EXPECT_THAT(too_long.err, HasSubstr("hostnames NAME-0 to NAME-11, which must fit in 63 characters"));
  CommandResult digit = RunCommand({BinPath("tau"), "render", "--object-name", "1gang", gang});
  EXPECT_EQ(digit.exit_code, 2);
  EXPECT_THAT(digit.err, HasSubstr("must start its name with a letter"));
  // An empty value is a mistake, not the option left out.
  CommandResult empty = RunCommand({BinPath("tau"), "render", "--object-name", "", gang});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_THAT(empty.err, HasSubstr("--object-name: must not be empty"));
  CommandResult from = RunCommand({BinPath("tau"), "resume", "some-job", "--from", ""});
  EXPECT_EQ(from.exit_code, 2);
  EXPECT_THAT(from.err, HasSubstr("--from: must not be empty"));
}

TEST(CliHabitsTest, AdminApplyRefusesAJobSpecAndPointsAtTauRun) {
  TempDir dir;
  std::string spec = dir.Write("job.yaml", Spec("not-config"));
  CommandResult r = RunCommand({BinPath("tau"), "admin", "apply", "-f", spec}, "",
                               {{"TAU_HOME", dir.path()}, {"TAU_SERVER", "http://127.0.0.1:9"}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("job.yaml:1:1: error: this is a TauGrid job spec, not platform configuration: "
                               "submit it with `tau run " + spec + "`"));
  CommandResult piped = TauWithStdin("admin apply -f -", spec, dir.path());
  EXPECT_EQ(piped.exit_code, 2);
  EXPECT_THAT(piped.err, HasSubstr("<stdin>:1:1: error: this is a TauGrid job spec, not platform configuration: "
                                   "submit it with `tau run -`"));
}

TEST(CliHabitsTest, AdminApplyRefusesABatchJobAndPointsAtTauRun) {
  TempDir dir;
  std::string spec = dir.Write("job.yaml", Spec("rendered"));
  CommandResult rendered = RunCommand({BinPath("tau"), "render", spec});
  ASSERT_EQ(rendered.exit_code, 0) << rendered.err;
  std::string manifest = dir.Write("job-manifest.yaml", rendered.out);
  CommandResult r = RunCommand({BinPath("tau"), "admin", "apply", "-f", manifest}, "",
                               {{"TAU_HOME", dir.path()}, {"TAU_SERVER", "http://127.0.0.1:9"}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("job-manifest.yaml:2:7: error: a batch/v1 Job is a workload, not platform "
                               "configuration: write it as a job spec and submit it with `tau run`"));
}

TEST(CliHabitsTest, AdminApplyReadsEveryManifestOfAFolder) {
  // Checked locally before any server is asked: an error in the second
  // file of the folder shows that the folder was expanded, in name order.
  TempDir dir;
  dir.Write("config/1-flavor.yaml", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: f\n");
  dir.Write("config/2-queue.yaml",
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: x\nspec:\n  queueingStrategy: FIFO\n");
  CommandResult r = RunCommand({BinPath("tau"), "admin", "apply", "-f", dir.path() + "/config"}, "",
                               {{"TAU_HOME", dir.path()}, {"TAU_SERVER", "http://127.0.0.1:9"}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("config/2-queue.yaml:6:21: error: queueingStrategy: \"FIFO\" is not valid"));
}

}  // namespace
}  // namespace tau::testing
