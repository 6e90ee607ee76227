// Speed of the spec front door: parsing and validating a spec, and rendering
// it to Kubernetes objects. `tau validate` and `tau run` pay this on every
// call. Results: docs/performance.md.

#include <benchmark/benchmark.h>
#include <yaml-cpp/yaml.h>

#include "render/render.h"
#include "spec/json_codec.h"
#include "spec/load.h"

namespace {

constexpr char kSeed[] = R"(schema_version: 1
name: aks-gpu-quickstart
run:
  entrypoint: train.py
  workload_kind: rayjob
compute:
  gpus: 1
  workers: 1
  cpus: 16
  memory: 64Gi
runtime:
  image: mcr.microsoft.com/aks/ai-runtime/ray:py3.12-ray2.56.0-cuda13.0
  pip:
    - torch>=2.4.0
)";

tau::spec::LoadedSpec Load(const char* text) {
  tau::spec::Diagnostics diags;
  tau::spec::LoadOptions options;
  options.check_files = false;
  return *tau::spec::LoadJobSpecText(text, "bench.yaml", "/", options, &diags);
}

void BM_LoadAndValidateSeedSpec(benchmark::State& state) {
  for (auto _ : state) {
    tau::spec::Diagnostics diags;
    tau::spec::LoadOptions options;
    options.check_files = false;
    auto loaded = tau::spec::LoadJobSpecText(kSeed, "bench.yaml", "/", options, &diags);
    benchmark::DoNotOptimize(loaded);
  }
}
BENCHMARK(BM_LoadAndValidateSeedSpec);

// Baseline: yaml-cpp building its own node tree from the same text, with no
// validation. The difference to the benchmark above is what TauGrid's
// positioned decoding and checks cost.
void BM_BaselineYamlCppLoadOnly(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(YAML::Load(kSeed));
}
BENCHMARK(BM_BaselineYamlCppLoadOnly);

void BM_RenderRayJobYaml(benchmark::State& state) {
  auto loaded = Load(kSeed);
  for (auto _ : state) benchmark::DoNotOptimize(tau::render::RenderYaml(loaded.spec, {}));
}
BENCHMARK(BM_RenderRayJobYaml);

void BM_SpecSha256(benchmark::State& state) {
  auto loaded = Load(kSeed);
  for (auto _ : state) benchmark::DoNotOptimize(tau::spec::JobSpecSha256(loaded.spec));
}
BENCHMARK(BM_SpecSha256);

}  // namespace

BENCHMARK_MAIN();
