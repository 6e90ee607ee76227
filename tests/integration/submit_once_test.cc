// One `tau run` is one job even when the connection drops after the
// server created it: a proxy between tau and taugridd lets the submit
// through and drops its answer.

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "daemon_fixture.h"

namespace tau::testing {
namespace {

// Relays one connection at a time to 127.0.0.1:`port`; the answer to the
// first POST /api/v1/jobs is dropped, with both connections closed.
class DroppingProxy {
 public:
  explicit DroppingProxy(int port) : target_port_(port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    ::listen(listen_fd_, 8);
    thread_ = std::thread([this] { Run(); });
  }
  ~DroppingProxy() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int submits() const { return submits_; }

 private:
  void Run() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(target_port_));
      if (::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) Relay(client, server);
      ::close(server);
      ::close(client);
    }
  }
  void Relay(int client, int server) {
    bool drop_answer = false;
    std::string sent;
    while (!stop_) {
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (::poll(p, 2, 50) <= 0) continue;
      char buf[65536];
      if (p[0].revents) {
        ssize_t n = ::recv(client, buf, sizeof buf, 0);
        if (n <= 0) return;
        sent.append(buf, static_cast<size_t>(n));
        for (size_t at; (at = sent.find("POST /api/v1/jobs HTTP/1.1")) != std::string::npos;) {
          sent.erase(0, at + 10);
          if (++submits_ == 1) drop_answer = true;
        }
        if (::send(server, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) return;
      }
      if (p[1].revents) {
        ssize_t n = ::recv(server, buf, sizeof buf, 0);
        if (n <= 0) return;
        if (drop_answer) return;  // the job exists now; its answer is lost
        if (::send(client, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) return;
      }
    }
  }

  int target_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> submits_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class SubmitOnceTest : public DaemonTest {};

TEST_F(SubmitOnceTest, ADroppedAnswerToASubmitDoesNotMakeASecondJob) {
  std::string url = ApiUrl();
  ASSERT_FALSE(url.empty());
  DroppingProxy proxy(std::atoi(url.substr(url.rfind(':') + 1).c_str()));
  WriteFile("train.sh", "echo trained\n");
  std::string spec = WriteSpec("once.yaml",
                               "schema_version: 1\nname: once\nrun:\n  entrypoint: 'sh train.sh'\n"
                               "  launcher: command\ncompute:\n  cpus: 100m\n");
  extra_env_["TAU_SERVER"] = proxy.url();
  extra_env_["TAU_TOKEN"] = ApiToken();
  CommandResult r = Tau({"run", spec});
  extra_env_.clear();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(proxy.submits(), 2) << "tau sends the submit again after the lost answer";
  std::string id = r.out.substr(0, r.out.find('\n'));
  CommandResult list = Tau({"list", "-o", "json"});
  nlohmann::json jobs = nlohmann::json::parse(list.out, nullptr, false);
  ASSERT_TRUE(jobs.is_array()) << list.out;
  ASSERT_EQ(jobs.size(), 1u) << list.out;
  EXPECT_EQ(jobs[0]["id"], id);
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
}

}  // namespace
}  // namespace tau::testing
