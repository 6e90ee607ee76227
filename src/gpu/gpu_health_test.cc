#include "gpu/gpu_health.h"

#include <gtest/gtest.h>

namespace tau::gpu {
namespace {

GpuSample Good(int64_t temp = 40) {
  GpuSample s;
  s.readable = true;
  s.temperature_c = temp;
  s.ecc_uncorrected = 0;
  return s;
}

TEST(GpuHealthTest, AGpuIsUnknownUntilItsFirstGoodPoll) {
  GpuHealth h;
  EXPECT_EQ(h.state(), HealthState::kUnknown);
  auto change = h.OnSample(Good());
  ASSERT_TRUE(change);
  EXPECT_EQ(change->to, HealthState::kHealthy);
  EXPECT_FALSE(h.OnSample(Good())) << "no change, no event";
}

TEST(GpuHealthTest, UnreadableTelemetryIsUnknownNeverHealthy) {
  GpuHealth h;
  h.OnSample(Good());
  GpuSample none;
  none.error = "temperature: NVML_ERROR_UNKNOWN (999)";
  auto change = h.OnSample(none);
  ASSERT_TRUE(change);
  EXPECT_EQ(change->to, HealthState::kUnknown);
  EXPECT_EQ(change->reason, "TelemetryUnavailable");
  // NOT_SUPPORTED answers count as readable: absent metrics are fine.
  GpuSample unsupported;
  unsupported.readable = true;
  EXPECT_EQ(h.OnSample(unsupported)->to, HealthState::kHealthy);
}

TEST(GpuHealthTest, FatalSignalsActAtOnceAndStick) {
  GpuHealth h;
  h.OnSample(Good());
  GpuSample ecc = Good();
  ecc.ecc_uncorrected = 2;
  auto change = h.OnSample(ecc);
  ASSERT_TRUE(change);
  EXPECT_EQ(change->to, HealthState::kUnhealthy);
  EXPECT_EQ(change->reason, "EccUncorrectable");
  EXPECT_EQ(change->message, "uncorrectable ECC errors rose from 0 to 2");
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(h.OnSample(ecc)) << "sticky";
  EXPECT_EQ(h.state(), HealthState::kUnhealthy);
  EXPECT_EQ(h.Clear()->to, HealthState::kUnknown);
  EXPECT_EQ(h.OnSample(ecc)->to, HealthState::kHealthy) << "the count at clearing is the new baseline";
}

TEST(GpuHealthTest, AnEccCountAlreadyHighAtStartIsTheBaseline) {
  GpuHealth h;
  GpuSample s = Good();
  s.ecc_uncorrected = 7;
  EXPECT_EQ(h.OnSample(s)->to, HealthState::kHealthy);
}

TEST(GpuHealthTest, ALostGpuIsUnhealthy) {
  GpuHealth h;
  h.OnSample(Good());
  GpuSample lost;
  lost.lost = true;
  lost.error = "temperature: NVML_ERROR_GPU_IS_LOST (15)";
  auto change = h.OnSample(lost);
  EXPECT_EQ(change->to, HealthState::kUnhealthy);
  EXPECT_EQ(change->reason, "GpuLost");
}

TEST(GpuHealthTest, ErrorsThatArrivedWhileNobodyWatchedAreFatalAgainstTheStoredCount) {
  GpuHealth h;
  h.RestoreEccBaseline(2);  // the count stored before a restart
  GpuSample s = Good();
  s.ecc_uncorrected = 5;
  auto change = h.OnSample(s);
  ASSERT_TRUE(change);
  EXPECT_EQ(change->to, HealthState::kUnhealthy);
  EXPECT_EQ(change->reason, "EccUncorrectable");
  EXPECT_EQ(change->message, "uncorrectable ECC errors rose from 2 to 5");
  EXPECT_EQ(h.ecc_baseline(), 5);
  // A volatile count that starts over (the driver reloaded) is the new baseline.
  GpuHealth reset;
  reset.RestoreEccBaseline(5);
  s.ecc_uncorrected = 0;
  EXPECT_EQ(reset.OnSample(s)->to, HealthState::kHealthy);
  EXPECT_EQ(reset.ecc_baseline(), 0);
  s.ecc_uncorrected = 1;
  EXPECT_EQ(reset.OnSample(s)->to, HealthState::kUnhealthy) << "counted from the new baseline";
}

TEST(GpuHealthTest, UnreadableXidEventsMakeAGpuSuspectUntilTheyAreReadAgain) {
  GpuHealth h;
  EXPECT_FALSE(h.OnXidUnreadable("nvmlEventSetWait_v2: NVML_ERROR_UNKNOWN (999)")) << "Unknown stays Unknown";
  auto first = h.OnSample(Good());
  ASSERT_TRUE(first);
  EXPECT_EQ(first->to, HealthState::kSuspect) << "the first poll shows it";
  EXPECT_EQ(first->reason, "XidEventsUnreadable");
  EXPECT_NE(first->message.find("nvmlEventSetWait_v2: NVML_ERROR_UNKNOWN (999)"), std::string::npos);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(h.OnSample(Good())) << "good polls do not clear it";
  auto back = h.OnXidUnreadable(std::nullopt);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->to, HealthState::kHealthy);
  auto again = h.OnXidUnreadable("nvmlEventSetCreate: NVML_ERROR_UNKNOWN (999)");
  ASSERT_TRUE(again) << "a Healthy GPU becomes Suspect at once";
  EXPECT_EQ(again->to, HealthState::kSuspect);
  h.OnFatal("XidFatal", "XID 95");
  EXPECT_FALSE(h.OnXidUnreadable(std::nullopt)) << "readable events do not clear a fault";
  EXPECT_EQ(h.state(), HealthState::kUnhealthy);
}

TEST(GpuHealthTest, TemperatureLinesComeFromTheModelWhenItReportsThem) {
  HealthThresholds base;  // 85 / 95
  GpuInfo h100{.index = 0, .uuid = "GPU-a"};
  h100.temperature_slowdown_c = 87;
  h100.temperature_shutdown_c = 92;
  HealthThresholds t = WithModelTemperatures(base, h100);
  EXPECT_EQ(t.temperature_warn_c, 87);
  EXPECT_EQ(t.temperature_fatal_c, 92);
  GpuInfo silent{.index = 1, .uuid = "GPU-b"};
  HealthThresholds configured = base;
  configured.temperature_warn_c = 80;
  configured.temperature_fatal_c = 90;
  t = WithModelTemperatures(configured, silent);
  EXPECT_EQ(t.temperature_warn_c, 80) << "the configured lines where NVML reports none";
  EXPECT_EQ(t.temperature_fatal_c, 90);
  GpuInfo early{.index = 2, .uuid = "GPU-c"};
  early.temperature_slowdown_c = 80;
  early.temperature_shutdown_c = 83;
  GpuHealth h(WithModelTemperatures(base, early));
  h.OnSample(Good());
  h.OnSample(Good(82));
  auto warn = h.OnSample(Good(82));
  ASSERT_TRUE(warn) << "82 °C is over this model's slowdown line, under the default 85";
  EXPECT_EQ(warn->message, "82 °C for 2 polls (warning at 80 °C)");
  for (int i = 0; i < 3; ++i) h.OnSample(Good(84));
  auto fatal = h.OnSample(Good(84));
  ASSERT_TRUE(fatal) << "84 °C is over its shutdown line, under the default 95";
  EXPECT_EQ(fatal->to, HealthState::kUnhealthy);
}

TEST(GpuHealthTest, TemperatureHasHysteresis) {
  GpuHealth h;  // warn at 85 after 2 polls, clear after 3 good, fatal at 95 after 4
  h.OnSample(Good());
  EXPECT_FALSE(h.OnSample(Good(90))) << "one hot poll is not enough";
  auto warn = h.OnSample(Good(90));
  ASSERT_TRUE(warn);
  EXPECT_EQ(warn->to, HealthState::kSuspect);
  EXPECT_EQ(warn->reason, "Temperature");
  EXPECT_FALSE(h.OnSample(Good(60)));
  EXPECT_FALSE(h.OnSample(Good(60)));
  auto clear = h.OnSample(Good(60));
  ASSERT_TRUE(clear);
  EXPECT_EQ(clear->to, HealthState::kHealthy);
  for (int i = 0; i < 3; ++i) h.OnSample(Good(97));
  auto fatal = h.OnSample(Good(97));
  ASSERT_TRUE(fatal);
  EXPECT_EQ(fatal->to, HealthState::kUnhealthy);
}

TEST(GpuHealthTest, RowRemapsWarnWhenPendingAndAreFatalWhenFailed) {
  GpuHealth h;
  h.OnSample(Good());
  GpuSample pending = Good();
  pending.remapped_pending = 1;
  pending.remapped_failed = 0;
  EXPECT_EQ(h.OnSample(pending)->reason, "RowRemapPending");
  GpuSample failed = Good();
  failed.remapped_failed = 1;
  EXPECT_EQ(h.OnSample(failed)->to, HealthState::kUnhealthy);
}

TEST(GpuHealthTest, RecoveryActionsAndDownNvLinksAreFatal) {
  GpuHealth reset;
  reset.OnSample(Good());
  GpuSample action = Good();
  action.recovery_action = 1;
  auto change = reset.OnSample(action);
  EXPECT_EQ(change->reason, "RecoveryAction");
  EXPECT_EQ(change->message, "the driver asks for a GPU reset (recovery action 1)");
  GpuHealth links;
  links.OnSample(Good());
  GpuSample down = Good();
  down.nvlinks = 18;
  down.nvlinks_down = 2;
  EXPECT_EQ(links.OnSample(down)->message, "2 of its 18 NVLinks are down");
}

TEST(GpuHealthTest, SustainedClockThrottlingAndErrorRatesWarn) {
  HealthThresholds t;
  t.clock_bad_samples = 3;
  t.ecc_corrected_window = 4;
  t.ecc_corrected_max = 10;
  t.pcie_window = 2;
  t.pcie_replays_max = 5;
  GpuHealth clocks(t);
  GpuSample throttled = Good();
  throttled.clock_event_reasons = 0x40 | 0x1;  // HW thermal (and idle, benign)
  clocks.OnSample(Good());
  EXPECT_FALSE(clocks.OnSample(throttled));
  EXPECT_FALSE(clocks.OnSample(throttled));
  EXPECT_EQ(clocks.OnSample(throttled)->reason, "ClockThrottle");
  GpuSample idle = Good();
  idle.clock_event_reasons = 0x1 | 0x4;  // idle and software power cap: benign
  GpuHealth benign(t);
  for (int i = 0; i < 5; ++i) EXPECT_NE(benign.OnSample(idle).value_or(HealthChange{}).to, HealthState::kSuspect);

  GpuHealth ecc(t);
  for (int64_t n : {0, 3, 6, 9}) {
    GpuSample s = Good();
    s.ecc_corrected = n;
    EXPECT_NE(ecc.OnSample(s).value_or(HealthChange{}).to, HealthState::kSuspect) << n;
  }
  GpuSample many = Good();
  many.ecc_corrected = 12;  // 12 in the last 4 polls
  EXPECT_EQ(ecc.OnSample(many)->reason, "EccCorrectableRate");

  GpuHealth pcie(t);
  for (int64_t n : {0, 2}) {
    GpuSample s = Good();
    s.pcie_replays = n;
    pcie.OnSample(s);
  }
  GpuSample replays = Good();
  replays.pcie_replays = 9;
  EXPECT_EQ(pcie.OnSample(replays)->reason, "PcieReplays");
}

TEST(GpuHealthTest, WindowsFollowThePollInterval) {
  HealthThresholds t = ThresholdsForPollInterval(15'000);
  EXPECT_EQ(t.clock_bad_samples, 20);
  EXPECT_EQ(t.ecc_corrected_window, 40);
  EXPECT_EQ(ThresholdsForPollInterval(100).pcie_window, 3000);
}

TEST(GpuHealthTest, OnlyUnhealthyIsRestoredAfterARestart) {
  GpuHealth sticky;
  sticky.Restore(HealthState::kUnhealthy, "XidFatal", "XID 95");
  EXPECT_EQ(sticky.state(), HealthState::kUnhealthy);
  EXPECT_FALSE(sticky.OnSample(Good()));
  GpuHealth suspect;
  suspect.Restore(HealthState::kSuspect, "Temperature", "hot");
  EXPECT_EQ(suspect.state(), HealthState::kUnknown);
}

TEST(XidCatalogTest, DefaultsClassifyTheCatalogue) {
  XidCatalog c = XidCatalog::Defaults();
  EXPECT_EQ(c.ClassOf(95), XidClass::kReset);
  EXPECT_EQ(c.ClassOf(79), XidClass::kReboot);
  EXPECT_EQ(c.ClassOf(13), XidClass::kApp);
  EXPECT_EQ(c.ClassOf(63), XidClass::kWatch);
  EXPECT_EQ(c.ClassOf(64), XidClass::kRma);
  EXPECT_EQ(c.ClassOf(4242), XidClass::kWatch) << "unknown XIDs are watched";
  EXPECT_EQ(c.Describe(95), "XID 95 (uncontained ECC error)");
  EXPECT_EQ(c.Describe(4242), "XID 4242");
}

TEST(XidCatalogTest, AFileOverridesEntriesWithPositionedErrors) {
  XidCatalog c = XidCatalog::Defaults();
  ASSERT_TRUE(c.MergeYaml("xids:\n  13: {class: reset}\n  4242: watch\nunknown: reset\n", "xids.yaml").ok());
  EXPECT_EQ(c.ClassOf(13), XidClass::kReset);
  EXPECT_EQ(c.ClassOf(95), XidClass::kReset);
  EXPECT_EQ(c.ClassOf(5000), XidClass::kReset);
  Status bad = c.MergeYaml("xids:\n  13: {class: explode}\n", "xids.yaml");
  EXPECT_EQ(bad.message(), "xids.yaml:2:15: XID 13: class \"explode\" is not app, watch, reset, reboot or rma");
  EXPECT_FALSE(c.MergeYaml("xid: {}\n", "xids.yaml").ok());
}

}  // namespace
}  // namespace tau::gpu
