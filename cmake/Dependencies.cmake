# Every C++ dependency comes from a Debian 12 package (scripts/install-deps).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(yaml-cpp REQUIRED)
# Every YAML the project reads is parsed by libyaml (src/spec/yaml_reader.cc),
# which rejects what the YAML grammar rejects; yaml-cpp is not strict enough
# (docs/development.md#yaml-parsing).
pkg_check_modules(LIBYAML REQUIRED IMPORTED_TARGET yaml-0.1)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(tl-expected REQUIRED)
find_package(OpenSSL REQUIRED)
# The Kubernetes API client (src/kube) talks HTTPS through libcurl.
find_package(CURL 7.77 REQUIRED)
if(TAU_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(TAU_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

