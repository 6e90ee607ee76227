#include "resume/checkpoint_layout.h"

#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>

#include "common/beneath.h"

namespace tau::resume {
namespace fs = std::filesystem;
namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

spec::CheckpointLayout DetectLayout(const fs::path& dir) {
  using spec::CheckpointLayout;
  std::error_code ec;
  if (fs::is_regular_file(fs::symlink_status(dir / "latest", ec))) return CheckpointLayout::kDeepSpeed;
  bool hf = false;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code e;
    const bool folder = fs::is_directory(it->symlink_status(e));
    std::error_code absent;
    if (name.find(".orbax-checkpoint-tmp-") != std::string::npos || (folder && AllDigits(name)) ||
        (folder && fs::is_regular_file(fs::symlink_status(it->path() / "_CHECKPOINT_METADATA", absent)))) {
      return CheckpointLayout::kOrbax;
    }
    for (std::string_view prefix : {"checkpoint-", "tmp-checkpoint-"}) {
      if (folder && name.starts_with(prefix) && AllDigits(std::string_view(name).substr(prefix.size()))) hf = true;
    }
  }
  return hf ? CheckpointLayout::kHuggingFace : CheckpointLayout::kPlain;
}

spec::CheckpointLayout ResolveLayout(const fs::path& dir, spec::CheckpointLayout layout) {
  return layout == spec::CheckpointLayout::kAuto ? DetectLayout(dir) : layout;
}

const std::vector<std::string>& DefaultInclude(spec::CheckpointLayout layout) {
  // A word is followed by a digit, '-' or '_' (step-10, ckpt_3, epoch7),
  // so steps.log or iteration.json are not taken for checkpoints.
  static const std::vector<std::string> kPlain = {
      "step[-_0-9]*",  "ckpt[-_0-9]*", "checkpoint[-_0-9]*", "epoch[-_0-9]*", "iter[-_0-9]*", "[0-9]*", "*.pt",
      "*.pth",         "*.ckpt",       "*.safetensors",      "*.pkl",         "*.npz",        "*.msgpack", "*.h5"};
  static const std::vector<std::string> kHuggingFace = {"checkpoint-*"};
  static const std::vector<std::string> kOrbax = {"[0-9]*"};
  static const std::vector<std::string> kDeepSpeed = {"global_step*"};
  switch (layout) {
    case spec::CheckpointLayout::kHuggingFace: return kHuggingFace;
    case spec::CheckpointLayout::kOrbax: return kOrbax;
    case spec::CheckpointLayout::kDeepSpeed: return kDeepSpeed;
    case spec::CheckpointLayout::kAuto:
    case spec::CheckpointLayout::kPlain: break;
  }
  return kPlain;
}

const std::vector<std::string>& DefaultExclude(spec::CheckpointLayout layout) {
  static const std::vector<std::string> kPlain = {"*.log", "*.lock", "*.pid",  "*.csv", "*.tsv",
                                                  "*.txt", "*.out",  "*.err",  "*.jsonl", "*.md",
                                                  "*.html", "*.png", "*.yaml", "*.yml", "*.toml"};
  static const std::vector<std::string> kNone;
  return layout == spec::CheckpointLayout::kPlain || layout == spec::CheckpointLayout::kAuto ? kPlain : kNone;
}

bool MatchesAny(std::string_view name, const std::vector<std::string>& globs) {
  const std::string n(name);
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& g) { return ::fnmatch(g.c_str(), n.c_str(), 0) == 0; });
}

std::optional<std::string> DeepSpeedLatestTag(const fs::path& dir) {
  auto fd = OpenBeneath(dir, "latest", BeneathKind::kRegularFile);
  if (!fd.ok()) return std::nullopt;
  char buf[4097];
  ssize_t n = ::pread(fd->get(), buf, sizeof buf, 0);
  if (n <= 0 || n == static_cast<ssize_t>(sizeof buf)) return std::nullopt;
  std::string tag(buf, static_cast<size_t>(n));
  const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!tag.empty() && space(tag.back())) tag.pop_back();
  size_t start = 0;
  while (start < tag.size() && space(tag[start])) ++start;
  tag.erase(0, start);
  if (tag.empty() || tag == "." || tag == ".." || tag.find('/') != std::string::npos ||
      tag.find('\0') != std::string::npos) {
    return std::nullopt;
  }
  return tag;
}

}  // namespace tau::resume
