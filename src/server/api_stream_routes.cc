// The API's streams: a job's log and the event timeline (docs/api.md).

#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <thread>
#include <nlohmann/json.hpp>

#include "common/beneath.h"
#include "common/strings.h"
#include "server/api_http.h"
#include "server/job_history.h"
#include "server/job_json.h"
#include "server/job_view.h"
#include "store/job_store.h"

namespace tau::server {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// What a refused stream is told to wait before trying again.
constexpr int kStreamRetryAfterSeconds = 5;

// Reads up to `max` bytes from `offset` of a file under `root`, opened
// beneath it without following links (a job may replace its log by a
// link to a secret: that reads as empty).
std::string ReadChunk(const fs::path& root, const fs::path& path, int64_t offset, size_t max) {
  auto fd = OpenPathBeneath(root, path);
  if (!fd.ok()) return "";
  std::string buf(max, '\0');
  ssize_t n = ::pread(fd->get(), buf.data(), max, offset);
  buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return buf;
}

// Offset where the last `lines` lines of the file start.
int64_t TailOffset(const fs::path& root, const fs::path& path, int64_t lines) {
  auto fd = OpenPathBeneath(root, path);
  struct stat st;
  if (!fd.ok() || ::fstat(fd->get(), &st) != 0) return 0;
  int64_t size = static_cast<int64_t>(st.st_size);
  if (lines <= 0) return size;
  int64_t pos = size;
  int64_t newlines = 0;
  // A trailing newline ends the last line; it does not start a new one.
  bool skip_last = true;
  while (pos > 0) {
    int64_t start = std::max<int64_t>(0, pos - 65536);
    std::string block = ReadChunk(root, path, start, static_cast<size_t>(pos - start));
    for (int64_t i = static_cast<int64_t>(block.size()) - 1; i >= 0; --i) {
      if (block[static_cast<size_t>(i)] != '\n') continue;
      if (skip_last && start + i == size - 1) {
        skip_last = false;
        continue;
      }
      if (++newlines == lines) return start + i + 1;
    }
    pos = start;
  }
  return 0;
}

void SendBadParameter(httplib::Response& res, const std::string& name, const std::string& value,
                      const std::string& expected) {
  SendError(res, InvalidArgumentError(fmt::format("query parameter {}=\"{}\" is not {}", name, ShortenUtf8(value, 64), expected)),
            {{"parameter", name}});
}

// A boolean query parameter: absent or "false" is false, "true" is true.
std::optional<bool> ParseFlag(const httplib::Request& req, const std::string& name) {
  if (!req.has_param(name)) return false;
  std::string v = req.get_param_value(name);
  if (v == "true") return true;
  if (v == "false") return false;
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> ParseCount(const std::string& text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  int64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

void RefuseStream(httplib::Response& res, const StreamGate& gate) {
  res.set_header("Retry-After", std::to_string(kStreamRetryAfterSeconds));
  EndConnectionAfterAnswer(res);
  SendError(res, ResourceExhaustedError(fmt::format(
                     "{} log and event streams are open, the most this taugridd serves at once; "
                     "close some and retry", gate.max)));
}

std::shared_ptr<void> StreamGate::Acquire() {
  if (open.fetch_add(1) >= max) {
    --open;
    return nullptr;
  }
  return std::shared_ptr<void>(this, [](StreamGate* gate) { --gate->open; });
}

bool ParseLogQuery(const JobView& job, const httplib::Request& req, httplib::Response& res, LogQuery* q) {
  q->id = job.job.id;
  auto follow = ParseFlag(req, "follow");
  if (!follow) {
    SendBadParameter(res, "follow", req.get_param_value("follow"), "true or false");
    return false;
  }
  q->follow = *follow;
  auto positions = ParseFlag(req, "positions");
  if (!positions) {
    SendBadParameter(res, "positions", req.get_param_value("positions"), "true or false");
    return false;
  }
  q->positions = *positions;
  std::string rank = req.has_param("rank") ? req.get_param_value("rank") : "0";
  if (rank == "all") {
    for (int r = 0; r < job.ranks; ++r) q->ranks.push_back(r);
    q->prefix = job.ranks > 1;
  } else {
    auto r = ParseCount(rank);
    if (!r) {
      SendBadParameter(res, "rank", rank, "a rank number or \"all\"");
      return false;
    }
    if (*r >= job.ranks) {
      SendError(res, NotFoundError(fmt::format("job {} has no rank {} (it has {})", q->id, rank, job.ranks)));
      return false;
    }
    q->ranks.push_back(static_cast<int>(*r));
  }
  if (req.has_param("tail")) {
    auto tail = ParseCount(req.get_param_value("tail"));
    if (!tail) {
      SendBadParameter(res, "tail", req.get_param_value("tail"), "a count of lines (0 or more)");
      return false;
    }
    q->tail = *tail;
  }
  const int64_t last = std::max<int64_t>(1, job.job.attempt);
  std::string attempt = req.get_param_value("attempt");
  if (attempt == "all") {
    if (q->tail >= 0) {
      // A tail counts lines back from the end of one attempt's log.
      SendBadParameter(res, "tail", req.get_param_value("tail"),
                       "a count of lines of one attempt: tail is not taken with attempt=all (name the attempt, or "
                       "leave out tail)");
      return false;
    }
    q->all_attempts = true;
    q->attempt = 1;
  } else if (attempt.empty() || attempt == "last") {
    q->attempt = last;
  } else {
    auto n = ParseCount(attempt);
    if (!n) {
      SendBadParameter(res, "attempt", attempt, "an attempt number, \"last\" or \"all\"");
      return false;
    }
    if (*n < 1 || *n > last) {
      SendError(res, NotFoundError(fmt::format("job {} has no attempt {}", q->id, attempt)));
      return false;
    }
    q->attempt = *n;
  }
  // from=ATTEMPT:OFFSET[,OFFSET...]: where a stream with positions=true
  // left off (one byte offset per rank streamed).
  if (req.has_param("from")) {
    const std::string from = req.get_param_value("from");
    const std::string expected = fmt::format("ATTEMPT:OFFSET with {} comma-separated offset(s)", q->ranks.size());
    size_t colon = from.find(':');
    auto a = ParseCount(from.substr(0, colon));
    if (colon == std::string::npos || !a || *a < 1) {
      SendBadParameter(res, "from", from, expected);
      return false;
    }
    std::vector<int64_t> offsets;
    for (const std::string& part : Split(from.substr(colon + 1), ',')) {
      auto o = ParseCount(part);
      if (!o) {
        SendBadParameter(res, "from", from, expected);
        return false;
      }
      offsets.push_back(*o);
    }
    if (offsets.size() != q->ranks.size()) {
      SendBadParameter(res, "from", from, expected);
      return false;
    }
    if (*a > last || *a < q->attempt || (!q->all_attempts && *a != q->attempt)) {
      SendError(res, NotFoundError(fmt::format("job {} has no attempt {} in this stream", q->id, *a)),
                {{"parameter", "from"}});
      return false;
    }
    q->attempt = *a;
    q->offsets = std::move(offsets);
  }
  return true;
}

bool AttemptOver(const JobView& job, int64_t attempt) {
  return store::IsTerminal(job.job.state) || attempt < job.job.attempt || job.job.state == store::JobState::kQueued ||
         job.job.state == store::JobState::kRetrying;
}

void ServeLogs(const ApiContext& ctx, StreamGate* gate, const httplib::Request& req, httplib::Response& res) {
  auto job = ctx.publisher->Current()->Resolve(req.matches[1]);
  if (!job) return SendError(res, NotFoundError(fmt::format("no job with id or name \"{}\"", std::string(req.matches[1]))));
  struct Cursor : LogQuery {
    std::vector<std::string> partial;  // per rank, when prefixing
    std::shared_ptr<void> slot;        // held while the stream is open
    int quiet_polls = 0;               // polls in a row that found nothing
    bool separator_due = false;        // the next attempt's output starts with its separator line
  };
  auto cur = std::make_shared<Cursor>();
  if (!ParseLogQuery(*job, req, res, cur.get())) return;
  if (!cur->offsets.empty()) cur->partial.assign(cur->ranks.size(), "");
  if (cur->follow) {
    cur->slot = gate->Acquire();
    if (!cur->slot) return RefuseStream(res, *gate);
  }
  // A followed stream is sent as application/octet-stream (UTF-8 text all
  // the same): httplib compresses text/* for browsers, and its compressor
  // holds data back until the end, so lines would not arrive as written.
  res.set_header("X-Content-Type-Options", "nosniff");
  const std::string type = cur->positions ? "application/vnd.taugrid.log-frames"
                           : cur->follow  ? "application/octet-stream"
                                          : "text/plain; charset=utf-8";
  res.set_chunked_content_provider(type, [ctx, gate, cur](size_t, httplib::DataSink& sink) {
    // With positions=true every piece is a frame: a header line
    // "<bytes> <attempt>:<offset>[,<offset>...]\n" (where the stream stands
    // after the piece), then the piece.
    auto send = [&](const std::string& text) {
      if (!cur->positions) return sink.write(text.data(), text.size());
      std::string frame = fmt::format("{} {}:", text.size(), cur->attempt);
      for (size_t i = 0; i < cur->offsets.size(); ++i) {
        int64_t emitted = cur->offsets[i] - static_cast<int64_t>(i < cur->partial.size() ? cur->partial[i].size() : 0);
        frame += fmt::format("{}{}", i ? "," : "", emitted);
      }
      frame += '\n';
      frame += text;
      return sink.write(frame.data(), frame.size());
    };
    while (true) {
      if (gate->stopping || !sink.is_writable()) return false;
      // Read the state before the files: if the attempt had ended then,
      // everything it wrote is in them now, so EOF means drained.
      auto view = ctx.publisher->Current();
      auto job = view->Resolve(cur->id);
      if (!job) {
        sink.done();
        return true;
      }
      bool attempt_over = AttemptOver(*job, cur->attempt);
      bool exists = cur->attempt <= job->job.attempt;
      std::string out;
      if (exists) {
        if (cur->offsets.empty()) {
          for (int r : cur->ranks) {
            fs::path path = ctx.home.log_file(cur->id, cur->attempt, r);
            cur->offsets.push_back(cur->tail >= 0 ? TailOffset(ctx.home.root(), path, cur->tail) : 0);
            cur->partial.emplace_back();
          }
        }
        if (cur->separator_due) {
          cur->separator_due = false;
          for (const store::AttemptRecord& a : job->attempts) {
            if (a.number == cur->attempt) out += AttemptSeparatorLine(a);
          }
        }
        for (size_t i = 0; i < cur->ranks.size(); ++i) {
          std::string chunk = ReadChunk(ctx.home.root(), ctx.home.log_file(cur->id, cur->attempt, cur->ranks[i]), cur->offsets[i], 64 * 1024);
          cur->offsets[i] += static_cast<int64_t>(chunk.size());
          if (!cur->prefix) {
            out += chunk;
            continue;
          }
          cur->partial[i] += chunk;
          size_t start = 0, nl;
          while ((nl = cur->partial[i].find('\n', start)) != std::string::npos) {
            out += fmt::format("[rank {}] ", cur->ranks[i]);
            out.append(cur->partial[i], start, nl - start + 1);
            start = nl + 1;
          }
          cur->partial[i].erase(0, start);
        }
      }
      if (!out.empty()) {
        cur->quiet_polls = 0;
        return send(out);
      }
      if (exists && attempt_over) {
        // Drained: a last line without a newline still shows.
        for (size_t i = 0; i < cur->partial.size(); ++i) {
          if (!cur->partial[i].empty()) out += fmt::format("[rank {}] {}\n", cur->ranks[i], cur->partial[i]);
          cur->partial[i].clear();
        }
        bool more = cur->all_attempts && cur->attempt < job->job.attempt;
        bool may_come = cur->all_attempts && cur->follow && !store::IsTerminal(job->job.state);
        if (!out.empty() && !send(out)) return false;
        if (more) {
          ++cur->attempt;
          cur->offsets.clear();
          cur->partial.clear();
          cur->tail = -1;
          cur->separator_due = true;
          continue;
        }
        if (!may_come) {
          sink.done();
          return true;
        }
      }
      if (!cur->follow && exists) {
        sink.done();
        return true;
      }
      // Logs grow without notice: poll, every 100 ms while lines come and
      // more slowly (up to 500 ms) while the log is quiet, so that a
      // thousand idle followers cost little. A view published meanwhile
      // (the job ended) does not wake every follower at once.
      cur->quiet_polls = std::min(cur->quiet_polls + 1, 5);
      std::this_thread::sleep_for(std::chrono::milliseconds(100 * cur->quiet_polls));
    }
  });
}

void ServeEvents(const ApiContext& ctx, StreamGate* gate, const httplib::Request& req, httplib::Response& res,
                 std::optional<std::string> route_job) {
  // The parameters each route takes; any other is a mistake to report,
  // not to ignore (a misspelt `job=` would stream every job's events).
  const std::vector<std::string> known = route_job ? std::vector<std::string>{"after", "follow"}
                                                   : std::vector<std::string>{"after", "follow", "job"};
  std::vector<std::string> unknown;
  for (const auto& [name, value] : req.params) {
    if (std::find(known.begin(), known.end(), name) == known.end() &&
        std::find(unknown.begin(), unknown.end(), name) == unknown.end()) {
      unknown.push_back(name);
    }
  }
  if (!unknown.empty()) {
    std::vector<std::string> shown;
    for (const std::string& name : unknown) shown.push_back(ShortenUtf8(name, 64));
    return SendError(res,
                     InvalidArgumentError(fmt::format("unknown query parameter{} {} (this route takes {})",
                                                      shown.size() == 1 ? "" : "s", Join(shown, ", "), Join(known, ", "))),
                     {{"parameters", shown}});
  }
  std::string job_id;
  if (route_job) {
    job_id = std::move(*route_job);
  } else if (req.has_param("job")) {
    const std::string wanted = req.get_param_value("job");
    if (wanted.empty()) return SendBadParameter(res, "job", wanted, "a job id or name");
    auto job = ctx.publisher->Current()->Resolve(wanted);
    if (!job) {
      return SendError(res, NotFoundError(fmt::format("no job with id or name \"{}\"", ShortenUtf8(wanted, 128))),
                       {{"parameter", "job"}});
    }
    job_id = job->job.id;
  }
  struct Cursor {
    std::string job_id;
    int64_t after = 0;
    bool follow = false;
    std::shared_ptr<void> slot;  // held while the stream is open
  };
  auto cur = std::make_shared<Cursor>();
  auto follow = ParseFlag(req, "follow");
  if (!follow) return SendBadParameter(res, "follow", req.get_param_value("follow"), "true or false");
  cur->follow = *follow;
  if (req.has_param("after")) {
    auto after = ParseCount(req.get_param_value("after"));
    if (!after) return SendBadParameter(res, "after", req.get_param_value("after"), "an event id (0 or more)");
    cur->after = *after;
  }
  if (cur->follow) {
    cur->slot = gate->Acquire();
    if (!cur->slot) return RefuseStream(res, *gate);
  }
  cur->job_id = std::move(job_id);
  res.set_chunked_content_provider("application/x-ndjson", [ctx, gate, cur](size_t, httplib::DataSink& sink) {
    while (true) {
      if (gate->stopping || !sink.is_writable()) return false;
      auto view = ctx.publisher->Current();
      // Read through the history's pool of read connections (a few for
      // all streams and requests), not a connection per stream.
      if (!view->history) {
        sink.done();
        return true;
      }
      auto events = view->history->LoadEvents(cur->job_id, cur->after, 500);
      if (!events.ok()) {
        sink.done();
        return true;
      }
      if (!events->empty()) {
        std::string out;
        for (const auto& e : *events) {
          out += DumpJson(EventToJson(e));
          out += '\n';
          cur->after = e.id;
        }
        return sink.write(out.data(), out.size());
      }
      bool ended = false;
      if (!cur->job_id.empty()) {
        auto job = view->Resolve(cur->job_id);
        ended = !job || store::IsTerminal(job->job.state);
      }
      // The view was read before the events: a job that had ended then has
      // every event of its in the batch just read.
      if (!cur->follow || ended) {
        sink.done();
        return true;
      }
      ctx.publisher->WaitNewer(view->version, std::chrono::milliseconds(500));
    }
  });
}

}  // namespace tau::server
