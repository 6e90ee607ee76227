// The head gate: sockets wait in it, without a thread, until their request
// head is whole, late, or their peer goes. Real sockets (socketpairs).

#include "server/api_head_gate.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tau::server {
namespace {

using namespace std::chrono_literals;

struct Handed {
  int sock;
  std::string bytes;
  uint64_t tag;
};

class HeadGateTest : public ::testing::Test {
 protected:
  void Start(HeadGateOptions options) {
    gate_ = std::make_unique<HeadGate>(options, [this](int sock, std::string bytes, HeadGate::Clock::time_point,
                                                       uint64_t tag) {
      std::lock_guard lock(mu_);
      handed_.push_back({sock, std::move(bytes), tag});
      cv_.notify_all();
    });
  }
  void TearDown() override {
    if (gate_) gate_->Shutdown();
    for (int fd : fds_) ::close(fd);
    for (auto& h : handed_) ::close(h.sock);
  }
  // A connected pair: the gate's end and the client's.
  std::pair<int, int> Pair() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    fds_.push_back(sv[1]);
    return {sv[0], sv[1]};
  }
  // Waits for the n-th hand-back (the bound only guards against a hang).
  bool WaitHanded(size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 30s, [&] { return handed_.size() >= n; });
  }
  static bool PeerClosed(int client) {
    pollfd p{client, POLLIN, 0};
    if (::poll(&p, 1, 30000) != 1) return false;
    char c;
    return ::recv(client, &c, 1, 0) == 0;
  }
  static void Send(int fd, const std::string& s) { ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size())); }

  std::unique_ptr<HeadGate> gate_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Handed> handed_;
  std::vector<int> fds_;
};

TEST_F(HeadGateTest, ASocketComesBackWithItsWholeHeadAndTag) {
  Start({});
  auto [server, client] = Pair();
  ASSERT_TRUE(gate_->Park(server, "", {}, 7));
  Send(client, "GET / HTTP/1.1\r\nHo");
  Send(client, "st: x\r\n\r\nextra");
  ASSERT_TRUE(WaitHanded(1));
  EXPECT_EQ(handed_[0].sock, server);
  EXPECT_EQ(handed_[0].bytes, "GET / HTTP/1.1\r\nHost: x\r\n\r\nextra");
  EXPECT_EQ(handed_[0].tag, 7u);
  EXPECT_EQ(gate_->parked(), 0u);
}

TEST_F(HeadGateTest, AnEndSplitAcrossReadsIsFound) {
  Start({});
  auto [server, client] = Pair();
  ASSERT_TRUE(gate_->Park(server, "GET / HTTP/1.1\r\n\r", HeadGate::Clock::now()));
  Send(client, "\n");
  ASSERT_TRUE(WaitHanded(1));
  EXPECT_EQ(handed_[0].bytes, "GET / HTTP/1.1\r\n\r\n");
}

TEST_F(HeadGateTest, AHeadPastItsDeadlineComesBackUnfinished) {
  HeadGateOptions options;
  options.head_timeout = 100ms;
  Start(options);
  auto [server, client] = Pair();
  ASSERT_TRUE(gate_->Park(server));
  Send(client, "GET / HTTP/1.1\r\nX-Slow: a");
  ASSERT_TRUE(WaitHanded(1));
  EXPECT_EQ(handed_[0].bytes, "GET / HTTP/1.1\r\nX-Slow: a");
}

TEST_F(HeadGateTest, ALateHeadIsAnsweredByTheGateItselfAndClosed) {
  HeadGateOptions options;
  options.head_timeout = 100ms;
  options.late_answer = "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n";
  options.linger = 100ms;
  Start(options);
  auto [server, client] = Pair();
  ASSERT_TRUE(gate_->Park(server));
  Send(client, "GET / HTTP/1.1\r\nX-Slow: a");
  char buf[256];
  pollfd p{client, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 30000), 1);
  ssize_t n = ::recv(client, buf, sizeof buf, 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), options.late_answer);
  EXPECT_TRUE(PeerClosed(client)) << "its side is shut after the answer";
  EXPECT_EQ(gate_->late_answers(), 1u);
  for (int i = 0; i < 3000 && gate_->parked() > 0; ++i) std::this_thread::sleep_for(10ms);  // the linger
  EXPECT_EQ(gate_->parked(), 0u);
  std::lock_guard lock(mu_);
  EXPECT_TRUE(handed_.empty()) << "no thread took it";
}

TEST_F(HeadGateTest, ASilentSocketIsClosedAtTheIdleTimeout) {
  HeadGateOptions options;
  options.idle_timeout = 100ms;
  Start(options);
  auto [server, client] = Pair();
  ASSERT_TRUE(gate_->Park(server));
  EXPECT_TRUE(PeerClosed(client));
  EXPECT_EQ(gate_->parked(), 0u);
  std::lock_guard lock(mu_);
  EXPECT_TRUE(handed_.empty());
}

TEST_F(HeadGateTest, APeerThatClosesBeforeAByteIsClosedAndOneAfterBytesComesBack) {
  Start({});
  auto [quiet, quiet_client] = Pair();
  auto [sent, sent_client] = Pair();
  ASSERT_TRUE(gate_->Park(quiet));
  ASSERT_TRUE(gate_->Park(sent));
  ::shutdown(quiet_client, SHUT_WR);
  Send(sent_client, "GET / HTTP/1.1\r\n");
  ::shutdown(sent_client, SHUT_WR);
  ASSERT_TRUE(WaitHanded(1));
  EXPECT_EQ(handed_[0].sock, sent) << "what came before the peer closed is its request, for HTTP to answer";
  EXPECT_TRUE(PeerClosed(quiet_client));
}

TEST_F(HeadGateTest, AHeadWithNoEndComesBackAtTheLimit) {
  HeadGateOptions options;
  options.max_head = 32;
  Start(options);
  auto [server, client] = Pair();
  ASSERT_TRUE(gate_->Park(server));
  Send(client, std::string(40, 'a'));
  ASSERT_TRUE(WaitHanded(1));
  EXPECT_EQ(handed_[0].bytes.size(), 32u);
}

TEST_F(HeadGateTest, AFullGateAndAStoppedOneRefuse) {
  HeadGateOptions options;
  options.max_parked = 1;
  Start(options);
  auto [a, a_client] = Pair();
  auto [b, b_client] = Pair();
  fds_.push_back(b);
  ASSERT_TRUE(gate_->Park(a));
  EXPECT_FALSE(gate_->Park(b)) << "full";
  gate_->Shutdown();
  EXPECT_TRUE(PeerClosed(a_client)) << "shutting down closes what waits";
  EXPECT_FALSE(gate_->Park(b)) << "stopped";
}

}  // namespace
}  // namespace tau::server
