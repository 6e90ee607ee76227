#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sched/kueue_objects.h"
#include "spec/diagnostics.h"

namespace tau::render {

// One Kueue object as applied: its kind and name, and the object as
// written (JSON), so `tau admin get` prints every field back.
struct AppliedObject {
  std::string kind;
  std::string name;
  std::string namespace_;  // LocalQueue only
  std::string json;
};

struct DecodedKueueConfig {
  sched::KueueConfig config;
  std::vector<AppliedObject> objects;
};

// Decodes Kueue manifests as `tau admin apply -f` takes them: any number of
// YAML documents (comments and empty documents included) of kinds
// ResourceFlavor, ClusterQueue, Cohort, LocalQueue and WorkloadPriorityClass,
// apiVersion kueue.x-k8s.io/v1beta2 (or v1beta1, whose `cohort` becomes
// `cohortName`). Unknown kinds and fields are errors at FILE:LINE:COL; fields
// Kueue has but the embedded engine does not act on yet (admission checks,
// topology, ...) are warnings naming them. Returns false when any error was
// found.
//
// Combinations Kueue refuses (borrowWithinCohort with fair sharing) are
// errors in kApply mode; kStored (a configuration an earlier version
// accepted and stored) reports them as warnings, so that the daemon still
// starts with it.
enum class KueueDecodeMode { kApply, kStored };
bool DecodeKueueManifests(std::string_view text, std::string_view file_name, DecodedKueueConfig* out,
                          spec::Diagnostics* diags, KueueDecodeMode mode = KueueDecodeMode::kApply);

}  // namespace tau::render
