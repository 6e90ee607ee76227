#include "kube/watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace tau::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> SplitAll(const std::vector<std::string>& chunks, LineSplitter& s) {
  std::vector<std::string> lines;
  for (const auto& c : chunks) {
    Status st = s.Feed(c, [&](std::string_view line) {
      lines.emplace_back(line);
      return true;
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  return lines;
}

TEST(LineSplitterTest, JoinsLinesSplitAcrossChunksAtEveryPosition) {
  const std::string stream = "{\"a\":1}\n{\"b\":22}\r\n\n{\"c\":333}\n";
  for (size_t cut1 = 0; cut1 <= stream.size(); ++cut1) {
    for (size_t cut2 = cut1; cut2 <= stream.size(); ++cut2) {
      LineSplitter s;
      auto lines = SplitAll({stream.substr(0, cut1), stream.substr(cut1, cut2 - cut1), stream.substr(cut2)}, s);
      EXPECT_THAT(lines, ElementsAre("{\"a\":1}", "{\"b\":22}", "{\"c\":333}")) << cut1 << "," << cut2;
      EXPECT_EQ(s.pending(), 0u);
    }
  }
}

TEST(LineSplitterTest, KeepsAnUnfinishedLine) {
  LineSplitter s;
  auto lines = SplitAll({"one\ntw", "o"}, s);
  EXPECT_THAT(lines, ElementsAre("one"));
  EXPECT_EQ(s.pending(), 3u);
}

TEST(LineSplitterTest, RefusesALineOverTheLimit) {
  LineSplitter s(8);
  Status st = s.Feed("12345", [](std::string_view) { return true; });
  EXPECT_TRUE(st.ok());
  st = s.Feed("6789", [](std::string_view) { return true; });
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(st.message(), HasSubstr("longer than 8 bytes"));
}

TEST(ParseWatchEventTest, ReadsEachType) {
  const std::vector<std::pair<std::string, EventType>> cases = {
      {"ADDED", EventType::kAdded},       {"MODIFIED", EventType::kModified}, {"DELETED", EventType::kDeleted},
      {"BOOKMARK", EventType::kBookmark}, {"ERROR", EventType::kError}};
  for (const auto& [name, type] : cases) {
    Result<WatchEvent> e = ParseWatchEvent("{\"type\":\"" + name + "\",\"object\":{\"kind\":\"X\"}}");
    ASSERT_TRUE(e.ok()) << name;
    EXPECT_EQ(e->type, type);
    EXPECT_EQ(e->object["kind"], "X");
    EXPECT_EQ(EventTypeName(type), name);
  }
}

TEST(ParseWatchEventTest, RejectsMalformedEvents) {
  EXPECT_THAT(ParseWatchEvent("{not json").error().message(), HasSubstr("not JSON"));
  EXPECT_THAT(ParseWatchEvent("{\"type\":\"ADDED\"}").error().message(), HasSubstr("lacks"));
  EXPECT_THAT(ParseWatchEvent("{\"type\":1,\"object\":{}}").error().message(), HasSubstr("lacks"));
  EXPECT_THAT(ParseWatchEvent("{\"type\":\"SYNC\",\"object\":{}}").error().message(),
              HasSubstr("unknown event type \"SYNC\""));
}

TEST(ParseWatchEventTest, AMalformedEventIsQuotedWithoutCuttingACharacter) {
  // "{" and 118 bytes, then a euro sign (3 bytes) across the 120-byte cut.
  const std::string line = "{" + std::string(118, 'x') + "\u20ac";
  EXPECT_THAT(ParseWatchEvent(line).error().message(), ::testing::EndsWith(": {" + std::string(118, 'x')));
}

struct Collected {
  std::vector<WatchEvent> events;
  std::function<bool(WatchEvent&)> handler() {
    return [this](WatchEvent& e) {
      events.push_back(e);
      return true;
    };
  }
};

TEST(FeedWatchChunkTest, DeliversEventsAndBookmarksSplitAcrossChunks) {
  const std::string stream =
      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"5\"}}}\n"
      "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}\n";
  LineSplitter s;
  Collected got;
  WatchEnd end;
  auto handler = got.handler();
  for (char c : stream) {
    ASSERT_TRUE(FeedWatchChunk(std::string_view(&c, 1), s, handler, &end));
  }
  ASSERT_EQ(got.events.size(), 2u);
  EXPECT_EQ(got.events[0].type, EventType::kAdded);
  EXPECT_EQ(got.events[0].object["metadata"]["name"], "a");
  EXPECT_EQ(got.events[1].type, EventType::kBookmark);
  EXPECT_EQ(got.events[1].object["metadata"]["resourceVersion"], "9");
  EXPECT_EQ(end.events, 2);
}

TEST(FeedWatchChunkTest, Error410EndsTheWatchAsExpired) {
  LineSplitter s;
  Collected got;
  WatchEnd end;
  bool more = FeedWatchChunk(
      "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
      "\"message\":\"too old resource version: 5 (10)\",\"reason\":\"Expired\",\"code\":410}}\n"
      "{\"type\":\"ADDED\",\"object\":{}}\n",
      s, got.handler(), &end);
  EXPECT_FALSE(more);
  EXPECT_TRUE(got.events.empty());
  EXPECT_EQ(end.outcome, WatchOutcome::kExpired);
  EXPECT_EQ(end.status.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(end.status.message(), HasSubstr("HTTP 410 Expired: too old resource version: 5 (10)"));
}

TEST(FeedWatchChunkTest, OtherErrorEventsFailTheWatch) {
  LineSplitter s;
  Collected got;
  WatchEnd end;
  EXPECT_FALSE(FeedWatchChunk(
      "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"reason\":\"InternalError\",\"message\":\"etcd\",\"code\":500}}\n",
      s, got.handler(), &end));
  EXPECT_EQ(end.outcome, WatchOutcome::kFailed);
  EXPECT_EQ(end.status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(end.status.message(), HasSubstr("HTTP 500 InternalError: etcd"));
}

TEST(FeedWatchChunkTest, MalformedLineFailsTheWatch) {
  LineSplitter s;
  Collected got;
  WatchEnd end;
  EXPECT_FALSE(FeedWatchChunk("garbage\n", s, got.handler(), &end));
  EXPECT_EQ(end.outcome, WatchOutcome::kFailed);
  EXPECT_THAT(end.status.message(), HasSubstr("not JSON"));
}

TEST(FeedWatchChunkTest, HandlerReturningFalseStops) {
  LineSplitter s;
  WatchEnd end;
  std::function<bool(WatchEvent&)> once = [](WatchEvent&) { return false; };
  EXPECT_FALSE(FeedWatchChunk("{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"ADDED\",\"object\":{}}\n", s, once, &end));
  EXPECT_EQ(end.outcome, WatchOutcome::kStopped);
  EXPECT_EQ(end.events, 1);
}

TEST(WatchTargetTest, AsksForBookmarksFromAVersion) {
  WatchOptions o;
  o.resource_version = "123";
  o.label_selector = "app=x,tier in (a,b)";
  o.timeout_seconds = 60;
  ResourceRef ref{"batch", "v1", "jobs", "ns", "ignored", "status"};
  EXPECT_EQ(WatchTarget(ref, o),
            "/apis/batch/v1/namespaces/ns/jobs?watch=true&allowWatchBookmarks=true&resourceVersion=123"
            "&labelSelector=app%3Dx%2Ctier%20in%20%28a%2Cb%29&timeoutSeconds=60");
  o = WatchOptions{};
  o.allow_bookmarks = false;
  o.timeout_seconds = 0;
  EXPECT_EQ(WatchTarget({"", "v1", "configmaps", "", "", ""}, o), "/api/v1/configmaps?watch=true");
}

}  // namespace
}  // namespace tau::kube
