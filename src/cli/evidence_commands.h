#pragma once

#include <string>
#include <vector>

namespace tau::cli {

// tau evidence JOB [-o json|yaml] [--export FILE.tar.zst]
int RunEvidence(const std::string& job, const std::string& output, const std::string& export_file);

// tau reproduce JOB [-f] [--set PATH=VALUE]...: the same snapshot and spec
// as a new job linked to the original.
int RunReproduce(const std::string& job, const std::vector<std::string>& overrides, bool follow,
                 const std::string& command_line);

// tau diff JOB1 JOB2: spec, code and environment differences.
int RunDiff(const std::string& a, const std::string& b, const std::string& output);

// tau outputs JOB [-o json]; tau cp JOB:PATH DEST (JOB: alone copies all).
int RunOutputs(const std::string& job, const std::string& output);
int RunCopy(const std::string& source, const std::string& dest);

}  // namespace tau::cli
