#include "spec/decode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <limits>
#include <set>

#include "common/names.h"
#include "common/strings.h"
#include "spec/fields.h"

namespace tau::spec {

Location PositionMap::At(std::string_view path) const {
  std::string p(path);
  while (true) {
    auto it = map_.find(p);
    if (it != map_.end()) return it->second;
    if (p.empty()) return Location{};
    size_t cut = p.find_last_of(".[");
    p = cut == std::string::npos ? "" : p.substr(0, cut);
  }
}

namespace {

// What YAML's core schema reads as a number in decimal notation ("64",
// "1.5", "1e9"): a value with no unit.
bool IsBareNumber(std::string_view s) {
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  size_t i = 0, digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exponent_digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++exponent_digits;
    if (exponent_digits == 0) return false;
  }
  return i == s.size();
}

std::string Join(std::string_view parent, std::string_view key) {
  return parent.empty() ? std::string(key) : fmt::format("{}.{}", parent, key);
}

class Decoder {
 public:
  Decoder(PositionMap* positions, Diagnostics* diags) : pos_(positions), diags_(diags) {}

  void Decode(const Node& root, JobSpec* s) {
    pos_->Set("", root.location);
    if (root.IsNull()) {
      diags_->Error(root.location,
                    "the file is empty; a job spec needs at least schema_version, name and "
                    "run.entrypoint");
      return;
    }
    if (!root.IsMapping()) {
      diags_->Error(root.location, fmt::format("a job spec is a mapping of fields, got {}",
                                               root.Describe()));
      return;
    }
    CheckKeys(root, "");

    if (const Node* n = Required(root, "", "schema_version")) {
      int64_t v = 0;
      if (Integer(*n, "schema_version", std::numeric_limits<int64_t>::min(),
                  std::numeric_limits<int64_t>::max(), &v)) {
        if (v != 1) {
          diags_->Error(n->location, fmt::format("schema_version {} is not supported; this version "
                                                 "of tau reads schema_version 1",
                                                 v));
        }
        s->schema_version = static_cast<int>(v == 1 ? 1 : 0);
      }
    }
    if (const Node* n = Required(root, "", "name")) {
      if (String(*n, "name", &s->name)) Check(*n, "name", CheckDns1123Label(s->name));
    }
    if (const Node* n = Optional(root, "", "workspace")) {
      if (String(*n, "workspace", &s->workspace)) {
        Check(*n, "workspace", CheckDns1123Label(s->workspace));
      }
    }
    if (const Node* n = Optional(root, "", "queue")) {
      if (String(*n, "queue", &s->queue)) Check(*n, "queue", CheckDns1123Subdomain(s->queue));
    }
    if (const Node* n = Optional(root, "", "priority")) {
      if (String(*n, "priority", &s->priority)) {
        Check(*n, "priority", CheckDns1123Subdomain(s->priority));
      }
    }
    if (const Node* run = Required(root, "", "run")) DecodeRun(*run, &s->run);
    if (const Node* n = Optional(root, "", "compute")) DecodeCompute(*n, &s->compute);
    if (const Node* n = Optional(root, "", "runtime")) DecodeRuntime(*n, &s->runtime);
    if (const Node* n = Optional(root, "", "checkpoint")) DecodeCheckpoint(*n, &s->checkpoint);
    if (const Node* n = Optional(root, "", "retry")) DecodeRetry(*n, &s->retry);
    if (const Node* n = Optional(root, "", "limits")) DecodeLimits(*n, &s->limits);
    if (const Node* n = Optional(root, "", "experiment")) DecodeExperiment(*n, &s->experiment);
    if (const Node* n = Optional(root, "", "depends_on")) {
      StringList(*n, "depends_on", &s->depends_on);
      std::set<std::string> seen;
      for (size_t i = 0; i < s->depends_on.size(); ++i) {
        const std::string& dep = s->depends_on[i];
        Location at = pos_->At(fmt::format("depends_on[{}]", i));
        if (dep.starts_with("j_")) {
          bool id = dep.size() == 12;
          for (size_t k = 2; k < dep.size() && id; ++k) {
            id = (dep[k] >= 'a' && dep[k] <= 'z') || (dep[k] >= '2' && dep[k] <= '7');
          }
          if (!id) {
            diags_->Error(at, fmt::format("depends_on: \"{}\" is not a job id (j_ and 10 "
                                          "characters a-z, 2-7) nor a job name",
                                          dep));
          }
        } else if (Status st = CheckDns1123Label(dep); !st.ok()) {
          diags_->Error(at, fmt::format("depends_on: not a job name: {}", st.message()));
        }
        if (!seen.insert(dep).second) {
          diags_->Warning(at, fmt::format("depends_on lists \"{}\" more than once", dep));
        }
      }
    }
  }

 private:
  // ---- structure -------------------------------------------------------

  void CheckKeys(const Node& map, std::string_view path) {
    std::vector<std::string_view> allowed = ChildFieldNames(path);
    for (const auto& [key, value] : map.entries) {
      std::string_view k = key.scalar;
      bool known = false;
      for (std::string_view a : allowed) known = known || a == k;
      if (known) continue;
      std::string where = path.empty() ? "at the top level" : fmt::format("in {}", path);
      std::string hint;
      if (auto near = ClosestMatch(k, allowed)) {
        hint = fmt::format("; did you mean \"{}\"?", *near);
      } else if (std::string elsewhere = FindElsewhere(k, path); !elsewhere.empty()) {
        hint = fmt::format("; did you mean \"{}\"?", elsewhere);
      } else {
        hint = fmt::format("; valid fields {} are {}", where, QuotedList(allowed));
      }
      diags_->Error(key.location, fmt::format("unknown field \"{}\" {}{}", k, where, hint));
    }
  }

  // A field of that name under another parent ("gpus" at the top level is
  // probably "compute.gpus").
  static std::string FindElsewhere(std::string_view key, std::string_view path) {
    for (const FieldDoc& f : AllFields()) {
      std::string_view p = f.path;
      size_t dot = p.find_last_of('.');
      std::string_view leaf = dot == std::string_view::npos ? p : p.substr(dot + 1);
      std::string_view parent = dot == std::string_view::npos ? "" : p.substr(0, dot);
      if (leaf == key && parent != path) return std::string(p);
    }
    return "";
  }

  const Node* Optional(const Node& map, std::string_view parent, std::string_view key) {
    const Node* n = map.Find(key);
    if (n) pos_->Set(Join(parent, key), n->location);
    return n;
  }

  const Node* Required(const Node& map, std::string_view parent, std::string_view key) {
    const Node* n = Optional(map, parent, key);
    if (!n) {
      diags_->Error(map.location, fmt::format("missing required field \"{}\"", Join(parent, key)));
    }
    return n;
  }

  // True when `n` is a mapping. A null is an empty mapping (false, no error).
  bool Mapping(const Node& n, std::string_view path) {
    if (n.IsMapping()) {
      CheckKeys(n, path);
      return true;
    }
    if (!n.IsNull()) {
      diags_->Error(n.location, fmt::format("{}: expected a mapping of fields, got {}", path,
                                            n.Describe()));
    }
    return false;
  }

  void Check(const Node& n, std::string_view path, const Status& st) {
    if (!st.ok()) diags_->Error(n.location, fmt::format("{}: {}", path, st.message()));
  }

  // ---- scalars ---------------------------------------------------------

  // An explicit tag (`!!float 1`) that names another type than the field's
  // is an error: the author said the value is something the field is not.
  bool TagFits(const Node& n, std::string_view path, std::string_view want, std::string_view what) {
    if (n.tag.empty() || n.tag == want) return true;
    diags_->Error(n.location, fmt::format("{}: expected {}, but the value is tagged !!{} (remove the tag)",
                                          path, what, n.tag));
    return false;
  }

  // A process's arguments, environment and file names end at the first
  // NUL: what ran would not be what the spec says.
  bool NoNul(const Node& n, std::string_view path) {
    const size_t nul = n.scalar.find('\0');
    if (nul == std::string::npos) return true;
    diags_->Error(n.location, fmt::format("{}: holds a NUL character (\\0, at character {} of the value), which no "
                                          "argument, environment value or name can carry",
                                          path, nul + 1));
    return false;
  }

  bool String(const Node& n, std::string_view path, std::string* out) {
    if (!TagFits(n, path, "str", "a string")) return false;
    if (n.IsScalar()) {
      if (!NoNul(n, path)) return false;
      *out = n.scalar;
      return true;
    }
    diags_->Error(n.location, fmt::format("{}: expected a string, got {}", path, n.Describe()));
    return false;
  }

  bool NonEmptyString(const Node& n, std::string_view path, std::string* out) {
    if (!String(n, path, out)) return false;
    if (out->empty()) {
      diags_->Error(n.location, fmt::format("{}: must not be empty", path));
      return false;
    }
    return true;
  }

  // An integer in the range the field catalogue gives `path` (the JSON
  // Schema states the same range).
  bool CatalogueInteger(const Node& n, std::string_view path, int64_t* out) {
    const FieldDoc* f = FindField(path);
    return Integer(n, path, f->minimum, f->maximum, out);
  }

  bool Integer(const Node& n, std::string_view path, int64_t min, int64_t max, int64_t* out) {
    if (!TagFits(n, path, "int", "an integer")) return false;
    if (!n.IsScalar() || n.quoted) {
      std::string hint = n.quoted ? " (remove the quotes)" : "";
      diags_->Error(n.location, fmt::format("{}: expected an integer, got {}{}", path,
                                            n.Describe(), hint));
      return false;
    }
    std::string_view t = n.scalar;
    if (!t.empty() && t[0] == '+') t.remove_prefix(1);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec == std::errc::result_out_of_range) {
      diags_->Error(n.location, fmt::format("{}: {} is out of range", path, n.scalar));
      return false;
    }
    if (ec != std::errc() || end != t.data() + t.size() || t.empty()) {
      diags_->Error(n.location, fmt::format("{}: expected an integer, got {}", path, n.Describe()));
      return false;
    }
    if (v < min || v > max) {
      std::string range = max == std::numeric_limits<int64_t>::max()
                              ? fmt::format("at least {}", min)
                              : fmt::format("between {} and {}", min, max);
      diags_->Error(n.location, fmt::format("{}: must be {}, got {}", path, range, v));
      return false;
    }
    *out = v;
    return true;
  }

  bool PositiveQuantity(const Node& n, std::string_view path, Quantity* out) {
    std::string text;
    if (n.tag == "bool" || n.tag == "null") return TagFits(n, path, "", "a quantity");
    if (!n.IsScalar()) {
      diags_->Error(n.location, fmt::format("{}: expected a quantity such as 500m, 4 or 64Gi, got {}",
                                            path, n.Describe()));
      return false;
    }
    auto q = Quantity::Parse(n.scalar);
    if (!q.ok()) {
      diags_->Error(n.location, fmt::format("{}: {}", path, q.error().message()));
      return false;
    }
    if (q->milli() <= 0) {
      diags_->Error(n.location, fmt::format("{}: must be greater than 0, got {}", path, n.scalar));
      return false;
    }
    *out = *q;
    return true;
  }

  bool DurationValue(const Node& n, std::string_view path, Duration* out) {
    if (!TagFits(n, path, "str", "a duration")) return false;
    if (!n.IsScalar()) {
      diags_->Error(n.location, fmt::format("{}: expected a duration such as 30s, 5m or 1h30m, got {}",
                                            path, n.Describe()));
      return false;
    }
    auto d = ParseDuration(n.scalar);
    if (!d.ok()) {
      diags_->Error(n.location, fmt::format("{}: {}", path, d.error().message()));
      return false;
    }
    *out = *d;
    return true;
  }

  template <typename E>
  bool Enum(const Node& n, std::string_view path, std::span<const std::pair<std::string_view, E>> values,
            E* out) {
    std::string text;
    if (!String(n, path, &text)) return false;
    std::vector<std::string_view> names;
    for (const auto& [name, value] : values) {
      if (text == name) {
        *out = value;
        return true;
      }
      names.push_back(name);
    }
    std::string hint;
    if (auto near = ClosestMatch(text, names)) hint = fmt::format(" (did you mean \"{}\"?)", *near);
    diags_->Error(n.location, fmt::format("{}: \"{}\" is not valid; expected one of {}{}", path,
                                          text, QuotedList(names), hint));
    return false;
  }

  // ---- collections -----------------------------------------------------

  // A list of scalars. A single scalar where a list is expected is an error
  // that says how to write the list.
  bool StringList(const Node& n, std::string_view path, std::vector<std::string>* out) {
    if (n.IsNull()) return true;
    if (!n.IsSequence()) {
      std::string hint = n.IsScalar() ? fmt::format(" (write [{}] for a list of one)", n.scalar) : "";
      diags_->Error(n.location, fmt::format("{}: expected a list, got {}{}", path, n.Describe(), hint));
      return false;
    }
    bool ok = true;
    for (size_t i = 0; i < n.items.size(); ++i) {
      const Node& item = n.items[i];
      std::string item_path = fmt::format("{}[{}]", path, i);
      pos_->Set(item_path, item.location);
      if (!item.IsScalar()) {
        diags_->Error(item.location, fmt::format("{}: expected a string, got {}", item_path,
                                                 item.Describe()));
        ok = false;
        continue;
      }
      if (!NoNul(item, item_path)) {
        ok = false;
        continue;
      }
      out->push_back(item.scalar);
    }
    return ok;
  }

  bool StringMap(const Node& n, std::string_view path, StringPairs* out) {
    if (n.IsNull()) return true;
    if (!n.IsMapping()) {
      diags_->Error(n.location, fmt::format("{}: expected a mapping of names to values, got {}",
                                            path, n.Describe()));
      return false;
    }
    bool ok = true;
    for (const auto& [key, value] : n.entries) {
      std::string entry_path = Join(path, key.scalar);
      pos_->Set(entry_path, key.location);
      if (value.IsNull()) {
        out->emplace_back(key.scalar, "");
        continue;
      }
      if (!value.IsScalar()) {
        diags_->Error(value.location, fmt::format("{}: expected a string value, got {}",
                                                  entry_path, value.Describe()));
        ok = false;
        continue;
      }
      if (!NoNul(key, entry_path) || !NoNul(value, entry_path)) {
        ok = false;
        continue;
      }
      out->emplace_back(key.scalar, value.scalar);
    }
    return ok;
  }

  // ---- sections --------------------------------------------------------

  void DecodeRun(const Node& n, RunSpec* run) {
    if (!Mapping(n, "run")) {
      if (n.IsNull()) diags_->Error(n.location, "run: must contain at least \"entrypoint\"");
      return;
    }
    if (const Node* v = Optional(n, "run", "workload_kind")) {
      static constexpr std::pair<std::string_view, WorkloadKind> kKinds[] = {
          {"job", WorkloadKind::kJob}, {"rayjob", WorkloadKind::kRayJob}};
      Enum<WorkloadKind>(*v, "run.workload_kind", kKinds, &run->workload_kind);
    }
    bool entrypoint_ok = false;
    if (const Node* v = Required(n, "run", "entrypoint")) {
      entrypoint_ok = NonEmptyString(*v, "run.entrypoint", &run->entrypoint);
    }
    if (const Node* v = Optional(n, "run", "args")) StringList(*v, "run.args", &run->args);
    bool launcher_given = false;
    if (const Node* v = Optional(n, "run", "launcher")) {
      static constexpr std::pair<std::string_view, Launcher> kLaunchers[] = {
          {"python", Launcher::kPython},
          {"torchrun", Launcher::kTorchrun},
          {"command", Launcher::kCommand}};
      launcher_given = Enum<Launcher>(*v, "run.launcher", kLaunchers, &run->launcher);
    }
    if (!launcher_given && entrypoint_ok) {
      run->launcher = IsPythonFileEntrypoint(run->entrypoint) ? Launcher::kPython : Launcher::kCommand;
    }
    if (const Node* v = Optional(n, "run", "working_dir")) {
      NonEmptyString(*v, "run.working_dir", &run->working_dir);
    }
    if (const Node* v = Optional(n, "run", "exclude")) {
      StringList(*v, "run.exclude", &run->exclude);
      for (size_t i = 0; i < run->exclude.size(); ++i) {
        if (run->exclude[i].empty()) {
          diags_->Error(pos_->At(fmt::format("run.exclude[{}]", i)), "run.exclude: empty pattern");
        }
      }
    }
  }

  void DecodeCompute(const Node& n, ComputeSpec* c) {
    if (!Mapping(n, "compute")) return;
    if (const Node* v = Optional(n, "compute", "gpus")) CatalogueInteger(*v, "compute.gpus", &c->gpus);
    if (const Node* v = Optional(n, "compute", "workers")) {
      CatalogueInteger(*v, "compute.workers", &c->workers);
    }
    if (const Node* v = Optional(n, "compute", "cpus")) PositiveQuantity(*v, "compute.cpus", &c->cpus);
    if (const Node* v = Optional(n, "compute", "memory")) {
      if (!PositiveQuantity(*v, "compute.memory", &c->memory)) {
        // reported
      } else if (!v->quoted && (v->tag.empty() || v->tag == "int" || v->tag == "float") &&
                 IsBareNumber(v->scalar)) {
        // `memory: 64` (or `!!int 64`) is 64 bytes to Kubernetes and 64 MB
        // to Slurm's --mem: almost surely neither is meant.
        const bool small = v->scalar.find_first_not_of("0123456789") == std::string::npos && v->scalar.size() <= 4;
        diags_->Error(v->location,
                      fmt::format("compute.memory: {} has no unit, which would mean {} bytes; {} (Gi = 2^30 bytes, "
                                  "Mi = 2^20; a byte count is written quoted, \"{}\")",
                                  v->scalar, v->scalar,
                                  small ? fmt::format("did you mean {}Gi?", v->scalar) : "write it with a unit",
                                  v->scalar));
      } else if (!c->memory.IsWholeUnits()) {
        diags_->Error(v->location, fmt::format("compute.memory: {} is not a whole number of bytes",
                                               v->scalar));
      }
    }
    if (const Node* v = Optional(n, "compute", "gpu_class")) {
      if (String(*v, "compute.gpu_class", &c->gpu_class) && c->gpu_class != "any") {
        Check(*v, "compute.gpu_class", CheckDns1123Label(c->gpu_class));
      }
    }
    c->processes_per_worker = std::max<int64_t>(1, c->gpus);
    if (const Node* v = Optional(n, "compute", "processes_per_worker")) {
      CatalogueInteger(*v, "compute.processes_per_worker", &c->processes_per_worker);
    }
  }

  void DecodeRuntime(const Node& n, RuntimeSpec* r) {
    if (!Mapping(n, "runtime")) return;
    if (const Node* v = Optional(n, "runtime", "image")) {
      if (NonEmptyString(*v, "runtime.image", &r->image)) {
        for (char ch : r->image) {
          if (std::isspace(static_cast<unsigned char>(ch))) {
            diags_->Error(v->location, "runtime.image: an image reference cannot contain spaces");
            break;
          }
        }
      }
    }
    if (const Node* v = Optional(n, "runtime", "pip")) {
      StringList(*v, "runtime.pip", &r->pip);
      for (size_t i = 0; i < r->pip.size(); ++i) {
        const std::string& req = r->pip[i];
        Location at = pos_->At(fmt::format("runtime.pip[{}]", i));
        if (req.empty()) diags_->Error(at, "runtime.pip: empty requirement");
        else if (req[0] == '-') {
          diags_->Error(at, fmt::format("runtime.pip: \"{}\" is a pip option, not a requirement; "
                                        "options are not supported",
                                        req));
        }
      }
    }
    if (const Node* v = Optional(n, "runtime", "env_from_file")) {
      NonEmptyString(*v, "runtime.env_from_file", &r->env_from_file);
    }
    if (const Node* v = Optional(n, "runtime", "env")) {
      StringMap(*v, "runtime.env", &r->env);
      for (const auto& [name, value] : r->env) {
        Location at = pos_->At(Join("runtime.env", name));
        if (Status st = CheckEnvVarName(name); !st.ok()) {
          diags_->Error(at, fmt::format("runtime.env: {}", st.message()));
        } else if (name.size() > 255) {
          diags_->Error(at, "runtime.env: a variable name is at most 255 characters");
        } else if (IsReservedEnvName(name)) {
          diags_->Error(at, fmt::format("runtime.env: {} is set by TauGrid and cannot be set in a "
                                        "spec (reserved: TAU_*, the torchrun variables and "
                                        "CUDA_VISIBLE_DEVICES)",
                                        name));
        }
      }
    }
  }

  void DecodeCheckpoint(const Node& n, CheckpointSpec* c) {
    if (!Mapping(n, "checkpoint")) return;
    if (const Node* v = Optional(n, "checkpoint", "keep")) CatalogueInteger(*v, "checkpoint.keep", &c->keep);
    if (const Node* v = Optional(n, "checkpoint", "grace_period")) {
      DurationValue(*v, "checkpoint.grace_period", &c->grace_period);
    }
    if (const Node* v = Optional(n, "checkpoint", "layout")) {
      static constexpr std::pair<std::string_view, CheckpointLayout> kLayouts[] = {
          {"auto", CheckpointLayout::kAuto},
          {"plain", CheckpointLayout::kPlain},
          {"huggingface", CheckpointLayout::kHuggingFace},
          {"orbax", CheckpointLayout::kOrbax},
          {"deepspeed", CheckpointLayout::kDeepSpeed}};
      Enum<CheckpointLayout>(*v, "checkpoint.layout", kLayouts, &c->layout);
    }
    if (const Node* v = Optional(n, "checkpoint", "include")) {
      StringList(*v, "checkpoint.include", &c->include);
      for (size_t i = 0; i < c->include.size(); ++i) {
        const std::string& glob = c->include[i];
        const std::string at = fmt::format("checkpoint.include[{}]", i);
        if (glob.empty()) {
          diags_->Error(pos_->At(at), at + ": empty pattern");
        } else if (glob.find('/') != std::string::npos) {
          diags_->Error(pos_->At(at), fmt::format("{}: \"{}\" has a '/'; a pattern names a file or folder directly in "
                                                  "TAU_CHECKPOINT_DIR", at, glob));
        }
      }
    }
  }

  void DecodeRetry(const Node& n, RetrySpec* r) {
    if (!Mapping(n, "retry")) return;
    if (const Node* v = Optional(n, "retry", "max_restarts")) {
      CatalogueInteger(*v, "retry.max_restarts", &r->max_restarts);
    }
    if (const Node* v = Optional(n, "retry", "on")) {
      std::vector<std::string> items;
      StringList(*v, "retry.on", &items);
      for (size_t i = 0; i < items.size(); ++i) {
        Location at = pos_->At(fmt::format("retry.on[{}]", i));
        auto cond = ParseRetryCondition(items[i]);
        if (!cond) {
          static constexpr std::string_view kNames[] = {"preempted", "gpu_fault", "node_lost", "oom", "unknown"};
          std::string hint;
          if (auto near = ClosestMatch(items[i], kNames)) hint = fmt::format(" (did you mean \"{}\"?)", *near);
          diags_->Error(at, fmt::format("retry.on: \"{}\" is not a retry condition; expected "
                                        "preempted, gpu_fault, node_lost, oom, unknown, exit:<code> with "
                                        "a code from 1 to 255, or signal:<name> (signal:KILL, signal:SEGV) or "
                                        "signal:<number> from 1 to 64{}",
                                        items[i], hint));
          continue;
        }
        if (std::find(r->on.begin(), r->on.end(), *cond) != r->on.end()) {
          diags_->Warning(at, fmt::format("retry.on lists \"{}\" more than once", items[i]));
          continue;
        }
        r->on.push_back(*cond);
      }
    }
    if (const Node* v = Optional(n, "retry", "backoff")) DurationValue(*v, "retry.backoff", &r->backoff);
    if (const Node* v = Optional(n, "retry", "max_backoff")) {
      DurationValue(*v, "retry.max_backoff", &r->max_backoff);
    }
  }

  static std::optional<RetryCondition> ParseRetryCondition(std::string_view s) {
    using K = RetryCondition::Kind;
    if (s == "preempted") return RetryCondition{K::kPreempted, 0, 0};
    if (s == "gpu_fault") return RetryCondition{K::kGpuFault, 0, 0};
    if (s == "node_lost") return RetryCondition{K::kNodeLost, 0, 0};
    if (s == "oom") return RetryCondition{K::kOom, 0, 0};
    if (s == "unknown") return RetryCondition{K::kUnknown, 0, 0};
    if (s.starts_with("exit:")) {
      std::string_view num = s.substr(5);
      int code = 0;
      auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), code);
      if (ec == std::errc() && end == num.data() + num.size() && !num.empty() && code >= 1 &&
          code <= 255) {
        return RetryCondition{K::kExitCode, code, 0};
      }
    }
    if (s.starts_with("signal:")) {
      std::string_view sig = s.substr(7);
      if (sig.starts_with("SIG")) sig.remove_prefix(3);
      int number = 0;
      auto [end, ec] = std::from_chars(sig.data(), sig.data() + sig.size(), number);
      if (ec == std::errc() && end == sig.data() + sig.size() && !sig.empty()) {
        if (number >= 1 && number <= 64) return RetryCondition{K::kSignal, 0, number};
        return std::nullopt;
      }
      for (int n = 1; n <= 64; ++n) {
        const char* abbrev = ::sigabbrev_np(n);
        if (abbrev && sig == abbrev) return RetryCondition{K::kSignal, 0, n};
      }
    }
    return std::nullopt;
  }

  void DecodeLimits(const Node& n, LimitsSpec* l) {
    if (!Mapping(n, "limits")) return;
    if (const Node* v = Optional(n, "limits", "max_runtime")) {
      Duration d{};
      if (DurationValue(*v, "limits.max_runtime", &d)) {
        if (d.count() <= 0) diags_->Error(v->location, "limits.max_runtime: must be greater than 0");
        else l->max_runtime = d;
      }
    }
  }

  void DecodeExperiment(const Node& n, ExperimentSpec* e) {
    if (!Mapping(n, "experiment")) return;
    if (const Node* v = Optional(n, "experiment", "project")) {
      NonEmptyString(*v, "experiment.project", &e->project);
    }
    if (const Node* v = Optional(n, "experiment", "tags")) {
      StringMap(*v, "experiment.tags", &e->tags);
      for (const auto& [k, value] : e->tags) {
        Location at = pos_->At(Join("experiment.tags", k));
        bool printable = std::all_of(k.begin(), k.end(), [](char ch) {
          return static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7f;
        });
        // Counted in characters, as the JSON Schema's maxLength counts them.
        const size_t chars = static_cast<size_t>(
            std::count_if(k.begin(), k.end(), [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; }));
        if (k.empty() || chars > 63 || !printable) {
          diags_->Error(at, "experiment.tags: a tag name is 1 to 63 printable characters");
        }
      }
    }
  }

  PositionMap* pos_;
  Diagnostics* diags_;
};

}  // namespace

void DecodeJobSpec(const Node& root, JobSpec* spec, PositionMap* positions, Diagnostics* diags) {
  Decoder(positions, diags).Decode(root, spec);
}

}  // namespace tau::spec
