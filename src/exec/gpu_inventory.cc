#include "exec/gpu_inventory.h"

#include <fmt/format.h>

#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace tau::exec {

Result<std::vector<GpuDevice>> GpuConfigFile::List() {
  std::ifstream in(path_);
  if (!in) {
    if (errno == ENOENT) return std::vector<GpuDevice>{};
    return ErrnoError(errno, fmt::format("read {}", path_));
  }
  std::stringstream buf;
  buf << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(buf.str(), nullptr, false);
  if (!j.is_object() || !j.contains("gpus") || !j["gpus"].is_array()) {
    return InvalidArgumentError(fmt::format("{}: expected {{\"gpus\": [{{\"uuid\": ..., \"model\": ...}}, ...]}}", path_));
  }
  std::vector<GpuDevice> out;
  std::set<std::string> uuids;
  for (size_t i = 0; i < j["gpus"].size(); ++i) {
    const nlohmann::json& g = j["gpus"][i];
    if (!g.is_object() || !g.contains("uuid") || !g["uuid"].is_string() || g["uuid"].get<std::string>().empty()) {
      return InvalidArgumentError(fmt::format("{}: gpus[{}] needs a \"uuid\" string", path_, i));
    }
    GpuDevice d;
    d.index = g.contains("index") && g["index"].is_number_integer() ? g["index"].get<int>() : static_cast<int>(i);
    d.uuid = g["uuid"].get<std::string>();
    d.model = g.contains("model") && g["model"].is_string() ? g["model"].get<std::string>() : "";
    d.memory_mib = g.contains("memory_mib") && g["memory_mib"].is_number_integer() ? g["memory_mib"].get<int64_t>() : 0;
    if (!uuids.insert(d.uuid).second) {
      return InvalidArgumentError(fmt::format("{}: GPU {} is listed twice", path_, d.uuid));
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace tau::exec
