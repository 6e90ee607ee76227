#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace tau::kube {

// How to reach and authenticate to one Kubernetes API server: what a
// kubeconfig context (or the in-cluster service account) resolves to.
// File paths are absolute; `*_data` fields hold the decoded PEM bytes.
struct KubeConfig {
  std::string server;  // "https://127.0.0.1:6443"
  // Trust: a CA bundle from a file or from memory (at most one is set), or
  // no verification at all. With none of them, the system CAs are used.
  std::string ca_file;
  std::string ca_data;
  bool insecure_skip_tls_verify = false;
  // Client certificate and key, each from a file or from memory.
  std::string client_cert_file;
  std::string client_cert_data;
  std::string client_key_file;
  std::string client_key_data;
  // Bearer token: `token` as given, or read from `token_file` before every
  // request (service-account tokens are rotated in place).
  std::string token;
  std::string token_file;
  // The context's namespace, "default" when it names none.
  std::string default_namespace = "default";
  // Where this came from, for messages: "kubeconfig /path (context ctx)" or
  // "in-cluster service account".
  std::string origin;
};

// Reads the kubeconfig at `path` and resolves `context` (its
// current-context when empty). Supported: cluster server,
// certificate-authority(-data), insecure-skip-tls-verify;
// user client-certificate(-data), client-key(-data), token, tokenFile.
// Relative file paths are taken from the kubeconfig's folder, as kubectl does.
// Refused with an error naming the file and the user: `exec` credential
// plugins, `auth-provider`s, username/password and impersonation; clusters
// with tls-server-name or proxy-url are refused too. Every error names the
// file and the key path ("FILE:LINE:COL: users[0] (alice).user.exec: ...").
// A missing file is NotFound; anything else wrong is InvalidArgument.
Result<KubeConfig> LoadKubeconfig(const std::string& path, std::string_view context = {});

// The same for kubeconfig text already in memory; `path` is used for
// messages and to resolve relative file paths.
Result<KubeConfig> ParseKubeconfig(std::string_view text, const std::string& path,
                                   std::string_view context = {});

// Where a pod finds its service account; tests point these at a temp dir.
struct InClusterPaths {
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string namespace_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
};

// Looks up an environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
// The process environment.
std::optional<std::string> ProcessEnv(const char* name);

// The configuration of a process running in a pod: the API server at
// KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT, the service-account token
// (re-read before each request), its CA and namespace. FailedPrecondition
// when those variables are unset (not in a cluster); NotFound naming the
// file when the token or CA is missing.
Result<KubeConfig> LoadInClusterConfig(const EnvLookup& env = ProcessEnv,
                                       const InClusterPaths& paths = {});

// Strict base64 (RFC 4648, padding optional, ASCII whitespace ignored as in
// PEM wrapped lines); nullopt on any other character.
std::optional<std::string> DecodeBase64(std::string_view text);

}  // namespace tau::kube
