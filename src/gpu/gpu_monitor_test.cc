// The monitor's XID thread against a scripted source: it outlives errors
// from the event set, registers again with backoff, and reports which
// GPUs' events cannot be read meanwhile.

#include "gpu/gpu_monitor.h"

#include <gtest/gtest.h>

#include <deque>

namespace tau::gpu {
namespace {

using std::chrono::milliseconds;

// Answers RegisterXidEvents and WaitXid from scripts, one entry a call;
// an empty script registers both GPUs and waits without events.
class ScriptedSource final : public GpuSource {
 public:
  ScriptedSource() {
    inventory_.gpus = {GpuInfo{.index = 0, .uuid = "GPU-a"}, GpuInfo{.index = 1, .uuid = "GPU-b"}};
  }
  const Inventory& inventory() const override { return inventory_; }
  GpuSample Sample(int) override { return GpuSample{.readable = true}; }
  Result<XidRegistration> RegisterXidEvents() override {
    std::lock_guard lock(mu_);
    ++registrations_;
    if (registers_.empty()) {
      return XidRegistration{{0, 1}, {}};
    }
    auto r = registers_.front();
    registers_.pop_front();
    return r;
  }
  Result<std::optional<XidEvent>> WaitXid(milliseconds timeout) override {
    {
      std::lock_guard lock(mu_);
      if (!waits_.empty()) {
        auto r = waits_.front();
        waits_.pop_front();
        return r;
      }
    }
    std::this_thread::sleep_for(std::min(timeout, milliseconds(5)));
    return std::optional<XidEvent>();
  }
  void Script(std::deque<Result<XidRegistration>> registers, std::deque<Result<std::optional<XidEvent>>> waits) {
    std::lock_guard lock(mu_);
    registers_ = std::move(registers);
    waits_ = std::move(waits);
  }
  int registrations() {
    std::lock_guard lock(mu_);
    return registrations_;
  }

 private:
  Inventory inventory_;
  std::mutex mu_;
  std::deque<Result<XidRegistration>> registers_;
  std::deque<Result<std::optional<XidEvent>>> waits_;
  int registrations_ = 0;
};

// What the callbacks saw, in order.
struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> log;
  void Add(std::string s) {
    std::lock_guard lock(mu);
    log.push_back(std::move(s));
    cv.notify_all();
  }
  // Waits until `n` entries arrived (the test fails on a timeout).
  std::vector<std::string> WaitFor(size_t n) {
    std::unique_lock lock(mu);
    cv.wait_for(lock, std::chrono::seconds(20), [&] { return log.size() >= n; });
    return log;
  }
};

GpuMonitor::Callbacks Record(Seen* seen) {
  return {[](int, GpuSample) {},
          [seen](XidEvent e) { seen->Add("xid " + std::to_string(e.gpu_index) + " " + std::to_string(e.xid)); },
          [seen](int g, std::optional<std::string> why) {
            seen->Add(why ? "unreadable " + std::to_string(g) + ": " + *why : "readable " + std::to_string(g));
          }};
}

constexpr XidBackoff kFast{milliseconds(1), milliseconds(4)};

TEST(GpuMonitorTest, AWaitErrorMakesTheGpusUnreadableUntilTheyAreRegisteredAgainAndEventsFlowAfter) {
  ScriptedSource source;
  source.Script({XidRegistration{{0, 1}, {}}, UnavailableError("nvmlEventSetCreate: NVML_ERROR_UNKNOWN (999)"),
                 XidRegistration{{0, 1}, {}}},
                {UnavailableError("nvmlEventSetWait_v2: NVML_ERROR_UNKNOWN (999)"),
                 std::optional<XidEvent>(XidEvent{1, 95})});
  Seen seen;
  GpuMonitor monitor(&source, milliseconds(1000), Record(&seen), kFast);
  monitor.Start();
  std::vector<std::string> log = seen.WaitFor(7);
  monitor.Stop();
  ASSERT_GE(log.size(), 7u);
  EXPECT_EQ(log[0], "unreadable 0: nvmlEventSetWait_v2: NVML_ERROR_UNKNOWN (999)");
  EXPECT_EQ(log[1], "unreadable 1: nvmlEventSetWait_v2: NVML_ERROR_UNKNOWN (999)");
  // Registering again fails once: still unreadable, now for that reason.
  EXPECT_EQ(log[2], "unreadable 0: nvmlEventSetCreate: NVML_ERROR_UNKNOWN (999)");
  EXPECT_EQ(log[3], "unreadable 1: nvmlEventSetCreate: NVML_ERROR_UNKNOWN (999)");
  EXPECT_EQ(log[4], "readable 0");
  EXPECT_EQ(log[5], "readable 1");
  EXPECT_EQ(log[6], "xid 1 95") << "events are read again after the errors";
  EXPECT_GE(source.registrations(), 3);
}

TEST(GpuMonitorTest, RegisteringAgainIsNotReadingAgainSoAGpuDoesNotFlapWhileWaitsKeepFailing) {
  ScriptedSource source;
  const Status wait_error = UnavailableError("nvmlEventSetWait_v2: NVML_ERROR_UNKNOWN (999)");
  source.Script({}, {wait_error, wait_error, wait_error});
  Seen seen;
  GpuMonitor monitor(&source, milliseconds(1000), Record(&seen), kFast);
  monitor.Start();
  std::vector<std::string> log = seen.WaitFor(4);
  monitor.Stop();
  ASSERT_GE(log.size(), 4u);
  EXPECT_EQ(log[0], "unreadable 0: nvmlEventSetWait_v2: NVML_ERROR_UNKNOWN (999)");
  EXPECT_EQ(log[1], "unreadable 1: nvmlEventSetWait_v2: NVML_ERROR_UNKNOWN (999)");
  EXPECT_EQ(log[2], "readable 0") << "only once a wait succeeds, after three failed";
  EXPECT_EQ(log[3], "readable 1");
  EXPECT_GE(source.registrations(), 4);
}

TEST(GpuMonitorTest, AGpuThatCannotBeRegisteredIsRetriedWhileTheOthersAreWatched) {
  ScriptedSource source;
  source.Script({XidRegistration{{1}, {{0, "nvmlDeviceRegisterEvents: NVML_ERROR_UNKNOWN (999)"}}},
                 XidRegistration{{1}, {{0, "nvmlDeviceRegisterEvents: NVML_ERROR_UNKNOWN (999)"}}}},
                {std::optional<XidEvent>(XidEvent{1, 13})});
  Seen seen;
  GpuMonitor monitor(&source, milliseconds(1000), Record(&seen), kFast);
  monitor.Start();
  std::vector<std::string> log = seen.WaitFor(3);
  monitor.Stop();
  ASSERT_GE(log.size(), 3u);
  EXPECT_EQ(log[0], "unreadable 0: nvmlDeviceRegisterEvents: NVML_ERROR_UNKNOWN (999)");
  EXPECT_EQ(log[1], "xid 1 13") << "GPU 1's events are read meanwhile";
  EXPECT_EQ(log[2], "readable 0") << "reported once, then readable when registered";
  EXPECT_GE(source.registrations(), 3);
}

TEST(GpuMonitorTest, ASourceWithoutEventsEndsTheThreadWithoutMarkingAnyGpu) {
  ScriptedSource source;
  source.Script({FailedPreconditionError("no event functions")}, {});
  Seen seen;
  GpuMonitor monitor(&source, milliseconds(1000), Record(&seen), kFast);
  monitor.Start();
  while (source.registrations() < 1) std::this_thread::sleep_for(milliseconds(1));
  std::this_thread::sleep_for(milliseconds(20));
  monitor.Stop();
  EXPECT_EQ(source.registrations(), 1) << "nothing to register again";
  EXPECT_TRUE(seen.log.empty());
}

}  // namespace
}  // namespace tau::gpu
