// Fuzz target for the spec decoder. For any input it must not crash, hang
// or leak, and every spec it accepts must render and round-trip through
// canonical JSON unchanged. Built as a libFuzzer binary with clang
// (scripts/fuzz-spec) and, with any compiler, as a replay program that
// ctest runs over the kept corpus.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "render/render.h"
#include "spec/json_codec.h"
#include "spec/load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tau::spec::LoadOptions options;
  options.check_files = false;
  // An input line "#set PATH=VALUE" also exercises the override path.
  if (text.starts_with("#set ")) {
    size_t end = text.find('\n');
    options.overrides.emplace_back(text.substr(5, end == std::string_view::npos ? text.npos : end - 5));
  }
  tau::spec::Diagnostics diags;
  auto loaded = tau::spec::LoadJobSpecText(text, "fuzz.yaml", "/fuzz", options, &diags);
  (void)diags.Format();
  if (!loaded.ok()) return 0;

  std::string yaml = tau::render::RenderYaml(loaded->spec, {});
  std::string json = tau::spec::JobSpecToJson(loaded->spec);
  tau::spec::Diagnostics again_diags;
  tau::spec::LoadOptions plain;
  plain.check_files = false;
  auto again = tau::spec::LoadJobSpecText(json, "canonical.json", "/fuzz", plain, &again_diags);
  if (!again.ok() || tau::spec::JobSpecToJson(again->spec) != json) {
    std::fprintf(stderr, "canonical JSON does not round-trip:\n%s\n%s\n", json.c_str(),
                 again_diags.Format().c_str());
    std::abort();
  }
  return 0;
}
