// GPUs over HTTP: inventory with health (tau nodes) and the operator's
// clear / drain / undrain.

#include <fmt/format.h>

#include "server/api_http.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

namespace tau::server {

void AddGpuRoutes(httplib::Server& server, const ApiContext& ctx, std::function<std::string()> cluster_nodes) {
  server.Get("/api/v1/gpus", [ctx, cluster_nodes](const httplib::Request&, httplib::Response& res) {
    std::string text = ctx.loop->Call([&] { return cluster_nodes ? cluster_nodes() : ctx.jobs->GpusJson(); });
    res.status = 200;
    res.set_content(text, "application/json");
  });
  server.Post(R"(/api/v1/admin/gpus/([^/]+)/(clear|drain|undrain))",
              [ctx](const httplib::Request& req, httplib::Response& res) {
                // The GPU by index, UUID or a UUID's unique prefix.
                std::string name = req.matches[1];
                std::string action = req.matches[2];
                Result<std::string> uuid = ctx.loop->Call([&]() -> Result<std::string> {
                  TAU_ASSIGN_OR_RETURN(std::string found, ctx.jobs->GpuUuidOf(name));
                  Status st = action == "clear" ? ctx.jobs->ClearGpu(found) : ctx.jobs->DrainGpu(found, action == "drain");
                  if (!st.ok()) return st;
                  return found;
                });
                if (!uuid.ok()) return SendError(res, uuid.status());
                SendJson(res, {{"gpu", name}, {"uuid", *uuid}, {"action", action}});
              });
}

}  // namespace tau::server
