// The evidence capsule of each job (docs/evidence.md): its submit part is
// written when the job is accepted, and the whole capsule is sealed when
// the job ends.

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/beneath.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "evidence/snapshot.h"
#include "server/evidence_capsule.h"
#include "server/job_manager.h"
#include "server/local_ray.h"
#include "render/yaml_emitter.h"
#include "spec/json_codec.h"
#include "spec/load.h"

namespace tau::server {
namespace fs = std::filesystem;
using store::JobState;

namespace {

Result<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(fmt::format("cannot read {}", path.string()));
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// What the capsule is assembled from, copied so it can be used off the loop.
CapsuleInputs Gather(const TauHome& home, const JobManagerOptions& options, const store::JobRecord& rec,
                     const std::vector<store::AttemptRecord>& attempts, const spec::JobSpec& spec,
                     std::vector<store::EventRecord> events, std::string submit_json) {
  CapsuleInputs in;
  in.submit_json = std::move(submit_json);
  in.job = rec;
  in.job.secret_env.clear();
  in.attempts = attempts;
  in.events = std::move(events);
  for (const auto& g : options.gpu_info) in.gpu_uuids.push_back(g.uuid);
  in.workers = spec.compute.workers;
  in.cpus_per_worker = spec.compute.cpus.ToString();
  in.memory_per_worker = spec.compute.memory.ToString();
  in.logs_root = home.root().string();
  for (const auto& a : attempts) {
    for (int r = 0; r < AttemptRanks(spec); ++r) in.log_files[a.number].push_back(home.log_file(rec.id, a.number, r).string());
  }
  return in;
}

// A file of a job's folder, read beneath TAU_HOME without following links
// (the job may have swapped it for a link or a fifo).
Result<std::string> ReadJobFile(const fs::path& root, const fs::path& path) {
  TAU_ASSIGN_OR_RETURN(UniqueFd fd, OpenPathBeneath(root, path));
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(errno, fmt::format("read {}", path.string()));
    if (n == 0) return out;
    if (out.size() + static_cast<size_t>(n) > (size_t{1} << 20)) {
      return InvalidArgumentError(fmt::format("{} is larger than 1 MiB", path.string()));
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

Result<std::string> JobManager::WriteBlob(const std::string& data) const {
  // Several threads write blobs (submits are prepared on the HTTP threads):
  // each temporary file has a name of its own.
  static std::atomic<uint64_t> next_tmp{0};
  const std::string digest = evidence::BlobDigest(data);
  const fs::path path = home_.blob(digest);
  std::error_code ec;
  if (fs::exists(path, ec)) return digest;  // content-addressed: already there
  fs::create_directories(path.parent_path(), ec);
  const fs::path tmp = path.string() + fmt::format(".{}-{}.tmp", ::getpid(), next_tmp.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError(errno, fmt::format("write {}", tmp.string()));
  bool ok = ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()) && ::fsync(fd) == 0;
  int err = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (ok) err = errno;
    ::unlink(tmp.c_str());
    return ErrnoError(err, fmt::format("write {}", path.string()));
  }
  return digest;
}

std::string JobManager::SubmitEvidenceText(const store::JobRecord& rec, const spec::JobSpec& spec,
                                           const spec::StringPairs& secret_env, const std::string& client_json,
                                           const std::vector<evidence::FileDigest>& code_files) const {
  SubmitEvidence in;
  in.job = rec;
  in.job.secret_env.clear();
  in.spec_json = rec.spec_json;
  in.project = spec.experiment.project;
  in.tags = spec.experiment.tags;
  in.code_files = code_files;
  in.client_json = client_json;
  in.environment = options_.base_env;
  for (const auto& [k, v] : spec.runtime.env) in.environment.push_back(k + "=" + v);
  for (const auto& [k, v] : secret_env) in.secret_env_names.push_back(k);
  in.host_json = options_.host_json;
  return AssembleSubmitEvidence(in);
}

std::string JobManager::GitEvidenceOf(const store::JobRecord& original) const {
  if (original.evidence_submit.empty()) return "";
  auto text = ReadFile(home_.blob(original.evidence_submit));
  if (!text.ok()) return "";
  auto parsed = nlohmann::json::parse(*text, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("git")) return "";
  return nlohmann::json{{"git", parsed["git"]}}.dump();
}

Status JobManager::RecordSubmitEvidence(Job& job, const SubmitRequest& request,
                                        const std::vector<evidence::FileDigest>& code_files) {
  std::string client_json = request.client_evidence_json;
  if (client_json.empty() && !job.rec.reproduces.empty()) {
    // A reproduction runs the original's code: its git state is the original's.
    auto it = jobs_by_id_.find(job.rec.reproduces);
    if (it != jobs_by_id_.end()) client_json = GitEvidenceOf(it->second->rec);
  }
  TAU_ASSIGN_OR_RETURN(job.rec.evidence_submit,
                       WriteBlob(SubmitEvidenceText(job.rec, job.spec, job.secret_env, client_json, code_files)));
  return Status::Ok();
}

void JobManager::SealEvidence(Job& job) {
  if (job.sealing_evidence || job.rec.evidence_submit.empty() || !job.rec.evidence.empty() ||
      !store::IsTerminal(job.rec.state)) {
    return;  // being sealed, kept no evidence, already sealed, or still going
  }
  if (job.indexing) return;  // sealed once its final checkpoint index is in (ApplyCheckpointIndex)
  // Sealed once its end is in the database (RetryStoreWrites): the capsule
  // holds the job's events as recorded.
  if (HasUnrecordedEnd(job.rec.id)) return;
  job.sealing_evidence = true;
  // The events are one indexed query on the loop's connection; the submit
  // part (a file that may be large with many code files) is read off it.
  auto events = store_->LoadEvents(job.rec.id, 0, 1'000'000);
  CapsuleInputs in = Gather(home_, options_, job.rec, job.attempts, job.spec,
                            events.ok() ? std::move(*events) : std::vector<store::EventRecord>{}, "");
  const fs::path submit_blob = home_.blob(job.rec.evidence_submit);
  fs::path venv_marker, ray_info;
  if (!job.spec.runtime.pip.empty() && job.rec.attempt > 0) {
    venv_marker = home_.attempt_dir(job.rec.id, job.rec.attempt) / "requirements.txt.venv";
  }
  if (job.spec.run.workload_kind == spec::WorkloadKind::kRayJob && job.rec.attempt > 0) {
    ray_info = home_.attempt_dir(job.rec.id, job.rec.attempt) / "ray.json";
  }
  RunInBackground([this, id = job.rec.id, in = std::move(in), submit_blob, venv_marker, ray_info, root = home_.root(),
                   before_write = options_.before_capsule_write]() mutable -> std::function<void()> {
    if (auto submit = ReadFile(submit_blob); submit.ok()) in.submit_json = std::move(*submit);
    // The Python environment the last attempt ran in: its runtime.pip
    // environment, else for a local rayjob the one Ray runs in.
    std::string python;
    if (!ray_info.empty()) {
      auto info = ReadJobFile(root, ray_info);
      if (info.ok()) {
        in.ray_json = *info;
        auto parsed = nlohmann::json::parse(*info, nullptr, false);
        if (parsed.is_object()) python = parsed.value("python_executable", "");
      }
    }
    if (!venv_marker.empty()) {
      auto venv = ReadJobFile(root, venv_marker);
      if (venv.ok()) python = (fs::path(std::string(Split(*venv, '\n').front())) / "bin" / "python").string();
    }
    if (!python.empty()) {
      // -I: a pip.py in the daemon's folder must not stand in for pip.
      auto freeze = RunCapture({python, "-I", "-m", "pip", "freeze", "--disable-pip-version-check"});
      if (freeze.ok() && freeze->exit_code == 0) {
        for (const auto& line : Split(freeze->out, '\n')) {
          if (!line.empty()) in.pip_freeze.emplace_back(line);
        }
      }
    }
    const Status fault = before_write ? before_write() : Status::Ok();
    Result<std::string> digest = fault.ok() ? WriteBlob(AssembleCapsule(in, /*complete=*/true)) : Result<std::string>(fault);
    return [this, id, digest = std::move(digest)] {
      auto it = jobs_by_id_.find(id);
      if (it == jobs_by_id_.end()) return;
      Job& j = *it->second;
      j.sealing_evidence = false;
      j.view.reset();
      if (!digest.ok()) {
        // Tried again later; meanwhile the job says why it is not sealed,
        // and it is kept in memory so that it is.
        if (j.evidence_error.empty()) {
          log::Warn("jobs", "cannot seal the evidence; trying again every 5s",
                    {{"job", id}, {"error", digest.status().ToString()}});
        }
        j.evidence_error = fmt::format("the evidence capsule could not be written ({}); it is tried again every {} s",
                                       digest.status().message(), kStoreRetryDelay.count() / 1000);
        ArmSealRetry();
        Publish();
        return;
      }
      if (!j.evidence_error.empty()) log::Info("jobs", "sealed the evidence after an earlier failure", {{"job", id}});
      j.evidence_error.clear();
      if (!store::IsTerminal(j.rec.state)) {
        Publish();
        return;  // resumed meanwhile: sealed again at its end
      }
      j.rec.evidence = *digest;
      // An ended job whose digest is lost with a crash is sealed again.
      if (Status st = DeferSaveJob(j); !st.ok()) LogStoreFailure(j, st);
      Publish();
    };
  });
}

void JobManager::ArmSealRetry() {
  if (seal_retry_armed_ || !options_.after) return;
  seal_retry_armed_ = true;
  options_.after(kStoreRetryDelay, [this] {
    seal_retry_armed_ = false;
    RetrySealing();
  });
}

void JobManager::RetrySealing() {
  std::vector<Job*> waiting;
  for (const auto& [seq, job] : jobs_by_seq_) {
    if (!job->evidence_error.empty()) waiting.push_back(job.get());
  }
  for (Job* job : waiting) {
    if (!store::IsTerminal(job->rec.state) || !job->rec.evidence.empty()) {
      job->evidence_error.clear();  // resumed, or sealed meanwhile
      job->view.reset();
      continue;
    }
    SealEvidence(*job);
  }
  if (!waiting.empty()) Publish();
}

Result<SubmitRequest> JobManager::ReproduceRequest(const std::string& id_or_name,
                                                  const std::vector<std::string>& overrides,
                                                  const std::string& submit_command,
                                                  const std::string& request_id) {
  TAU_ASSIGN_OR_RETURN(Job * original, Find(id_or_name));
  auto spec_json = nlohmann::json::parse(original->rec.spec_json, nullptr, false);
  if (spec_json.is_discarded()) return InternalError(fmt::format("job {}'s stored spec is not JSON", original->rec.id));
  spec::Diagnostics diags;
  spec::LoadOptions load;
  load.overrides = overrides;
  load.check_files = false;
  auto loaded = spec::LoadJobSpecText(render::EmitYaml(spec_json), fmt::format("<spec of {}>", original->rec.id), "/",
                                      load, &diags);
  if (!loaded.ok()) return InvalidArgumentError(diags.Format());
  SubmitRequest request;
  request.spec_json = spec::JobSpecToJson(loaded->spec);
  request.snapshot_digest = original->rec.snapshot_digest;
  request.submit_command = submit_command;
  request.secret_env = original->secret_env;
  request.reproduces = original->rec.id;
  // Resolved here, so the submit part can be written off the loop.
  request.client_evidence_json = GitEvidenceOf(original->rec);
  request.request_id = request_id;
  return request;
}

Result<std::shared_ptr<const JobView>> JobManager::Reproduce(const std::string& id_or_name,
                                                             const std::vector<std::string>& overrides,
                                                             const std::string& submit_command,
                                                             const std::string& request_id) {
  TAU_ASSIGN_OR_RETURN(SubmitRequest request, ReproduceRequest(id_or_name, overrides, submit_command, request_id));
  return Submit(request);
}

Result<EvidenceSource> JobManager::EvidenceSourceOf(const std::string& id_or_name) {
  TAU_ASSIGN_OR_RETURN(Job * job, Find(id_or_name));
  EvidenceSource source;
  if (!job->rec.evidence.empty()) {
    source.sealed_blob = home_.blob(job->rec.evidence).string();
    return source;
  }
  if (job->rec.evidence_submit.empty()) {
    return NotFoundError(fmt::format("job {} was submitted before this taugridd kept evidence", job->rec.id));
  }
  source.submit_blob = home_.blob(job->rec.evidence_submit).string();
  source.inputs = Gather(home_, options_, job->rec, job->attempts, job->spec, {}, "");
  source.inputs.digest_logs = false;
  return source;
}

Result<std::string> JobManager::AssembleEvidence(EvidenceSource source) const {
  if (options_.on_evidence_assembling) options_.on_evidence_assembling();
  if (!source.sealed_blob.empty()) return ReadFile(source.sealed_blob);
  TAU_ASSIGN_OR_RETURN(source.inputs.submit_json, ReadFile(source.submit_blob));
  TAU_ASSIGN_OR_RETURN(std::unique_ptr<store::JobStore> store, store::JobStore::Open(home_.database().string()));
  TAU_ASSIGN_OR_RETURN(source.inputs.events, store->LoadEvents(source.inputs.job.id, 0, 1'000'000));
  return AssembleCapsule(source.inputs, /*complete=*/false);
}

}  // namespace tau::server
