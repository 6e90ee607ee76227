#include "resume/checkpoint_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "common/beneath.h"
#include "common/digest.h"
#include "evidence/file_list.h"
#include "resume/checkpoint_layout.h"

namespace tau::resume {
namespace fs = std::filesystem;
namespace {

constexpr char kMarker[] = ".complete";

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

int64_t MtimeMs(const fs::path& p, std::error_code& ec) {
  auto t = fs::last_write_time(p, ec);
  if (ec) return 0;
  auto sys = std::chrono::file_clock::to_sys(t);
  return std::chrono::duration_cast<std::chrono::milliseconds>(sys.time_since_epoch()).count();
}

// The files of a folder checkpoint, relative paths sorted, with the
// folder's size and newest mtime.
struct FolderScan {
  std::vector<std::string> files;
  int64_t size = 0;
  int64_t newest_ms = 0;
};

FolderScan ScanFolder(const fs::path& dir) {
  FolderScan scan;
  std::error_code ec;
  scan.newest_ms = MtimeMs(dir, ec);
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code e;
    // Links are not part of a checkpoint and are never followed.
    const fs::file_status st = it->symlink_status(e);
    if (e || fs::is_symlink(st)) continue;
    scan.newest_ms = std::max(scan.newest_ms, MtimeMs(it->path(), e));
    if (fs::is_regular_file(st)) {
      scan.files.push_back(fs::relative(it->path(), dir, e).generic_string());
      scan.size += static_cast<int64_t>(it->file_size(e));
    }
  }
  std::sort(scan.files.begin(), scan.files.end());
  return scan;
}

// The digest of checkpoint `name` in `dir`: its bytes, or for a folder
// the "path<TAB>sha256" lines of its regular files. Opened beneath `dir`
// without following links (common/beneath.h).
Result<std::string> Digest(const fs::path& dir, const std::string& name, bool folder) {
  if (!folder) {
    TAU_ASSIGN_OR_RETURN(UniqueFd fd, OpenBeneath(dir, name, BeneathKind::kRegularFile));
    TAU_ASSIGN_OR_RETURN(std::string hex, evidence::FdSha256Hex(fd.get()));
    return "sha256:" + hex;
  }
  TAU_ASSIGN_OR_RETURN(UniqueFd fd, OpenBeneath(dir, name, BeneathKind::kDirectory));
  TAU_ASSIGN_OR_RETURN(std::vector<evidence::FileDigest> files, evidence::ListFileDigestsAt(fd.get()));
  Sha256 lines;
  for (const evidence::FileDigest& f : files) lines.Update(f.path + "\t" + f.sha256 + "\n");
  return "sha256:" + lines.FinalHex();
}

bool Newer(const Checkpoint& a, const Checkpoint& b) {
  if (a.completed_at_ms != b.completed_at_ms) return a.completed_at_ms > b.completed_at_ms;
  return a.name > b.name;
}

}  // namespace

bool IsIncompleteName(std::string_view name) {
  return name.empty() || name.front() == '.' || EndsWith(name, ".tmp") || EndsWith(name, ".partial") ||
         name.find(".orbax-checkpoint-tmp-") != std::string_view::npos || name.starts_with("tmp-checkpoint-");
}

Result<std::vector<Checkpoint>> ListCheckpoints(const fs::path& dir, const spec::CheckpointSpec& rules) {
  using spec::CheckpointLayout;
  std::vector<Checkpoint> out;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;
  const CheckpointLayout layout = ResolveLayout(dir, rules.layout);
  std::vector<std::string> include = rules.include.empty() ? DefaultInclude(layout) : rules.include;
  std::optional<std::string> latest_tag;
  int64_t latest_ms = 0;
  if (layout == CheckpointLayout::kDeepSpeed) {
    latest_tag = DeepSpeedLatestTag(dir);
    std::error_code absent;
    latest_ms = MtimeMs(dir / "latest", absent);
    if (latest_tag && rules.include.empty()) include.push_back(*latest_tag);
  }
  // The file inside a folder that says it is complete, per layout.
  const char* marker_name = layout == CheckpointLayout::kHuggingFace ? "trainer_state.json"
                            : layout == CheckpointLayout::kOrbax     ? "commit_success.txt"
                                                                     : kMarker;
  struct Entry {
    Checkpoint cp;
    bool has_marker = false;
  };
  std::vector<Entry> entries;
  bool markers = false;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (IsIncompleteName(name) || !MatchesAny(name, include)) continue;
    if (rules.include.empty() && MatchesAny(name, DefaultExclude(layout))) continue;
    std::error_code e;
    Entry entry;
    entry.cp.name = name;
    // Symbolic links are not checkpoints: they are neither followed nor listed.
    const fs::file_status st = it->symlink_status(e);
    if (fs::is_directory(st)) {
      entry.cp.folder = true;
      fs::path marker = it->path() / marker_name;
      std::error_code absent;  // no marker is not an error
      entry.has_marker = fs::is_regular_file(fs::symlink_status(marker, absent));
      FolderScan scan = ScanFolder(it->path());
      entry.cp.size_bytes = scan.size;
      entry.cp.completed_at_ms = entry.has_marker ? MtimeMs(marker, absent) : scan.newest_ms;
      markers = markers || entry.has_marker;
    } else if (fs::is_regular_file(st) && layout == CheckpointLayout::kPlain) {
      entry.cp.size_bytes = static_cast<int64_t>(it->file_size(e));
      entry.cp.completed_at_ms = MtimeMs(it->path(), e);
    } else {
      continue;  // links, sockets, fifos; files in a layout of folders: not checkpoints
    }
    if (e) continue;  // it went away while we looked
    entries.push_back(std::move(entry));
  }
  if (ec) return ErrnoError(ec.value(), fmt::format("listing {}", dir.string()));
  for (Entry& e : entries) {
    switch (layout) {
      case CheckpointLayout::kHuggingFace:
        // The Trainer writes trainer_state.json after the model, optimizer
        // and RNG states: without it the folder is still being written.
        if (!e.has_marker) continue;
        break;
      case CheckpointLayout::kDeepSpeed:
        // DeepSpeed writes `latest` once a tag is saved: the tag it names and
        // those finished before it was written are complete; a tag written
        // since is not (yet).
        if (!latest_tag) continue;
        if (e.cp.name != *latest_tag && e.cp.completed_at_ms > latest_ms) continue;
        break;
      case CheckpointLayout::kAuto:
      case CheckpointLayout::kPlain:
      case CheckpointLayout::kOrbax:
        // Markers (.complete; Orbax's commit_success.txt): once any folder
        // carries one, folders without one are still being written.
        if (markers && e.cp.folder && !e.has_marker) continue;
        break;
    }
    out.push_back(std::move(e.cp));
  }
  std::sort(out.begin(), out.end(), Newer);
  return out;
}

Result<std::vector<Checkpoint>> IndexCheckpoints(const fs::path& dir, const std::vector<Checkpoint>& known,
                                                 const spec::CheckpointSpec& rules) {
  TAU_ASSIGN_OR_RETURN(std::vector<Checkpoint> index, ListCheckpoints(dir, rules));
  for (Checkpoint& cp : index) {
    for (const Checkpoint& k : known) {
      if (k.name == cp.name && k.size_bytes == cp.size_bytes && k.completed_at_ms == cp.completed_at_ms &&
          k.folder == cp.folder) {
        cp.digest = k.digest;
      }
    }
    if (!cp.digest.empty()) continue;
    auto digest = Digest(dir, cp.name, cp.folder);
    // Deleted or replaced meanwhile: the next index sees what is there then.
    if (digest.ok()) cp.digest = *digest;
  }
  return index;
}

std::vector<Checkpoint> PruneCheckpoints(const fs::path& dir, std::vector<Checkpoint> index, int64_t keep,
                                         const std::vector<std::string>& protect, std::vector<std::string>* deleted) {
  std::sort(index.begin(), index.end(), Newer);
  std::vector<Checkpoint> kept;
  for (size_t i = 0; i < index.size(); ++i) {
    Checkpoint& cp = index[i];
    bool is_protected = std::find(protect.begin(), protect.end(), cp.name) != protect.end();
    if (static_cast<int64_t>(i) < keep || is_protected) {
      kept.push_back(std::move(cp));
      continue;
    }
    std::error_code ec;
    fs::remove_all(dir / cp.name, ec);
    if (ec) {
      kept.push_back(std::move(cp));  // kept in the index while it exists
      continue;
    }
    if (deleted) deleted->push_back(cp.name);
  }
  return kept;
}

std::string CheckpointsToJson(const std::vector<Checkpoint>& index) {
  nlohmann::json out = nlohmann::json::array();
  for (const Checkpoint& cp : index) {
    out.push_back({{"name", cp.name},
                   {"folder", cp.folder},
                   {"size_bytes", cp.size_bytes},
                   {"completed_at_ms", cp.completed_at_ms},
                   {"digest", cp.digest}});
  }
  return out.dump();
}

std::vector<Checkpoint> CheckpointsFromJson(std::string_view text) {
  std::vector<Checkpoint> out;
  auto json = nlohmann::json::parse(text, nullptr, false);
  if (!json.is_array()) return out;
  for (const auto& j : json) {
    if (!j.is_object()) continue;
    Checkpoint cp;
    cp.name = j.value("name", "");
    cp.folder = j.value("folder", false);
    cp.size_bytes = j.value("size_bytes", int64_t{0});
    cp.completed_at_ms = j.value("completed_at_ms", int64_t{0});
    cp.digest = j.value("digest", "");
    if (!cp.name.empty()) out.push_back(std::move(cp));
  }
  return out;
}

}  // namespace tau::resume
