// runtime.pip on the local executor: a cached virtual environment per
// requirements list, SetupFailed with pip's output when installing fails.

#include <gmock/gmock.h>

#include "daemon_fixture.h"

namespace tau::testing {
namespace {

using ::testing::HasSubstr;

class PipTest : public DaemonTest {};

TEST_F(PipTest, JobsWithTheSameRequirementsShareOneCachedEnvironment) {
  if (std::string why = PyPiUnreachable(); !why.empty()) GTEST_SKIP() << why;
  // Files of the job named like the modules the build runs do not shadow them.
  WriteFile("pip.py", "raise SystemExit('the job\'s pip.py ran instead of pip')\n");
  WriteFile("venv.py", "raise SystemExit('the job\'s venv.py ran instead of venv')\n");
  std::string spec = WriteSpec("six.yaml",
      "schema_version: 1\nname: six\nrun:\n  entrypoint: 'python3 -c \"import six, sys; print(six.__version__, sys.prefix)\"'\n"
      "compute:\n  cpus: 100m\nruntime:\n  pip: [six==1.16.0]\n");
  CommandResult first = Tau({"run", "-f", spec});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_THAT(first.out, HasSubstr("tau: building the Python environment for runtime.pip"));
  EXPECT_THAT(first.out, HasSubstr("1.16.0 " + (home_ / "venvs").string()));
  CommandResult second = Tau({"run", "-f", spec});
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  EXPECT_THAT(second.out, ::testing::Not(HasSubstr("building the Python environment")));
  EXPECT_THAT(second.out, HasSubstr("1.16.0 " + (home_ / "venvs").string()));
  // The evidence records what the environment held.
  std::string id = second.out.substr(0, second.out.find('\n'));
  ASSERT_TRUE(WaitUntil([&] { return Job(id)["evidence"].is_string(); }));
  CommandResult evidence = Tau({"evidence", id, "-o", "json"});
  nlohmann::json capsule = nlohmann::json::parse(evidence.out, nullptr, false);
  ASSERT_TRUE(capsule.is_object()) << evidence.out << evidence.err;
  EXPECT_THAT(capsule["pip_freeze"].dump(), HasSubstr("six==1.16.0"));
}

TEST_F(PipTest, AFailedInstallEndsTheAttemptSetupFailedWithPipsOutput) {
  std::string spec = WriteSpec("bad.yaml",
      "schema_version: 1\nname: bad-pip\nrun:\n  entrypoint: 'echo should not run'\ncompute:\n  cpus: 100m\n"
      "runtime:\n  pip: [tau-no-such-package-for-tests==0.0.1]\n");
  CommandResult r = Tau({"run", "-f", spec});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_THAT(r.err, HasSubstr("SetupFailed"));
  EXPECT_THAT(r.out, HasSubstr("tau: installing runtime.pip failed"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("should not run")));
  EXPECT_EQ(Job("bad-pip")["reason"], "SetupFailed");
}

TEST_F(PipTest, RuntimeImageIsRecordedWithAWarning) {
  std::string spec = WriteSpec("img.yaml",
      "schema_version: 1\nname: img\nrun:\n  entrypoint: 'true'\nruntime:\n  image: python:3.12-slim\n");
  CommandResult r = Tau({"run", spec});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: runtime.image \"python:3.12-slim\" is recorded but not used"));
}

}  // namespace
}  // namespace tau::testing
