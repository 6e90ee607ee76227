#include "kube/kubeconfig.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace tau::kube {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("kubeconfig-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "certs");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }

  fs::path dir_;
};

// "hello" and "key" in base64.
constexpr const char* kHello = "aGVsbG8=";
constexpr const char* kKey = "a2V5";

std::string Config(const std::string& user_body, const std::string& cluster_body = "server: https://127.0.0.1:6443") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
         "clusters:\n- name: c1\n  cluster:\n    " + cluster_body + "\n"
         "contexts:\n- name: dev\n  context: {cluster: c1, user: alice, namespace: team-a}\n"
         "- name: other\n  context: {cluster: c1, user: bob}\n"
         "users:\n- name: alice\n  user:\n    " + user_body + "\n"
         "- name: bob\n  user: {token: bob-token}\n";
}

TEST_F(KubeconfigTest, CurrentContextWithRelativeCaFileAndClientCertData) {
  Write("certs/ca.crt", "CA");
  std::string path = Write("config", Config(std::string("client-certificate-data: ") + kHello +
                                                "\n    client-key-data: " + kKey,
                                            "server: https://127.0.0.1:6443/\n    certificate-authority: certs/ca.crt"));
  Result<KubeConfig> c = LoadKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");
  EXPECT_EQ(c->ca_file, (dir_ / "certs/ca.crt").string());
  EXPECT_EQ(c->ca_data, "");
  EXPECT_EQ(c->client_cert_data, "hello");
  EXPECT_EQ(c->client_key_data, "key");
  EXPECT_EQ(c->default_namespace, "team-a");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
  EXPECT_THAT(c->origin, HasSubstr("context dev"));
}

TEST_F(KubeconfigTest, NamedContextOverridesCurrentContext) {
  std::string path = Write("config", Config("token: t"));
  Result<KubeConfig> c = LoadKubeconfig(path, "other");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->token, "bob-token");
  EXPECT_EQ(c->default_namespace, "default");
}

TEST_F(KubeconfigTest, CaDataAndInsecureAndFiles) {
  std::string path = Write("config", Config("client-certificate: /abs/cert.pem\n    client-key: key.pem",
                                            std::string("server: https://h:1\n    certificate-authority-data: ") + kHello));
  Result<KubeConfig> c = LoadKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->ca_data, "hello");
  EXPECT_EQ(c->client_cert_file, "/abs/cert.pem");
  EXPECT_EQ(c->client_key_file, (dir_ / "key.pem").string());

  path = Write("insecure", Config("token: t", "server: https://h:1\n    insecure-skip-tls-verify: true"));
  c = LoadKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->token, "t");
}

TEST_F(KubeconfigTest, TokenFileIsResolvedAndMustExist) {
  Write("tok", "secret\n");
  std::string path = Write("config", Config("tokenFile: tok"));
  Result<KubeConfig> c = LoadKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->token_file, (dir_ / "tok").string());
  EXPECT_EQ(c->token, "");

  path = Write("config2", Config("tokenFile: missing-token"));
  c = LoadKubeconfig(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(c.error().message(), HasSubstr(path + ":16:16:"));
  EXPECT_THAT(c.error().message(), HasSubstr("users[0] (alice).user.tokenFile"));
  EXPECT_THAT(c.error().message(), HasSubstr((dir_ / "missing-token").string()));
}

TEST_F(KubeconfigTest, ExecPluginIsRefusedNamingFileAndUser) {
  std::string path = Write("config", Config("exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}"));
  Result<KubeConfig> c = LoadKubeconfig(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(c.error().message(), HasSubstr(path + ":16:11: users[0] (alice).user.exec"));
  EXPECT_THAT(c.error().message(), HasSubstr("user \"alice\" in kubeconfig " + path));
  EXPECT_THAT(c.error().message(), HasSubstr("exec credential plugin"));
}

TEST_F(KubeconfigTest, AuthProviderAndBasicAuthAreRefused) {
  std::string path = Write("config", Config("auth-provider: {name: gcp}"));
  Result<KubeConfig> c = LoadKubeconfig(path);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error().message(), HasSubstr("users[0] (alice).user.auth-provider"));
  EXPECT_THAT(c.error().message(), HasSubstr("user \"alice\""));

  path = Write("basic", Config("username: a\n    password: b"));
  c = LoadKubeconfig(path);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error().message(), HasSubstr("users[0] (alice).user.username"));
}

TEST_F(KubeconfigTest, MissingFileIsNotFound) {
  Result<KubeConfig> c = LoadKubeconfig((dir_ / "nope").string());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(c.error().message(), HasSubstr((dir_ / "nope").string()));
}

TEST_F(KubeconfigTest, BrokenYamlNamesLineAndColumn) {
  std::string path = Write("config", "clusters:\n  - name: [unclosed\n");
  Result<KubeConfig> c = LoadKubeconfig(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(c.error().message(), HasSubstr(path + ":"));
  EXPECT_THAT(c.error().message(), HasSubstr("not valid YAML"));
}

// yaml-cpp alone reads a quoted server address never closed as a string
// holding the rest of the file; the strict reader refuses it at the quote.
TEST_F(KubeconfigTest, AnUnterminatedQuoteIsNotValidYamlAtTheQuote) {
  std::string path = Write("config",
                           "clusters:\n  - name: c\n    cluster:\n      server: \"https://k:6443\n"
                           "contexts:\n  - name: x\n    context: {cluster: c, user: u}\ncurrent-context: x\n");
  Result<KubeConfig> c = LoadKubeconfig(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(c.error().message(),
              HasSubstr(path + ":4:15: not valid YAML: this quoted string is never closed"));
}

TEST_F(KubeconfigTest, StructuralErrorsNameTheKeyPath) {
  struct Case {
    std::string text;
    std::string context;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"- a\n", "", "(top level): a kubeconfig must be a mapping"},
      {"apiVersion: v1\nclusters: []\n", "", "current-context: is not set and no context was named"},
      {Config("token: t"), "prod", "contexts: no entry named \"prod\" (named by the context option)"},
      {"current-context: x\ncontexts: {a: b}\n", "", "contexts: must be a list"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {user: u}\n", "", "contexts[0] (x).context.cluster: is not set"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: gone}\nclusters: []\n", "",
       "clusters: no entry named \"gone\" (named by contexts[0] (x).context.cluster)"},
      {Config("token: t", "certificate-authority: ca"), "", "clusters[0] (c1).cluster.server: is not set"},
      {Config("token: t", "server: ftp://h"), "", "clusters[0] (c1).cluster.server: \"ftp://h\" is not an http"},
      {Config("token: t", "server: {a: 1}"), "", "clusters[0] (c1).cluster.server: must be a string"},
      {Config("token: t", "server: https://h\n    certificate-authority-data: '!!notbase64'"), "",
       "clusters[0] (c1).cluster.certificate-authority-data: is not valid base64"},
      {Config("token: t", "server: https://h\n    certificate-authority: a\n    certificate-authority-data: YQ=="), "",
       "set only one of certificate-authority and certificate-authority-data"},
      {Config("token: t", "server: https://h\n    insecure-skip-tls-verify: maybe"), "",
       "clusters[0] (c1).cluster.insecure-skip-tls-verify: must be true or false"},
      {Config("token: t", "server: https://h\n    insecure-skip-tls-verify: true\n    certificate-authority: a"), "",
       "cannot be combined with certificate-authority"},
      {Config("token: t", "server: https://h\n    tls-server-name: api"), "", "tls-server-name: is not supported"},
      {Config("token: t", "server: https://h\n    proxy-url: http://p"), "", "proxy-url: proxies are not supported"},
      {Config("client-certificate-data: YQ=="), "", "users[0] (alice).user.client-key: is not set, but client-certificate is"},
      {Config("client-key: k"), "", "users[0] (alice).user.client-certificate: is not set, but client-key is"},
      {Config("as: admin"), "", "users[0] (alice).user.as"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
       "clusters:\n- name: c\n  cluster: {server: 'https://h'}\nusers:\n- just-a-string\n",
       "", "users[0]: must be a mapping with name and user"},
  };
  for (const auto& tc : cases) {
    std::string path = Write("config", tc.text);
    Result<KubeConfig> c = LoadKubeconfig(path, tc.context);
    ASSERT_FALSE(c.ok()) << tc.text;
    EXPECT_EQ(c.error().code(), StatusCode::kInvalidArgument) << tc.text;
    EXPECT_THAT(c.error().message(), HasSubstr(tc.expected)) << tc.text;
    EXPECT_THAT(c.error().message(), HasSubstr(path)) << tc.text;
  }
}

// The kubeconfig is walked on the project's own tree, which keeps whether
// a scalar was quoted or tagged: a quoted "true" is a string, as kubectl
// reads it (yaml-cpp handed its text to the bool check, which took it).
TEST_F(KubeconfigTest, AQuotedOrStrTaggedBooleanIsAStringAndRefused) {
  for (const std::string value : {"\"true\"", "'false'", "!!str true"}) {
    std::string path = Write("config", Config("token: t", "server: https://h:1\n    insecure-skip-tls-verify: " + value));
    Result<KubeConfig> c = LoadKubeconfig(path);
    ASSERT_FALSE(c.ok()) << value;
    EXPECT_THAT(c.error().message(),
                HasSubstr(path + ":8:31: clusters[0] (c1).cluster.insecure-skip-tls-verify: must be true or false"))
        << value;
  }
}

TEST_F(KubeconfigTest, UserWithoutCredentialsIsAnonymous) {
  std::string path = Write("config",
                           "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                           "clusters:\n- name: c\n  cluster: {server: 'http://127.0.0.1:8080'}\nusers:\n- name: u\n");
  Result<KubeConfig> c = LoadKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->server, "http://127.0.0.1:8080");
  EXPECT_EQ(c->token, "");
  EXPECT_EQ(c->client_cert_file, "");
}

TEST_F(KubeconfigTest, InClusterConfig) {
  std::map<std::string, std::string> env;
  auto lookup = [&](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  InClusterPaths paths{(dir_ / "token").string(), (dir_ / "ca.crt").string(), (dir_ / "namespace").string()};

  Result<KubeConfig> c = LoadInClusterConfig(lookup, paths);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(c.error().message(), HasSubstr("KUBERNETES_SERVICE_HOST"));

  env = {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}};
  c = LoadInClusterConfig(lookup, paths);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(c.error().message(), HasSubstr("service-account token " + paths.token_file));

  Write("token", "tok\n");
  c = LoadInClusterConfig(lookup, paths);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error().message(), HasSubstr("service-account CA " + paths.ca_file));

  Write("ca.crt", "CA");
  c = LoadInClusterConfig(lookup, paths);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->server, "https://10.0.0.1:443");
  EXPECT_EQ(c->token_file, paths.token_file);
  EXPECT_EQ(c->ca_file, paths.ca_file);
  EXPECT_EQ(c->default_namespace, "default");

  Write("namespace", "jobs\n");
  env["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  c = LoadInClusterConfig(lookup, paths);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->server, "https://[fd00::1]:443");
  EXPECT_EQ(c->default_namespace, "jobs");
}

TEST(Base64Test, DecodesStrictly) {
  EXPECT_EQ(DecodeBase64("aGVsbG8="), "hello");
  EXPECT_EQ(DecodeBase64("aGVsbG8"), "hello");
  EXPECT_EQ(DecodeBase64("aGVs\nbG8=\n"), "hello");
  EXPECT_EQ(DecodeBase64(""), "");
  EXPECT_EQ(DecodeBase64("+/+/"), std::string("\xfb\xff\xbf", 3));
  EXPECT_EQ(DecodeBase64("aGVsbG8=x"), std::nullopt);
  EXPECT_EQ(DecodeBase64("a"), std::nullopt);
  EXPECT_EQ(DecodeBase64("aG!s"), std::nullopt);
  EXPECT_EQ(DecodeBase64("aGVsbG8==="), std::nullopt);
}

}  // namespace
}  // namespace tau::kube
