#include "sched/pending_queue.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace tau::sched {
namespace {

Workload W(const std::string& id, int64_t priority, int64_t seq) {
  Workload w;
  w.id = id;
  w.priority = priority;
  w.seq = seq;
  return w;
}

std::vector<std::string> Ids(const PendingQueue& q) {
  std::vector<std::string> out;
  for (const PendingQueue::Entry& e : q) out.push_back(e.id);
  return out;
}

TEST(PendingQueueTest, OrdersByPriorityThenAgeThenInsertion) {
  PendingQueue q;
  q.Insert(W("old-low", 0, 1), 0);
  q.Insert(W("new-high", 5, 9), 0);
  q.Insert(W("old-high", 5, 2), 0);
  q.Insert(W("tie-first", 0, 7), 0);
  q.Insert(W("tie-second", 0, 7), 0);
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"old-high", "new-high", "old-low", "tie-first", "tie-second"}));
}

TEST(PendingQueueTest, ScoreComesBeforePriority) {
  PendingQueue q;
  q.Insert(W("busy-high", 9, 1), 2.5);
  q.Insert(W("idle-low", 0, 2), 0.5);
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"idle-low", "busy-high"}));
}

TEST(PendingQueueTest, EraseByIdAndByIterator) {
  PendingQueue q;
  q.Insert(W("a", 0, 1), 0);
  q.Insert(W("b", 0, 2), 0);
  q.Insert(W("c", 0, 3), 0);
  EXPECT_TRUE(q.Erase("b"));
  EXPECT_FALSE(q.Erase("b"));
  EXPECT_FALSE(q.Contains("b"));
  auto next = q.Erase(q.begin());
  ASSERT_NE(next, q.end());
  EXPECT_EQ(next->id, "c");
  EXPECT_EQ(q.size(), 1u);
  EXPECT_FALSE(q.Contains("a"));
}

TEST(PendingQueueTest, InsertingAnIdAgainReplacesIt) {
  PendingQueue q;
  q.Insert(W("a", 0, 1), 0);
  q.Insert(W("b", 0, 2), 0);
  q.Insert(W("a", 0, 3), 0);
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(q.size(), 2u);
}

TEST(PendingQueueTest, RescoreKeepsInsertionOrderAmongEquals) {
  PendingQueue q;
  q.Insert(W("x1", 0, 1), 1);
  q.Insert(W("y", 0, 1), 0);
  q.Insert(W("x2", 0, 1), 1);
  std::map<std::string, double> scores = {{"x1", 0}, {"x2", 0}, {"y", 3}};
  q.Rescore([&](const std::string& id) { return scores.at(id); });
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"x1", "x2", "y"}));
  EXPECT_TRUE(q.Erase("x2"));  // the index follows the re-keyed entries
  EXPECT_EQ(Ids(q), (std::vector<std::string>{"x1", "y"}));
}

TEST(PendingQueueTest, PositionFollowsQueueOrderThroughInsertsErasesAndRescores) {
  PendingQueue q;
  q.Insert(W("low", 0, 1), 0);
  q.Insert(W("high", 5, 2), 0);
  q.Insert(W("mid", 3, 3), 0);
  EXPECT_EQ(q.Position("high"), 1u);
  EXPECT_EQ(q.Position("mid"), 2u);
  EXPECT_EQ(q.Position("low"), 3u);
  EXPECT_EQ(q.Position("absent"), 0u);
  EXPECT_TRUE(q.Erase("high"));
  EXPECT_EQ(q.Position("high"), 0u);
  EXPECT_EQ(q.Position("mid"), 1u);
  EXPECT_EQ(q.Position("low"), 2u);
  std::map<std::string, double> scores = {{"mid", 2}, {"low", 1}};
  q.Rescore([&](const std::string& id) { return scores.at(id); });
  EXPECT_EQ(q.Position("low"), 1u);
  EXPECT_EQ(q.Position("mid"), 2u);
}

std::map<std::string, std::vector<std::string>> ByShape(const PendingQueue& q) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [shape, set] : q.shapes()) {
    for (PendingQueue::const_iterator it : set) out[shape].push_back(it->id);
  }
  return out;
}

TEST(PendingQueueTest, GroupsByShapeInQueueOrderThroughErasesAndRescores) {
  PendingQueue q;
  q.Insert(W("small-old", 0, 1), 0, "small");
  q.Insert(W("big", 0, 2), 0, "big");
  q.Insert(W("small-high", 5, 3), 0, "small");
  q.Insert(W("small-new", 0, 4), 0, "small");
  using Groups = std::map<std::string, std::vector<std::string>>;
  EXPECT_EQ(ByShape(q), (Groups{{"big", {"big"}}, {"small", {"small-high", "small-old", "small-new"}}}));
  ASSERT_NE(q.ShapeOf("big"), nullptr);
  EXPECT_EQ(*q.ShapeOf("big"), "big");
  EXPECT_EQ(q.ShapeOf("absent"), nullptr);
  // The first of a shape from a place in the queue.
  const auto& small = q.shapes().at("small");
  auto from = small.lower_bound(*q.Find("big"));
  ASSERT_NE(from, small.end());
  EXPECT_EQ((*from)->id, "small-new");
  EXPECT_EQ(q.CountBefore(*q.Find("big")), 2u);
  // A shape whose last entry goes is gone; re-inserting moves an id.
  EXPECT_TRUE(q.Erase("big"));
  q.Erase(q.Find("small-high"));
  q.Insert(W("small-old", 0, 1), 0, "big");
  EXPECT_EQ(ByShape(q), (Groups{{"big", {"small-old"}}, {"small", {"small-new"}}}));
  std::map<std::string, double> scores = {{"small-old", 2}, {"small-new", 1}};
  q.Rescore([&](const std::string& id) { return scores.at(id); });
  q.Insert(W("another", 0, 9), 1.5, "big");
  EXPECT_EQ(ByShape(q), (Groups{{"big", {"another", "small-old"}}, {"small", {"small-new"}}}));
}

}  // namespace
}  // namespace tau::sched
