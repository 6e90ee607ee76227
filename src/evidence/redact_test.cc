#include "evidence/redact.h"

#include <gtest/gtest.h>

namespace tau::evidence {
namespace {

TEST(RedactTest, SecretSetOverridesInTheCommandLine) {
  EXPECT_EQ(RedactCommandLine("tau run job.yaml --set runtime.env.HF_TOKEN=hf_abc --set compute.gpus=2"),
            "tau run job.yaml --set runtime.env.HF_TOKEN=<redacted> --set compute.gpus=2");
  EXPECT_EQ(RedactCommandLine("tau run job.yaml --set=runtime.env.WANDB_API_KEY=xyz"),
            "tau run job.yaml --set=runtime.env.WANDB_API_KEY=<redacted>");
  EXPECT_EQ(RedactCommandLine("tau reproduce j_x --set runtime.env.db_password=pw -f"),
            "tau reproduce j_x --set runtime.env.db_password=<redacted> -f");
  // Not secret-named: kept, as the environment shows it.
  EXPECT_EQ(RedactCommandLine("tau run a.yaml --set runtime.env.LR=0.1"), "tau run a.yaml --set runtime.env.LR=0.1");
}

TEST(RedactTest, QuotedValuesAreRedactedWhole) {
  EXPECT_EQ(RedactCommandLine("tau run a.yaml --set 'runtime.env.HF_TOKEN=two words' -f"),
            "tau run a.yaml --set runtime.env.HF_TOKEN=<redacted> -f");
  EXPECT_EQ(RedactCommandLine("tau run a.yaml --set \"runtime.env.HF_TOKEN=a\\\"b c\""),
            "tau run a.yaml --set runtime.env.HF_TOKEN=<redacted>");
}

TEST(RedactTest, SecretsInFlowMappings) {
  EXPECT_EQ(RedactCommandLine("tau run a.yaml --set 'runtime.env={HF_TOKEN: hf_x, LR: 0.1}'"),
            "tau run a.yaml --set 'runtime.env={HF_TOKEN: <redacted>, LR: 0.1}'");
  EXPECT_EQ(RedactCommandLine("tau run a.yaml --set 'runtime={env: {\"db_password\": \"a b\"}}'"),
            "tau run a.yaml --set 'runtime={env: {\"db_password\": <redacted>}}'");
  EXPECT_EQ(RedactCommandLine("tau run a.yaml --set 'runtime.env={LR: 0.1}'"), "tau run a.yaml --set 'runtime.env={LR: 0.1}'");
}

TEST(RedactTest, SecretNamedFlags) {
  EXPECT_EQ(RedactCommandLine("tool --api-key abc --verbose"), "tool --api-key <redacted> --verbose");
  EXPECT_EQ(RedactCommandLine("tool --api-key=abc"), "tool --api-key=<redacted>");
}

TEST(RedactTest, UrlPasswords) {
  EXPECT_EQ(RedactUrlCredentials("https://alice:hunter2@example.com/x?y"), "https://alice:<redacted>@example.com/x?y");
  EXPECT_EQ(RedactUrlCredentials("git+https://u:p@ss@h/r.git and s3://k:s@bucket"),
            "git+https://u:<redacted>@h/r.git and s3://k:<redacted>@bucket");
  EXPECT_EQ(RedactUrlCredentials("ssh://git@github.com/x"), "ssh://git@github.com/x");
  EXPECT_EQ(RedactUrlCredentials("https://example.com/a:b@c"), "https://example.com/a:b@c");
  EXPECT_EQ(RedactUrlCredentials("no url: user:pass@host"), "no url: user:pass@host");
  EXPECT_EQ(RedactCommandLine("tau run a.yaml --set runtime.env.DATA=https://u:secret@host/d"),
            "tau run a.yaml --set runtime.env.DATA=https://u:<redacted>@host/d");
}

TEST(RedactTest, EnvironmentValues) {
  EXPECT_EQ(RedactEnvValue("HF_TOKEN", "hf_abc"), "<redacted>");
  EXPECT_EQ(RedactEnvValue("HTTP_PROXY", "http://me:pw@proxy:3128"), "http://me:<redacted>@proxy:3128");
  EXPECT_EQ(RedactEnvValue("LR", "0.1"), "0.1");
}

TEST(RedactTest, RedactingTwiceChangesNothing) {
  for (std::string_view text : {"tau run a.yaml --set runtime.env.HF_TOKEN=x --api-key y https://u:p@h/",
                                "tau run 'odd word' --set runtime.env.HF_TOKEN='a b'",
                                "tau run a.yaml --set 'runtime.env={HF_TOKEN: x y, API_KEY: \"z\"}'"}) {
    std::string once = RedactCommandLine(text);
    EXPECT_EQ(RedactCommandLine(once), once) << text;
  }
}

TEST(RedactTest, ProgramArgumentsLikeCommandWords) {
  std::vector<std::string> args = {"--lr", "0.1", "--token=abc", "--api-key", "k123", "--db", "postgres://u:pw@h/db",
                                   "GH_PAT=xyz", "--my-passwd=p"};
  std::vector<std::string> want = {"--lr", "0.1", "--token=<redacted>", "--api-key", "<redacted>", "--db",
                                   "postgres://u:<redacted>@h/db", "GH_PAT=<redacted>", "--my-passwd=<redacted>"};
  EXPECT_EQ(RedactArgs(args), want);
  EXPECT_EQ(RedactArgs(want), want);
}

}  // namespace
}  // namespace tau::evidence
