#include "metrics/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tau::metrics {

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

namespace {

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

std::string LabelText(const Labels& labels, const std::string& extra_name = "", const std::string& extra_value = "") {
  std::vector<std::string> parts;
  for (const auto& [k, v] : labels) parts.push_back(fmt::format("{}=\"{}\"", k, EscapeLabelValue(v)));
  if (!extra_name.empty()) parts.push_back(fmt::format("{}=\"{}\"", extra_name, extra_value));
  if (parts.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "," : "") + parts[i];
  return out + "}";
}

std::string HelpText(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

}  // namespace

std::vector<double> Registry::SecondsBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200};
}

void Registry::Define(const std::string& name, Type type, const std::string& help, std::vector<double> buckets) {
  std::lock_guard lock(mu_);
  if (families_.count(name)) return;
  std::sort(buckets.begin(), buckets.end());
  families_[name] = Family{type, help, std::move(buckets), {}};
  order_.push_back(name);
}

Registry::Family* Registry::Find(const std::string& name) {
  auto it = families_.find(name);
  return it == families_.end() ? nullptr : &it->second;
}

void Registry::Add(const std::string& name, const Labels& labels, double delta) {
  std::lock_guard lock(mu_);
  if (Family* f = Find(name); f && f->type == Type::kCounter && delta >= 0) f->series[labels].value += delta;
}

void Registry::Set(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  if (Family* f = Find(name); f && f->type == Type::kGauge) f->series[labels].value = value;
}

void Registry::SetCounter(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  if (Family* f = Find(name); f && f->type == Type::kCounter && value >= 0) f->series[labels].value = value;
}

void Registry::Observe(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  Family* f = Find(name);
  if (!f || f->type != Type::kHistogram) return;
  Series& s = f->series[labels];
  if (s.bucket_counts.empty()) s.bucket_counts.assign(f->buckets.size(), 0);
  for (size_t i = 0; i < f->buckets.size(); ++i) {
    if (value <= f->buckets[i]) {
      ++s.bucket_counts[i];
      break;
    }
  }
  s.sum += value;
  ++s.count;
}

void Registry::Reset(const std::string& name) {
  std::lock_guard lock(mu_);
  if (Family* f = Find(name)) f->series.clear();
}

std::string Registry::Expose() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const std::string& name : order_) {
    const Family& f = families_.at(name);
    const char* type = f.type == Type::kCounter ? "counter" : f.type == Type::kGauge ? "gauge" : "histogram";
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, HelpText(f.help), name, type);
    for (const auto& [labels, s] : f.series) {
      if (f.type != Type::kHistogram) {
        out += fmt::format("{}{} {}\n", name, LabelText(labels), FormatValue(s.value));
        continue;
      }
      uint64_t cumulative = 0;
      for (size_t i = 0; i < f.buckets.size(); ++i) {
        cumulative += s.bucket_counts.empty() ? 0 : s.bucket_counts[i];
        out += fmt::format("{}_bucket{} {}\n", name, LabelText(labels, "le", FormatValue(f.buckets[i])), cumulative);
      }
      out += fmt::format("{}_bucket{} {}\n", name, LabelText(labels, "le", "+Inf"), s.count);
      out += fmt::format("{}_sum{} {}\n", name, LabelText(labels), FormatValue(s.sum));
      out += fmt::format("{}_count{} {}\n", name, LabelText(labels), s.count);
    }
  }
  return out;
}

}  // namespace tau::metrics
