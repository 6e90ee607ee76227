#include "server/job_view.h"

#include <gtest/gtest.h>

#include "spec/json_codec.h"
#include "spec/load.h"

namespace tau::server {
namespace {

std::string CanonicalJson(const std::string& yaml) {
  spec::Diagnostics diags;
  spec::LoadOptions o;
  o.check_files = false;
  auto loaded = spec::LoadJobSpecText(yaml, "t.yaml", "/", o, &diags);
  EXPECT_TRUE(loaded.ok()) << diags.Format();
  return spec::JobSpecToJson(loaded->spec);
}

void ExpectSameView(const JobView& a, const JobView& b) {
  EXPECT_EQ(a.workers, b.workers);
  EXPECT_EQ(a.ranks, b.ranks);
  EXPECT_EQ(a.gpus, b.gpus);
  EXPECT_EQ(a.cpus_milli, b.cpus_milli);
  EXPECT_EQ(a.memory_bytes, b.memory_bytes);
  EXPECT_EQ(a.project, b.project);
  EXPECT_EQ(a.tags, b.tags);
  EXPECT_EQ(a.max_restarts, b.max_restarts);
  EXPECT_EQ(a.checkpoint_keep, b.checkpoint_keep);
}

TEST(JobViewTest, TheViewedFieldsOfAStoredSpecMatchItsFullDecode) {
  for (const std::string& yaml :
       {std::string("schema_version: 1\nname: a\nrun: {entrypoint: x.py}\n"),
        std::string("schema_version: 1\nname: b\nrun: {entrypoint: x.py, workload_kind: rayjob}\n"
                    "compute: {gpus: 1, workers: 3, cpus: 500m, memory: 3Gi}\nretry: {max_restarts: 4}\n"
                    "checkpoint: {keep: 7}\nexperiment: {project: p, tags: {lr: '0.1', b: x}}\n")}) {
    std::string json = CanonicalJson(yaml);
    auto full = DecodeStoredSpec(json);
    auto viewed = DecodeViewedSpec(json);
    ASSERT_TRUE(full.ok() && viewed.ok());
    store::JobRecord rec;
    rec.id = "j_x";
    TauHome home("/tmp/h");
    ExpectSameView(*NewJobView(rec, {}, *full, home, 10), *NewJobView(rec, {}, *viewed, home, 10));
  }
  // Not canonical: decoded in full (and an error when that fails too).
  EXPECT_TRUE(DecodeViewedSpec("{\"name\": \"x\", \"run\": {\"entrypoint\": \"a.py\"}, \"schema_version\": 1}").ok());
  EXPECT_FALSE(DecodeViewedSpec("{\"compute\": 3}").ok());
}

TEST(JobViewTest, AnAttemptsSeparatorLineSaysWhyItRanAndWhatItResumedFrom) {
  store::AttemptRecord a;
  a.number = 2;
  a.retry_reason = "gpu_fault";
  a.resumed_from = "/home/me/.local/share/taugrid/jobs/j_1/checkpoints/step-00025";
  EXPECT_EQ(AttemptSeparatorLine(a), "--- attempt 2 (gpu_fault, resumed from step-00025) ---\n");
  a.resumed_from.clear();
  a.retry_reason = "exit:3";
  EXPECT_EQ(AttemptSeparatorLine(a), "--- attempt 2 (exit:3) ---\n");
  a.retry_reason.clear();
  EXPECT_EQ(AttemptSeparatorLine(a), "--- attempt 2 ---\n");
}

}  // namespace
}  // namespace tau::server
