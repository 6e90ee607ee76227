// The metric families that docs/observability.md and the Grafana dashboard
// name are the ones taugridd defines.

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "server/job_manager.h"

namespace tau::server {
namespace {

std::string Read(const std::string& relative) {
  std::ifstream in(std::string(TAU_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::set<std::string> Names(const std::string& text) {
  std::set<std::string> names;
  std::regex name(R"(\b(taugrid_[a-z_]+|DCGM_FI_DEV_[A-Z_]+)\b)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator(); ++it) {
    std::string n = (*it)[1];
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (n.size() > s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0) n.resize(n.size() - s.size());
    }
    names.insert(n);
  }
  return names;
}

TEST(MetricsCatalogueTest, TheDocsAndTheDashboardNameOnlyDefinedFamiliesAndTheDocsNameThemAll) {
  metrics::Registry registry;
  DefineMetrics(registry, "test");
  std::set<std::string> defined = Names(registry.Expose());
  std::set<std::string> documented = Names(Read("docs/observability.md"));
  for (const std::string& n : Names(Read("docs/grafana/taugrid-dashboard.json"))) {
    EXPECT_TRUE(defined.count(n)) << "the dashboard uses " << n << ", which taugridd does not define";
  }
  for (const std::string& n : documented) EXPECT_TRUE(defined.count(n)) << "docs name " << n;
  for (const std::string& n : defined) EXPECT_TRUE(documented.count(n)) << "docs/observability.md does not list " << n;
}

}  // namespace
}  // namespace tau::server
