#pragma once

#include <string>
#include <vector>

namespace tau::cli {

// Queue and platform-configuration commands. Each returns the exit code.

// tau admin apply -f PATH...: Kueue manifests from files, folders (their
// .yaml/.yml/.json files) or `-` (stdin), upserted by kind and name. Nothing
// is sent unless every document checks out locally; a job spec or a
// batch/v1 Job is refused with a pointer to `tau run`. Every file goes in
// one request (applied in dependency order on a cluster, where
// --force-conflicts takes over fields another field manager owns).
int RunAdminApply(const std::vector<std::string>& paths, bool force_conflicts = false);
// tau admin get [KIND [NAME]] [-o yaml|json]: the configuration as Kueue
// YAML (default), or JSON (one object, or a List of them).
int RunAdminGet(const std::string& kind, const std::string& name, const std::string& output);
// tau admin delete KIND NAME [-n WORKSPACE]
int RunAdminDelete(const std::string& kind, const std::string& name, const std::string& workspace);
// tau queues [-o json|yaml]
int RunQueues(const std::string& output);
// tau why JOB [-o json|yaml]: why it waits (or what happened to it).
int RunWhy(const std::string& job, const std::string& output);
// tau set-priority JOB CLASS
int RunSetPriority(const std::string& job, const std::string& priority_class);
// tau hold JOB / tau release JOB
int RunHold(const std::vector<std::string>& jobs, bool hold);

}  // namespace tau::cli
