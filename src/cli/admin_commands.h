#pragma once

#include <string>
#include <vector>

namespace tau::cli {

// Queue and platform-configuration commands. Each returns the exit code.

// tau admin apply -f FILE...: Kueue manifests, upserted by kind and name.
int RunAdminApply(const std::vector<std::string>& files);
// tau admin get [KIND [NAME]]: the configuration as Kueue YAML.
int RunAdminGet(const std::string& kind, const std::string& name);
// tau admin delete KIND NAME [-n WORKSPACE]
int RunAdminDelete(const std::string& kind, const std::string& name, const std::string& workspace);
// tau queues [-o json]
int RunQueues(const std::string& output);
// tau why JOB: why it waits (or what happened to it).
int RunWhy(const std::string& job);
// tau set-priority JOB CLASS
int RunSetPriority(const std::string& job, const std::string& priority_class);
// tau hold JOB / tau release JOB
int RunHold(const std::vector<std::string>& jobs, bool hold);

}  // namespace tau::cli
