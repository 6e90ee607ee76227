// GPUs over HTTP: inventory with health (tau nodes) and the operator's
// clear / drain / undrain.

#include <fmt/format.h>

#include "server/api_http.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

namespace tau::server {

void AddGpuRoutes(httplib::Server& server, const ApiContext& ctx) {
  server.Get("/api/v1/gpus", [ctx](const httplib::Request&, httplib::Response& res) {
    std::string text = ctx.loop->Call([&] { return ctx.jobs->GpusJson(); });
    res.status = 200;
    res.set_content(text, "application/json");
  });
  server.Post(R"(/api/v1/admin/gpus/([^/]+)/(clear|drain|undrain))",
              [ctx](const httplib::Request& req, httplib::Response& res) {
                std::string uuid = req.matches[1];
                std::string action = req.matches[2];
                Status st = ctx.loop->Call([&] {
                  if (action == "clear") return ctx.jobs->ClearGpu(uuid);
                  return ctx.jobs->DrainGpu(uuid, action == "drain");
                });
                if (!st.ok()) return SendError(res, st);
                SendJson(res, {{"uuid", uuid}, {"action", action}});
              });
}

}  // namespace tau::server
