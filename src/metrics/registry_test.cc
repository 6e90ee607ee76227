#include "metrics/registry.h"

#include <gtest/gtest.h>

namespace tau::metrics {
namespace {

TEST(RegistryTest, WritesTheTextFormat) {
  Registry r;
  r.Define("taugrid_jobs", Registry::Type::kGauge, "Jobs by state.");
  r.Define("taugrid_job_submissions_total", Registry::Type::kCounter, "Jobs submitted.");
  r.Define("taugrid_wait_seconds", Registry::Type::kHistogram, "Wait.", {1, 0.5});
  r.Set("taugrid_jobs", {{"state", "Running"}, {"queue", "a\"b"}}, 2);
  r.Add("taugrid_job_submissions_total", {}, 1);
  r.Add("taugrid_job_submissions_total", {}, 2);
  r.Observe("taugrid_wait_seconds", {}, 0.25);
  r.Observe("taugrid_wait_seconds", {}, 0.75);
  r.Observe("taugrid_wait_seconds", {}, 3);
  EXPECT_EQ(r.Expose(),
            "# HELP taugrid_jobs Jobs by state.\n# TYPE taugrid_jobs gauge\n"
            "taugrid_jobs{state=\"Running\",queue=\"a\\\"b\"} 2\n"
            "# HELP taugrid_job_submissions_total Jobs submitted.\n# TYPE taugrid_job_submissions_total counter\n"
            "taugrid_job_submissions_total 3\n"
            "# HELP taugrid_wait_seconds Wait.\n# TYPE taugrid_wait_seconds histogram\n"
            "taugrid_wait_seconds_bucket{le=\"0.5\"} 1\ntaugrid_wait_seconds_bucket{le=\"1\"} 2\n"
            "taugrid_wait_seconds_bucket{le=\"+Inf\"} 3\ntaugrid_wait_seconds_sum 4\ntaugrid_wait_seconds_count 3\n");
  r.Reset("taugrid_jobs");
  EXPECT_EQ(r.Expose().find("state=\"Running\""), std::string::npos);
}

TEST(RegistryTest, WrongTypesAndUnknownFamiliesAreIgnored) {
  Registry r;
  r.Define("c_total", Registry::Type::kCounter, "c");
  r.Set("c_total", {}, 5);
  r.Add("c_total", {}, -1);
  r.Add("nope", {}, 1);
  EXPECT_EQ(r.Expose(), "# HELP c_total c\n# TYPE c_total counter\n");
}

TEST(RegistryTest, ACounterKeptElsewhereIsSetToItsCountAndStaysACounter) {
  Registry r;
  r.Define("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Registry::Type::kCounter, "ECC.");
  r.Define("g", Registry::Type::kGauge, "g");
  r.SetCounter("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", {{"UUID", "GPU-a"}}, 4);
  r.SetCounter("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", {{"UUID", "GPU-a"}}, -1);  // not a count: ignored
  r.SetCounter("g", {}, 2);  // a gauge is set with Set
  EXPECT_EQ(r.Expose(),
            "# HELP DCGM_FI_DEV_ECC_DBE_VOL_TOTAL ECC.\n# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter\n"
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{UUID=\"GPU-a\"} 4\n# HELP g g\n# TYPE g gauge\n");
}

}  // namespace
}  // namespace tau::metrics
