#include "kube/reflector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>

namespace tau::kube {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

nlohmann::json Obj(const std::string& name, const std::string& rv) {
  return {{"metadata", {{"namespace", "ns"}, {"name", name}, {"resourceVersion", rv}}}};
}

nlohmann::json ListOf(std::vector<nlohmann::json> items, const std::string& rv, const std::string& cont = "") {
  nlohmann::json l = {{"items", items}, {"metadata", {{"resourceVersion", rv}}}};
  if (!cont.empty()) {
    l["metadata"]["continue"] = cont;
  }
  return l;
}

WatchEvent Ev(EventType t, nlohmann::json o) { return WatchEvent{t, std::move(o)}; }

// One scripted watch request: the events it delivers, then how it ends.
struct WatchScript {
  std::vector<WatchEvent> events;
  WatchOutcome outcome = WatchOutcome::kClosed;
  Status status = Status::Ok();
};

// Answers List/Watch from scripts and records what it was asked; when the
// scripts run out it stops the reflector.
class ScriptedSource final : public ListerWatcher {
 public:
  std::deque<Result<nlohmann::json>> lists;
  std::deque<WatchScript> watches;
  std::vector<ListOptions> list_calls;
  std::vector<WatchOptions> watch_calls;
  Reflector* reflector = nullptr;

  Result<nlohmann::json> List(const ListOptions& options) override {
    list_calls.push_back(options);
    if (lists.empty()) {
      reflector->Stop();
      return UnavailableError("script ended");
    }
    auto r = std::move(lists.front());
    lists.pop_front();
    return r;
  }

  WatchEnd Watch(const WatchOptions& options, const std::function<bool(WatchEvent&)>& on_event,
                 const std::atomic<bool>* stop) override {
    watch_calls.push_back(options);
    WatchEnd end;
    if (watches.empty() || stop->load()) {
      reflector->Stop();
      end.outcome = WatchOutcome::kStopped;
      return end;
    }
    WatchScript script = std::move(watches.front());
    watches.pop_front();
    for (auto& e : script.events) {
      ++end.events;
      if (!on_event(e)) {
        end.outcome = WatchOutcome::kStopped;
        return end;
      }
    }
    end.outcome = script.outcome;
    end.status = script.status;
    return end;
  }
};

class FakeSleeper final : public Sleeper {
 public:
  std::vector<int64_t> sleeps;
  bool Sleep(milliseconds d) override {
    sleeps.push_back(d.count());
    return true;
  }
  void Wake() override {}
};

struct Harness {
  ScriptedSource source;
  FakeSleeper sleeper;
  std::vector<std::string> seen;  // "ADDED ns/a 5", "SYNCED"
  std::vector<std::string> errors;
  std::unique_ptr<Reflector> reflector;

  Harness() {
    ReflectorOptions o;
    o.backoff = {milliseconds(100), milliseconds(800), 2.0, 0.0};
    o.backoff_seed = 1;
    o.page_size = 2;
    o.on_error = [this](const Status& s) { errors.push_back(s.ToString()); };
    reflector = std::make_unique<Reflector>(
        &source, o,
        [this](ReflectorEventType t, const nlohmann::json& obj) {
          static const char* kNames[] = {"ADDED", "MODIFIED", "DELETED", "SYNCED"};
          std::string line = kNames[static_cast<int>(t)];
          if (t != ReflectorEventType::kSynced) {
            line += " " + ObjectKey(obj) + " " + obj["metadata"]["resourceVersion"].get<std::string>();
          }
          seen.push_back(line);
        },
        &sleeper);
    source.reflector = reflector.get();
  }
};

TEST(ReflectorTest, ListsInPagesThenWatchesFromTheListVersionWithBookmarks) {
  Harness h;
  h.source.lists.push_back(ListOf({Obj("a", "1"), Obj("b", "2")}, "", "page2"));
  h.source.lists.push_back(ListOf({Obj("c", "3")}, "10"));
  h.source.watches.push_back({{Ev(EventType::kModified, Obj("a", "11")), Ev(EventType::kAdded, Obj("d", "12")),
                               Ev(EventType::kDeleted, Obj("b", "13")),
                               Ev(EventType::kBookmark, {{"metadata", {{"resourceVersion", "20"}}}})},
                              WatchOutcome::kClosed});
  ASSERT_TRUE(h.reflector->Run().ok());

  ASSERT_EQ(h.source.list_calls.size(), 2u);
  EXPECT_EQ(h.source.list_calls[0].limit, 2);
  EXPECT_EQ(h.source.list_calls[1].continue_token, "page2");
  EXPECT_THAT(h.seen, ElementsAre("ADDED ns/a 1", "ADDED ns/b 2", "ADDED ns/c 3", "SYNCED", "MODIFIED ns/a 11",
                                  "ADDED ns/d 12", "DELETED ns/b 13"));
  ASSERT_EQ(h.source.watch_calls.size(), 2u);
  EXPECT_EQ(h.source.watch_calls[0].resource_version, "10");
  EXPECT_TRUE(h.source.watch_calls[0].allow_bookmarks);
  // A clean end after events: the next watch starts at once from the bookmark.
  EXPECT_EQ(h.source.watch_calls[1].resource_version, "20");
  EXPECT_TRUE(h.sleeper.sleeps.empty());
  EXPECT_EQ(h.reflector->resource_version(), "20");
  std::vector<std::string> keys;
  for (const auto& [key, obj] : h.reflector->objects()) {
    keys.push_back(key);
  }
  EXPECT_THAT(keys, ElementsAre("ns/a", "ns/c", "ns/d"));
}

TEST(ReflectorTest, ExpiredWatchRelistsAndHandsOverTheDifference) {
  Harness h;
  h.source.lists.push_back(ListOf({Obj("a", "1"), Obj("b", "2")}, "5"));
  h.source.watches.push_back(
      {{}, WatchOutcome::kExpired, FailedPreconditionError("watch ERROR event: HTTP 410 Expired: too old")});
  // While the watch was gone: a changed, b deleted, c created.
  h.source.lists.push_back(ListOf({Obj("a", "7"), Obj("c", "8")}, "9"));
  ASSERT_TRUE(h.reflector->Run().ok());
  EXPECT_THAT(h.seen, ElementsAre("ADDED ns/a 1", "ADDED ns/b 2", "SYNCED", "DELETED ns/b 2", "MODIFIED ns/a 7",
                                  "ADDED ns/c 8", "SYNCED"));
  EXPECT_EQ(h.reflector->lists(), 2);
  ASSERT_EQ(h.source.watch_calls.size(), 2u);
  EXPECT_EQ(h.source.watch_calls[1].resource_version, "9");
  EXPECT_TRUE(h.sleeper.sleeps.empty());
  ASSERT_EQ(h.errors.size(), 1u);
  EXPECT_THAT(h.errors[0], HasSubstr("410"));
}

TEST(ReflectorTest, DroppedConnectionsBackOffThenResumeFromTheLastVersion) {
  Harness h;
  h.source.lists.push_back(ListOf({Obj("a", "1")}, "5"));
  for (int i = 0; i < 5; ++i) {
    h.source.watches.push_back({{}, WatchOutcome::kFailed, UnavailableError("connection refused")});
  }
  h.source.watches.push_back({{Ev(EventType::kModified, Obj("a", "6"))}, WatchOutcome::kFailed,
                              UnavailableError("transfer closed with outstanding read data remaining")});
  h.source.watches.push_back({{}, WatchOutcome::kFailed, UnavailableError("connection refused")});
  ASSERT_TRUE(h.reflector->Run().ok());
  // 100, 200, 400, 800, capped at 800; the watch that delivered an event resets it.
  EXPECT_EQ(h.sleeper.sleeps, (std::vector<int64_t>{100, 200, 400, 800, 800, 100, 200}));
  EXPECT_EQ(h.reflector->lists(), 1);  // never re-listed: the version stayed valid
  ASSERT_EQ(h.source.watch_calls.size(), 8u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(h.source.watch_calls[i].resource_version, "5") << i;
  }
  EXPECT_EQ(h.source.watch_calls[6].resource_version, "6");
  EXPECT_EQ(h.errors.size(), 7u);
}

TEST(ReflectorTest, FailedListsBackOffAndRetry) {
  Harness h;
  h.source.lists.push_back(UnavailableError("apiserver starting"));
  h.source.lists.push_back(UnavailableError("apiserver starting"));
  h.source.lists.push_back(ListOf({}, "3"));
  ASSERT_TRUE(h.reflector->Run().ok());
  EXPECT_EQ(h.sleeper.sleeps, (std::vector<int64_t>{100, 200}));
  EXPECT_THAT(h.seen, ElementsAre("SYNCED"));
  ASSERT_EQ(h.source.watch_calls.size(), 1u);
  EXPECT_EQ(h.source.watch_calls[0].resource_version, "3");
}

TEST(ReflectorTest, WatchesClosedWithoutEventsAreNotHammered) {
  Harness h;
  h.source.lists.push_back(ListOf({}, "3"));
  h.source.watches.push_back({{}, WatchOutcome::kClosed});
  h.source.watches.push_back({{}, WatchOutcome::kClosed});
  ASSERT_TRUE(h.reflector->Run().ok());
  EXPECT_EQ(h.sleeper.sleeps, (std::vector<int64_t>{100, 200}));
}

TEST(ReflectorTest, StopFromTheHandlerEndsRun) {
  Harness h;
  h.source.lists.push_back(ListOf({Obj("a", "1")}, "5"));
  h.source.watches.push_back({{Ev(EventType::kAdded, Obj("b", "6")), Ev(EventType::kAdded, Obj("c", "7"))},
                              WatchOutcome::kClosed});
  h.source.watches.push_back({{Ev(EventType::kAdded, Obj("never", "8"))}, WatchOutcome::kClosed});
  ReflectorOptions o;
  Reflector* r = nullptr;
  std::vector<std::string> seen;
  Reflector reflector(
      &h.source, o,
      [&](ReflectorEventType t, const nlohmann::json& obj) {
        if (t == ReflectorEventType::kAdded) {
          seen.push_back(ObjectKey(obj));
          if (ObjectKey(obj) == "ns/b") {
            r->Stop();
          }
        }
      },
      &h.sleeper);
  r = &reflector;
  h.source.reflector = r;
  ASSERT_TRUE(reflector.Run().ok());
  EXPECT_THAT(seen, ElementsAre("ns/a", "ns/b"));
  EXPECT_EQ(h.source.watch_calls.size(), 1u);
}

}  // namespace
}  // namespace tau::kube
