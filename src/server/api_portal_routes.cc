// The web portal over HTTP (docs/portal.md): its pages are static files
// embedded in taugridd; all data comes from /api/v1, which accepts the
// session cookie set here.

#include <fmt/format.h>
#include <openssl/crypto.h>

#include "common/digest.h"
#include "portal/assets.h"
#include "server/api_http.h"

#include <httplib.h>

namespace tau::server {

std::string PortalSession(const std::string& token) { return Sha256Hex("taugrid-portal-session:" + token); }

std::string SessionCookieOf(const std::string& header) {
  size_t at = 0;
  while (at < header.size()) {
    size_t end = header.find(';', at);
    std::string part = header.substr(at, end == std::string::npos ? std::string::npos : end - at);
    while (!part.empty() && part.front() == ' ') part.erase(0, 1);
    if (part.rfind("tau_session=", 0) == 0) return part.substr(12);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return "";
}

namespace {

constexpr char kSignIn[] = R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>TauGrid: sign in</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/portal/style.css"></head>
<body><main><h1>TauGrid</h1><p>To sign in, run <code>tau portal</code> on this machine and open the address it prints.</p></main></body></html>
)";

bool SameSecret(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void SendAsset(httplib::Response& res, const portal::Asset& asset) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(std::string(asset.data, asset.size), std::string(asset.content_type));
}

}  // namespace

void AddPortalRoutes(httplib::Server& server, const std::string& token) {
  const std::string session = PortalSession(token);
  server.Get("/", [session](const httplib::Request& req, httplib::Response& res) {
    if (!SameSecret(SessionCookieOf(req.get_header_value("Cookie")), session)) {
      res.status = 200;
      res.set_content(kSignIn, "text/html; charset=utf-8");
      return;
    }
    if (const portal::Asset* index = portal::FindAsset("index.html")) SendAsset(res, *index);
  });
  server.Get(R"(/portal/([A-Za-z0-9_.-]+))", [](const httplib::Request& req, httplib::Response& res) {
    const portal::Asset* asset = portal::FindAsset(std::string(req.matches[1]));
    if (!asset) return SendError(res, NotFoundError(fmt::format("no portal file \"{}\"", std::string(req.matches[1]))));
    SendAsset(res, *asset);
  });
  server.Get("/login", [token, session](const httplib::Request& req, httplib::Response& res) {
    if (!SameSecret(req.get_param_value("token"), token)) {
      res.status = 401;
      res.set_content(kSignIn, "text/html; charset=utf-8");
      return;
    }
    // The token leaves the address bar: the cookie carries a session derived from it.
    res.set_header("Set-Cookie", fmt::format("tau_session={}; Path=/; HttpOnly; SameSite=Strict", session));
    res.set_redirect("/");
  });
}

}  // namespace tau::server
