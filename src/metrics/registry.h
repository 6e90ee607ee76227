#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace tau::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

// A small Prometheus registry: counters, gauges and histograms with labels,
// written in the text exposition format 0.0.4 (docs/observability.md).
// Thread-safe: API threads record request durations while the control
// loop records job events. Families are written in the order defined.
class Registry {
 public:
  enum class Type { kCounter, kGauge, kHistogram };

  // Defines a family once; later calls with the same name are ignored.
  void Define(const std::string& name, Type type, const std::string& help, std::vector<double> buckets = {});

  void Add(const std::string& name, const Labels& labels, double delta = 1);  // counters
  void Set(const std::string& name, const Labels& labels, double value);      // gauges
  // Counters whose count is kept elsewhere (a device's own error counter):
  // the series is set to that count, read before each scrape.
  void SetCounter(const std::string& name, const Labels& labels, double value);
  void Observe(const std::string& name, const Labels& labels, double value);  // histograms
  // Drops every series of a gauge family (before setting it again from state).
  void Reset(const std::string& name);

  std::string Expose() const;

  // Buckets for durations in seconds, 5 ms to about 2 hours.
  static std::vector<double> SecondsBuckets();

 private:
  struct Series {
    double value = 0;                  // counter, gauge
    std::vector<uint64_t> bucket_counts;  // histogram (not cumulative)
    double sum = 0;
    uint64_t count = 0;
  };
  struct Family {
    Type type = Type::kGauge;
    std::string help;
    std::vector<double> buckets;
    std::map<Labels, Series> series;
  };
  Family* Find(const std::string& name);

  mutable std::mutex mu_;
  std::vector<std::string> order_;          // guarded by mu_
  std::map<std::string, Family> families_;  // guarded by mu_
};

// Escapes a label value for the text format (backslash, quote, newline).
std::string EscapeLabelValue(const std::string& value);

}  // namespace tau::metrics
