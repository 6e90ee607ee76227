#include "kube/kubeconfig.h"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "spec/yaml_tree.h"

namespace tau::kube {
namespace {

namespace fs = std::filesystem;

// Reads a whole file; NotFound/PermissionDenied... naming it and `what`.
Result<std::string> ReadFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return ErrnoError(errno, fmt::format("{} {}", what, path));
  }
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) {
    return ErrnoError(errno, fmt::format("reading {} {}", what, path));
  }
  return out.str();
}

using spec::Node;

// The key path and position of problems in one kubeconfig file.
class Doc {
 public:
  explicit Doc(const std::string& path) : path_(path) {}

  const std::string& path() const { return path_; }

  Status Error(const Node* node, std::string_view key_path, std::string_view message) const {
    return InvalidArgumentError(fmt::format("{}: {}: {}", Where(node), key_path, message));
  }

  std::string Where(const Node* node) const {
    if (node == nullptr || node->location.line == 0) {
      return "kubeconfig " + path_;
    }
    return fmt::format("{}:{}:{}", path_, node->location.line, node->location.column);
  }

  // The string at `map[key]`; nullopt when absent or null.
  Result<std::optional<std::string>> String(const Node& map, const char* key,
                                            const std::string& parent_path) const {
    const Node* v = map.Find(key);
    if (v == nullptr || v->IsNull()) {
      return std::optional<std::string>();
    }
    if (!v->IsScalar()) {
      return Error(v, parent_path + "." + key, "must be a string");
    }
    return std::optional<std::string>(v->scalar);
  }

  Result<bool> Bool(const Node& map, const char* key, const std::string& parent_path) const {
    const Node* v = map.Find(key);
    if (v == nullptr || v->IsNull()) {
      return false;
    }
    if (v->IsScalar() && !v->quoted) {
      const std::string& s = v->scalar;
      if (s == "true" || s == "True" || s == "TRUE") {
        return true;
      }
      if (s == "false" || s == "False" || s == "FALSE") {
        return false;
      }
    }
    return Error(v, parent_path + "." + key, "must be true or false");
  }

  // A file path as written, made absolute against the kubeconfig's folder.
  std::string Resolve(const std::string& file) const {
    fs::path p(file);
    if (p.is_absolute()) {
      return file;
    }
    return (fs::absolute(fs::path(path_)).parent_path() / p).lexically_normal().string();
  }

 private:
  const std::string& path_;
};

// An entry with no settings (a user with no credentials) reads as this.
const Node& EmptyMapping() {
  static const Node kEmpty = [] {
    Node n;
    n.kind = Node::Kind::kMapping;
    return n;
  }();
  return kEmpty;
}

struct Named {
  const Node* body;      // the value under `field` ("cluster", "user", "context"); never null
  std::string key_path;  // `users[1] (alice).user`
};

// Finds the entry called `name` in the list at `root[list]`, whose entries
// look like {name: NAME, FIELD: {...}}.
Result<Named> FindNamed(const Doc& doc, const Node& root, const char* list, const char* field,
                        const std::string& name, std::string_view wanted_by) {
  const Node* seq = root.Find(list);
  if (seq != nullptr && !seq->IsNull() && !seq->IsSequence()) {
    return doc.Error(seq, list, "must be a list");
  }
  if (seq != nullptr && seq->IsSequence()) {
    for (size_t i = 0; i < seq->items.size(); ++i) {
      const Node& entry = seq->items[i];
      std::string entry_path = fmt::format("{}[{}]", list, i);
      if (!entry.IsMapping()) {
        return doc.Error(&entry, entry_path, "must be a mapping with name and " + std::string(field));
      }
      TAU_ASSIGN_OR_RETURN(auto entry_name, doc.String(entry, "name", entry_path));
      if (!entry_name || *entry_name != name) {
        continue;
      }
      std::string body_path = fmt::format("{} ({}).{}", entry_path, name, field);
      const Node* body = entry.Find(field);
      if (body == nullptr || body->IsNull()) {
        return Named{&EmptyMapping(), body_path};
      }
      if (!body->IsMapping()) {
        return doc.Error(body, body_path, "must be a mapping");
      }
      return Named{body, body_path};
    }
  }
  return doc.Error(seq != nullptr ? seq : &root, list,
                   fmt::format("no entry named \"{}\" (named by {})", name, wanted_by));
}

// Reads `FIELD` (a path) and `FIELD-data` (base64) into file/data; both set
// is an error, as kubectl's validation says.
Status ReadFileOrData(const Doc& doc, const Named& at, const char* field, std::string* file,
                      std::string* data) {
  std::string data_key = std::string(field) + "-data";
  TAU_ASSIGN_OR_RETURN(auto path, doc.String(*at.body, field, at.key_path));
  TAU_ASSIGN_OR_RETURN(auto encoded, doc.String(*at.body, data_key.c_str(), at.key_path));
  if (path && !path->empty() && encoded && !encoded->empty()) {
    return doc.Error(at.body->Find(data_key), at.key_path + "." + data_key,
                     fmt::format("set only one of {} and {}", field, data_key));
  }
  if (encoded && !encoded->empty()) {
    std::optional<std::string> decoded = DecodeBase64(*encoded);
    if (!decoded) {
      return doc.Error(at.body->Find(data_key), at.key_path + "." + data_key, "is not valid base64");
    }
    *data = std::move(*decoded);
  } else if (path && !path->empty()) {
    *file = doc.Resolve(*path);
  }
  return Status::Ok();
}

Result<KubeConfig> Resolve(const Doc& doc, const Node& root, std::string_view wanted_context) {
  if (!root.IsMapping()) {
    return doc.Error(&root, "(top level)", "a kubeconfig must be a mapping (apiVersion: v1, kind: Config)");
  }
  std::string context_name(wanted_context);
  std::string context_by = "the context option";
  if (context_name.empty()) {
    TAU_ASSIGN_OR_RETURN(auto current, doc.String(root, "current-context", ""));
    if (!current || current->empty()) {
      return doc.Error(&root, "current-context", "is not set and no context was named");
    }
    context_name = *current;
    context_by = "current-context";
  }
  TAU_ASSIGN_OR_RETURN(Named context, FindNamed(doc, root, "contexts", "context", context_name, context_by));
  TAU_ASSIGN_OR_RETURN(auto cluster_name, doc.String(*context.body, "cluster", context.key_path));
  if (!cluster_name || cluster_name->empty()) {
    return doc.Error(context.body, context.key_path + ".cluster", "is not set");
  }
  TAU_ASSIGN_OR_RETURN(Named cluster, FindNamed(doc, root, "clusters", "cluster", *cluster_name,
                                                context.key_path + ".cluster"));
  TAU_ASSIGN_OR_RETURN(auto user_name, doc.String(*context.body, "user", context.key_path));
  TAU_ASSIGN_OR_RETURN(auto ns, doc.String(*context.body, "namespace", context.key_path));

  KubeConfig config;
  config.origin = fmt::format("kubeconfig {} (context {})", doc.path(), context_name);
  if (ns && !ns->empty()) {
    config.default_namespace = *ns;
  }

  TAU_ASSIGN_OR_RETURN(auto server, doc.String(*cluster.body, "server", cluster.key_path));
  if (!server || server->empty()) {
    return doc.Error(cluster.body, cluster.key_path + ".server", "is not set");
  }
  if (server->rfind("https://", 0) != 0 && server->rfind("http://", 0) != 0) {
    return doc.Error(cluster.body->Find("server"), cluster.key_path + ".server",
                     fmt::format("\"{}\" is not an http:// or https:// URL", *server));
  }
  config.server = *server;
  while (config.server.size() > 8 && config.server.back() == '/') {
    config.server.pop_back();
  }
  TAU_RETURN_IF_ERROR(ReadFileOrData(doc, cluster, "certificate-authority", &config.ca_file, &config.ca_data));
  TAU_ASSIGN_OR_RETURN(config.insecure_skip_tls_verify,
                       doc.Bool(*cluster.body, "insecure-skip-tls-verify", cluster.key_path));
  if (config.insecure_skip_tls_verify && (!config.ca_file.empty() || !config.ca_data.empty())) {
    return doc.Error(cluster.body->Find("insecure-skip-tls-verify"), cluster.key_path + ".insecure-skip-tls-verify",
                     "cannot be combined with certificate-authority(-data)");
  }
  TAU_ASSIGN_OR_RETURN(auto server_name, doc.String(*cluster.body, "tls-server-name", cluster.key_path));
  if (server_name && !server_name->empty()) {
    return doc.Error(cluster.body->Find("tls-server-name"), cluster.key_path + ".tls-server-name",
                     "is not supported; name the server by a host its certificate covers");
  }
  TAU_ASSIGN_OR_RETURN(auto proxy, doc.String(*cluster.body, "proxy-url", cluster.key_path));
  if (proxy && !proxy->empty()) {
    return doc.Error(cluster.body->Find("proxy-url"), cluster.key_path + ".proxy-url", "proxies are not supported");
  }

  if (!user_name || user_name->empty()) {
    return config;  // anonymous
  }
  TAU_ASSIGN_OR_RETURN(Named user, FindNamed(doc, root, "users", "user", *user_name, context.key_path + ".user"));
  auto refuse = [&](const char* key, std::string_view what) -> Status {
    const Node* v = user.body->Find(key);
    if (v != nullptr && !v->IsNull()) {
      return doc.Error(v, user.key_path + "." + key,
                       fmt::format("user \"{}\" in kubeconfig {} uses {}, which is not supported; "
                                   "use a client certificate, token or tokenFile",
                                   *user_name, doc.path(), what));
    }
    return Status::Ok();
  };
  TAU_RETURN_IF_ERROR(refuse("exec", "an exec credential plugin"));
  TAU_RETURN_IF_ERROR(refuse("auth-provider", "an auth-provider"));
  TAU_RETURN_IF_ERROR(refuse("username", "username/password (basic) authentication"));
  TAU_RETURN_IF_ERROR(refuse("password", "username/password (basic) authentication"));
  TAU_RETURN_IF_ERROR(refuse("as", "impersonation"));

  TAU_RETURN_IF_ERROR(ReadFileOrData(doc, user, "client-certificate", &config.client_cert_file,
                                     &config.client_cert_data));
  TAU_RETURN_IF_ERROR(ReadFileOrData(doc, user, "client-key", &config.client_key_file, &config.client_key_data));
  bool has_cert = !config.client_cert_file.empty() || !config.client_cert_data.empty();
  bool has_key = !config.client_key_file.empty() || !config.client_key_data.empty();
  if (has_cert != has_key) {
    const char* missing = has_cert ? "client-key" : "client-certificate";
    return doc.Error(user.body, user.key_path + "." + missing,
                     fmt::format("is not set, but {} is", has_cert ? "client-certificate" : "client-key"));
  }
  TAU_ASSIGN_OR_RETURN(auto token, doc.String(*user.body, "token", user.key_path));
  TAU_ASSIGN_OR_RETURN(auto token_file, doc.String(*user.body, "tokenFile", user.key_path));
  if (token && !token->empty()) {
    config.token = *token;
  } else if (token_file && !token_file->empty()) {
    config.token_file = doc.Resolve(*token_file);
    Result<std::string> read = ReadFile(config.token_file, "token file");
    if (!read.ok()) {
      return doc.Error(user.body->Find("tokenFile"), user.key_path + ".tokenFile", read.error().message());
    }
  }
  return config;
}

}  // namespace

std::optional<std::string> DecodeBase64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  int digits = 0;
  int padding = 0;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      continue;
    }
    if (c == '=') {
      ++padding;
      continue;
    }
    int v = value(c);
    if (v < 0 || padding > 0) {
      return std::nullopt;  // a foreign character, or data after padding
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    ++digits;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  int rest = digits % 4;
  if (rest == 1 || padding > 2 || (padding > 0 && (digits + padding) % 4 != 0)) {
    return std::nullopt;
  }
  return out;
}

std::optional<std::string> ProcessEnv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) {
    return std::nullopt;
  }
  return std::string(v);
}

Result<KubeConfig> ParseKubeconfig(std::string_view text, const std::string& path, std::string_view context) {
  Doc doc(path);
  // The project's strict YAML reader (docs/development.md#yaml-parsing):
  // malformed YAML such as a quoted string never closed is an error here,
  // not a value.
  spec::ReadLimits limits;
  limits.max_bytes = 64 << 20;  // embedded certificates make kubeconfigs large
  limits.max_nodes = 1000000;
  limits.max_depth = 64;
  spec::Diagnostics diags;
  Node root;
  if (!spec::ReadYaml(text, path, limits, &root, &diags) || diags.has_errors()) {
    spec::Diagnostic first = diags.Sorted().front();
    std::string message = first.message;
    if (message.starts_with("invalid YAML: ")) message = message.substr(14);
    return InvalidArgumentError(fmt::format("{}:{}:{}: not valid YAML: {}", path, first.location.line,
                                            first.location.column, message));
  }
  return Resolve(doc, root, context);
}

Result<KubeConfig> LoadKubeconfig(const std::string& path, std::string_view context) {
  TAU_ASSIGN_OR_RETURN(std::string text, ReadFile(path, "kubeconfig"));
  return ParseKubeconfig(text, path, context);
}

Result<KubeConfig> LoadInClusterConfig(const EnvLookup& env, const InClusterPaths& paths) {
  std::optional<std::string> host = env("KUBERNETES_SERVICE_HOST");
  std::optional<std::string> port = env("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) {
    return FailedPreconditionError(
        "not running in a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  }
  KubeConfig config;
  config.origin = "in-cluster service account";
  bool ipv6 = host->find(':') != std::string::npos;
  config.server = fmt::format("https://{}{}{}:{}", ipv6 ? "[" : "", *host, ipv6 ? "]" : "", *port);
  TAU_ASSIGN_OR_RETURN(std::string token, ReadFile(paths.token_file, "service-account token"));
  (void)token;
  config.token_file = paths.token_file;
  TAU_ASSIGN_OR_RETURN(std::string ca, ReadFile(paths.ca_file, "service-account CA"));
  (void)ca;
  config.ca_file = paths.ca_file;
  Result<std::string> ns = ReadFile(paths.namespace_file, "service-account namespace");
  if (ns.ok()) {
    std::string n = *ns;
    while (!n.empty() && (n.back() == '\n' || n.back() == ' ' || n.back() == '\r')) {
      n.pop_back();
    }
    if (!n.empty()) {
      config.default_namespace = n;
    }
  } else if (ns.error().code() != StatusCode::kNotFound) {
    return ns.error();
  }
  return config;
}

}  // namespace tau::kube
