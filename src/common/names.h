#pragma once

#include <string_view>

#include "common/status.h"

namespace tau {

// Each check returns OK or InvalidArgument with a message that says which
// rule the text breaks (not just "invalid").

// RFC 1123 label: 1-63 characters, lowercase a-z, 0-9 and '-', starting and
// ending with a letter or digit. Job names, workspaces (namespaces).
Status CheckDns1123Label(std::string_view text);

// RFC 1123 subdomain: 1-253 characters, dot-separated labels as above.
// Kueue object names (LocalQueue, WorkloadPriorityClass, ...).
Status CheckDns1123Subdomain(std::string_view text);

// Environment variable name: [A-Za-z_][A-Za-z0-9_]*.
Status CheckEnvVarName(std::string_view text);

// Kubernetes label value: empty or 1-63 characters [A-Za-z0-9._-], starting
// and ending with an alphanumeric character.
Status CheckLabelValue(std::string_view text);

// A submit's request id (docs/api.md): 1-128 characters [A-Za-z0-9._:-].
Status CheckRequestId(std::string_view text);

}  // namespace tau
