#include "server/kubernetes/pod_logs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <vector>

namespace tau::server::kubernetes {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Lines(LogLineFilter& filter, std::string_view chunk) {
  std::vector<std::string> out;
  filter.Feed(chunk, [&](std::string_view line) {
    out.emplace_back(line);
    return true;
  });
  return out;
}

TEST(LogLineFilterTest, StripsTimestampsAndJoinsLinesCutAnywhere) {
  const std::string text =
      "2026-01-02T03:04:05.000000001Z first\n2026-01-02T03:04:05.5Z second line\n2026-01-02T03:04:06Z third\n";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    LogLineFilter filter;
    std::vector<std::string> got = Lines(filter, text.substr(0, cut));
    for (const std::string& line : Lines(filter, text.substr(cut))) got.push_back(line);
    EXPECT_THAT(got, ElementsAre("first\n", "second line\n", "third\n")) << "cut at " << cut;
    EXPECT_EQ(filter.position().last_timestamp, "2026-01-02T03:04:06.000000000Z");
    EXPECT_EQ(filter.position().lines_at_last, 1);
  }
}

TEST(LogLineFilterTest, ResumedStreamSkipsWhatWasDeliveredIncludingLinesWithTheSameTimestamp) {
  LogLineFilter filter;
  EXPECT_THAT(Lines(filter, "2026-01-02T03:04:05.1Z a\n2026-01-02T03:04:05.2Z b\n2026-01-02T03:04:05.2Z c\n"
                            "2026-01-02T03:04:05.2Z par"),
              ElementsAre("a\n", "b\n", "c\n"));
  EXPECT_EQ(filter.position().lines_at_last, 2);
  // The connection drops in the middle of a line; the next one starts at
  // the whole second and repeats everything since.
  filter.Resume();
  EXPECT_THAT(Lines(filter, "2026-01-02T03:04:05.100000000Z a\n2026-01-02T03:04:05.200000000Z b\n"
                            "2026-01-02T03:04:05.200000000Z c\n2026-01-02T03:04:05.200000000Z partial\n"
                            "2026-01-02T03:04:06.000000000Z d\n"),
              ElementsAre("partial\n", "d\n"));
}

TEST(LogLineFilterTest, StartsAfterAGivenPosition) {
  LogLineFilter filter({"2026-01-02T03:04:05.2Z", 1});
  EXPECT_THAT(Lines(filter, "2026-01-02T03:04:05.1Z a\n2026-01-02T03:04:05.2Z b\n2026-01-02T03:04:05.2Z c\n"),
              ElementsAre("c\n"));
}

TEST(LogLineFilterTest, FinishDeliversALastLineWithoutNewline) {
  LogLineFilter filter;
  EXPECT_THAT(Lines(filter, "2026-01-02T03:04:05Z done"), ElementsAre());
  std::vector<std::string> got;
  filter.Finish([&](std::string_view line) {
    got.emplace_back(line);
    return true;
  });
  EXPECT_THAT(got, ElementsAre("done"));
}

TEST(LogLineFilterTest, LineWithoutTimestampPassesWhole) {
  LogLineFilter filter;
  EXPECT_THAT(Lines(filter, "no timestamp here\n"), ElementsAre("no timestamp here\n"));
  EXPECT_EQ(filter.position().last_timestamp, "");
}

TEST(SinceTimeTest, WholeSecondOfTheTimestamp) {
  EXPECT_EQ(*SinceTimeFor("2026-01-02T03:04:05.123456789Z"), "2026-01-02T03:04:05Z");
  EXPECT_EQ(*SinceTimeFor("2026-01-02T03:04:05Z"), "2026-01-02T03:04:05Z");
  EXPECT_FALSE(SinceTimeFor("2026-01-02 03:04:05Z").ok());
  EXPECT_FALSE(SinceTimeFor("2026-01-02T03:04:05+01:00").ok());
}

// Scripted connections: each answers with its chunks, then ends as told.
struct Connection {
  long code = 200;
  std::vector<std::string> chunks;
  Status transport = Status::Ok();
  std::string error_body;
};

class ScriptedStream {
 public:
  explicit ScriptedStream(std::deque<Connection> script) : script_(std::move(script)) {}
  StreamFn Fn() {
    return [this](const kube::HttpRequest& request, const std::function<bool(std::string_view)>& on_chunk,
                  const std::atomic<bool>*) {
      targets.push_back(request.target);
      kube::StreamEnd end;
      if (script_.empty()) {
        end.code = 0;
        end.transport = UnavailableError("script exhausted");
        return end;
      }
      Connection c = std::move(script_.front());
      script_.pop_front();
      end.code = c.code;
      end.error_body = c.error_body;
      end.transport = c.transport;
      for (const std::string& chunk : c.chunks) {
        if (!on_chunk(chunk)) {
          end.stopped = true;
          break;
        }
      }
      return end;
    };
  }
  std::vector<std::string> targets;

 private:
  std::deque<Connection> script_;
};

class RecordingSleeper : public kube::Sleeper {
 public:
  bool Sleep(std::chrono::milliseconds d) override {
    waits.push_back(d);
    return true;
  }
  void Wake() override {}
  std::vector<std::chrono::milliseconds> waits;
};

std::function<Result<PodRef>()> Pod() {
  return [] { return Result<PodRef>(PodRef{"team-a", "train-0-abc", ""}); };
}

TEST(PodLogStreamerTest, ResumesAfterADroppedConnectionWithoutDuplicates) {
  ScriptedStream stream({
      {200, {"2026-01-02T03:04:05.100000000Z one\n2026-01-02T03:04:05.100000000Z two\n2026-01-02T03:04:05.9"}, UnavailableError("connection reset")},
      {200,
       {"2026-01-02T03:04:05.100000000Z one\n2026-01-02T03:04:05.100000000Z two\n",
        "2026-01-02T03:04:05.900000000Z three\n2026-01-02T03:04:07.000000000Z four\n"},
       Status::Ok()},
  });
  RecordingSleeper sleeper;
  PodLogOptions options;
  options.follow = true;
  options.tail_lines = 10;
  PodLogStreamer streamer(stream.Fn(), Pod(), options, &sleeper);
  std::string got;
  Result<LogEnd> end = streamer.Run([&](std::string_view text) {
    got += text;
    return true;
  });
  ASSERT_TRUE(end.ok()) << end.error().ToString();
  EXPECT_EQ(*end, LogEnd::kEnded);
  EXPECT_EQ(got, "one\ntwo\nthree\nfour\n");
  ASSERT_EQ(stream.targets.size(), 2u);
  EXPECT_EQ(stream.targets[0],
            "/api/v1/namespaces/team-a/pods/train-0-abc/log?container=main&timestamps=true&follow=true&tailLines=10");
  EXPECT_EQ(stream.targets[1], "/api/v1/namespaces/team-a/pods/train-0-abc/log?container=main&timestamps=true"
                               "&follow=true&sinceTime=2026-01-02T03%3A04%3A05Z");
  // Data had arrived: it reconnects at once.
  EXPECT_TRUE(sleeper.waits.empty());
  EXPECT_EQ(streamer.bytes(), 19);
}

TEST(PodLogStreamerTest, WaitsForAPodAndAContainerToStartWhileFollowing) {
  ScriptedStream stream({
      {400, {}, Status::Ok(),
       R"({"kind":"Status","code":400,"reason":"BadRequest","message":"container \"main\" in pod \"p\" is waiting to start: ContainerCreating"})"},
      {200, {"2026-01-02T03:04:05Z hello\n"}, Status::Ok()},
  });
  RecordingSleeper sleeper;
  int lookups = 0;
  auto lookup = [&]() -> Result<PodRef> {
    if (++lookups == 1) return NotFoundError("no pod yet");
    return PodRef{"ns", "p", ""};
  };
  PodLogOptions options;
  options.follow = true;
  PodLogStreamer streamer(stream.Fn(), lookup, options, &sleeper);
  std::string got;
  Result<LogEnd> end = streamer.Run([&](std::string_view text) {
    got += text;
    return true;
  });
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(*end, LogEnd::kEnded);
  EXPECT_EQ(got, "hello\n");
  EXPECT_EQ(sleeper.waits.size(), 2u);
}

TEST(PodLogStreamerTest, GivesUpOnAMissingPodWhenToldOrNotFollowing) {
  ScriptedStream stream({});
  RecordingSleeper sleeper;
  PodLogOptions options;
  options.follow = true;
  int asked = 0;
  options.keep_waiting = [&] { return ++asked < 3; };
  PodLogStreamer streamer(stream.Fn(), [] { return Result<PodRef>(NotFoundError("gone")); }, options, &sleeper);
  Result<LogEnd> end = streamer.Run([](std::string_view) { return true; });
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(*end, LogEnd::kNoPod);
  EXPECT_EQ(asked, 3);

  PodLogStreamer once(stream.Fn(), [] { return Result<PodRef>(NotFoundError("gone")); }, PodLogOptions{}, &sleeper);
  end = once.Run([](std::string_view) { return true; });
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(*end, LogEnd::kNoPod);
  EXPECT_TRUE(stream.targets.empty());
}

TEST(PodLogStreamerTest, RetriesServerErrorsWithBackoffAndStopsOnPermanentOnes) {
  ScriptedStream stream({
      {503, {}, Status::Ok(), R"({"kind":"Status","code":503,"reason":"ServiceUnavailable","message":"try later"})"},
      {0, {}, UnavailableError("connection refused")},
      {403, {}, Status::Ok(),
       R"({"kind":"Status","code":403,"reason":"Forbidden","message":"pods \"p\" is forbidden: cannot get resource \"pods/log\""})"},
  });
  RecordingSleeper sleeper;
  PodLogStreamer streamer(stream.Fn(), Pod(), PodLogOptions{}, &sleeper);
  Result<LogEnd> end = streamer.Run([](std::string_view) { return true; });
  ASSERT_FALSE(end.ok());
  EXPECT_EQ(end.error().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(end.error().message(), HasSubstr("pods/log"));
  ASSERT_EQ(sleeper.waits.size(), 2u);
  EXPECT_LT(sleeper.waits[0], sleeper.waits[1]);
}

TEST(PodLogStreamerTest, ThePodsContainerWinsOverTheDefault) {
  ScriptedStream stream({{200, {"2026-01-02T03:04:05Z x\n"}, Status::Ok()}});
  PodLogStreamer streamer(stream.Fn(), [] { return Result<PodRef>(PodRef{"ns", "submitter-x", "ray-job-submitter"}); },
                          PodLogOptions{});
  ASSERT_TRUE(streamer.Run([](std::string_view) { return true; }).ok());
  ASSERT_EQ(stream.targets.size(), 1u);
  EXPECT_EQ(stream.targets[0], "/api/v1/namespaces/ns/pods/submitter-x/log?container=ray-job-submitter&timestamps=true");
}

TEST(PodLogStreamerTest, SkipsBytesTheReaderAlreadyHas) {
  ScriptedStream stream({{200, {"2026-01-02T03:04:05Z abc\n2026-01-02T03:04:06Z def\n"}, Status::Ok()}});
  PodLogOptions options;
  options.skip_bytes = 6;
  PodLogStreamer streamer(stream.Fn(), Pod(), options);
  std::string got;
  ASSERT_TRUE(streamer.Run([&](std::string_view text) {
    got += text;
    return true;
  }).ok());
  EXPECT_EQ(got, "f\n");
  EXPECT_EQ(streamer.bytes(), 8);
}

TEST(PodLogStreamerTest, HandlerReturningFalseStops) {
  ScriptedStream stream({{200, {"2026-01-02T03:04:05Z a\n2026-01-02T03:04:06Z b\n"}, Status::Ok()}});
  PodLogStreamer streamer(stream.Fn(), Pod(), PodLogOptions{});
  int calls = 0;
  Result<LogEnd> end = streamer.Run([&](std::string_view) { return ++calls < 1; });
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(*end, LogEnd::kStopped);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace tau::server::kubernetes
