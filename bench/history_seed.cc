// Seeds a TAU_HOME with N ended jobs, written straight into its database as
// taugridd would have left them (record, one attempt, four events, sealed
// evidence digest), so bench/history can measure a daemon serving a long
// history without running N processes first.
//
//   tau-bench-history-seed TAU_HOME N

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "spec/json_codec.h"
#include "spec/load.h"
#include "store/job_store.h"

namespace {

constexpr char kSpec[] =
    "schema_version: 1\nname: bench-true\nrun:\n  entrypoint: /bin/true\n  launcher: command\n"
    "compute:\n  cpus: 100m\n  memory: 64Mi\nexperiment:\n  project: bench\n  tags: {kind: history}\n";

int Fail(const tau::Status& st) {
  std::fprintf(stderr, "tau-bench-history-seed: %s\n", st.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tau;
  if (argc != 3) {
    std::fprintf(stderr, "usage: tau-bench-history-seed TAU_HOME N\n");
    return 2;
  }
  const std::filesystem::path home = argv[1];
  const long long n = std::atoll(argv[2]);
  std::filesystem::create_directories(home);
  spec::Diagnostics diags;
  spec::LoadOptions options;
  options.check_files = false;
  auto loaded = spec::LoadJobSpecText(kSpec, "bench.yaml", "/", options, &diags);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", diags.Format().c_str());
    return 1;
  }
  const std::string spec_json = spec::JobSpecToJson(loaded->spec);
  const std::string spec_sha = spec::JobSpecSha256(loaded->spec);
  auto store = store::JobStore::Open((home / "taugrid.db").string());
  if (!store.ok()) return Fail(store.status());
  auto txn = (*store)->Begin();
  if (!txn.ok()) return Fail(txn.status());
  const int64_t t0 = 1'700'000'000'000;
  for (long long i = 1; i <= n; ++i) {
    store::JobRecord j;
    j.id = fmt::format("j_seed{:06d}", i);
    j.seq = i;
    j.name = "bench-true";
    j.workspace = "default";
    j.queue = "default";
    j.state = store::JobState::kSucceeded;
    j.reason = "Completed";
    j.message = "exit code 0";
    j.exit_code = 0;
    j.attempt = 1;
    j.spec_json = spec_json;
    j.spec_sha256 = spec_sha;
    j.snapshot_digest = "sha256:" + std::string(64, '0');
    j.submit_command = "tau run bench.yaml";
    j.created_at = t0 + i * 10;
    j.admitted_at = j.created_at + 1;
    j.started_at = j.created_at + 2;
    j.finished_at = j.created_at + 5;
    j.evidence_submit = fmt::format("sha256:{:064x}", i);
    j.evidence = fmt::format("sha256:{:064x}", i + n);
    if (Status st = (*store)->InsertJob(j); !st.ok()) return Fail(st);
    store::AttemptRecord a;
    a.job_id = j.id;
    a.number = 1;
    a.state = store::AttemptState::kSucceeded;
    a.reason = "Completed";
    a.exit_code = 0;
    a.started_at = j.started_at;
    a.finished_at = j.finished_at;
    if (Status st = (*store)->UpsertAttempt(a); !st.ok()) return Fail(st);
    for (const char* type : {"Submitted", "Admitted", "Started", "Succeeded"}) {
      if (auto id = (*store)->AppendEvent({0, j.id, j.created_at, type, "", "seeded"}); !id.ok()) return Fail(id.status());
    }
  }
  if (Status st = txn->Commit(); !st.ok()) return Fail(st);
  std::printf("seeded %lld ended jobs into %s\n", n, (home / "taugrid.db").c_str());
  return 0;
}
