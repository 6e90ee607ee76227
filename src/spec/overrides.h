#pragma once

#include <string_view>

#include "spec/diagnostics.h"
#include "spec/yaml_tree.h"

namespace tau::spec {

// Applies one `--set path=value` to a parsed document before it is decoded:
// `compute.gpus=2`, `run.args=[--lr, "0.1"]`, `runtime.env.HF_HOME=/data`.
// The value is YAML (a scalar, or a flow list/mapping); missing mappings on
// the path are created. Values and keys it adds are located at the text of
// the override, so later diagnostics name it. Problems go to `diags`.
void ApplyOverride(std::string_view assignment, Node* root, Diagnostics* diags);

}  // namespace tau::spec
