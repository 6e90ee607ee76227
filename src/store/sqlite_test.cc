#include "store/sqlite.h"

#include <gtest/gtest.h>

namespace tau::store {
namespace {

std::unique_ptr<Database> OpenWithRows() {
  auto db = Database::Open(":memory:");
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_TRUE((*db)->Exec("CREATE TABLE t (k INTEGER, v TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c');").ok());
  return std::move(*db);
}

TEST(SqliteTest, TheSameTextIsCompiledOnce) {
  auto db = OpenWithRows();
  const int64_t before = db->compiled_statements();
  for (int i = 0; i < 3; ++i) {
    auto st = db->Prepare("SELECT v FROM t WHERE k=?");
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    st->Bind(1, int64_t{2});
    auto row = st->Step();
    ASSERT_TRUE(row.ok() && *row);
    EXPECT_EQ(st->Text(0), "b");
  }
  EXPECT_EQ(db->compiled_statements(), before + 1);
}

TEST(SqliteTest, AReusedStatementStartsOverWithoutBindings) {
  auto db = OpenWithRows();
  {
    auto st = db->Prepare("SELECT k FROM t WHERE k >= COALESCE(?, 0) ORDER BY k");
    ASSERT_TRUE(st.ok());
    st->Bind(1, int64_t{2});
    auto row = st->Step();  // one row read, two left unread
    ASSERT_TRUE(row.ok() && *row);
    EXPECT_EQ(st->Int(0), 2);
  }
  auto st = db->Prepare("SELECT k FROM t WHERE k >= COALESCE(?, 0) ORDER BY k");
  ASSERT_TRUE(st.ok());
  std::vector<int64_t> keys;
  while (true) {
    auto row = st->Step();
    ASSERT_TRUE(row.ok());
    if (!*row) break;
    keys.push_back(st->Int(0));
  }
  EXPECT_EQ(keys, (std::vector<int64_t>{1, 2, 3}));  // from the start, and ? is NULL again
}

TEST(SqliteTest, ATextInUseGetsItsOwnStatement) {
  auto db = OpenWithRows();
  auto outer = db->Prepare("SELECT k FROM t ORDER BY k");
  ASSERT_TRUE(outer.ok());
  std::vector<std::pair<int64_t, int64_t>> pairs;
  while (true) {
    auto row = outer->Step();
    ASSERT_TRUE(row.ok());
    if (!*row) break;
    auto inner = db->Prepare("SELECT k FROM t ORDER BY k");  // the same text, while the outer one steps
    ASSERT_TRUE(inner.ok());
    auto first = inner->Step();
    ASSERT_TRUE(first.ok() && *first);
    pairs.emplace_back(outer->Int(0), inner->Int(0));
  }
  EXPECT_EQ(pairs, (std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 1}, {3, 1}}));
}

TEST(SqliteTest, AReleasedStatementDoesNotHoldTheDatabase) {
  auto db = OpenWithRows();
  {
    auto st = db->Prepare("SELECT k FROM t");
    ASSERT_TRUE(st.ok());
    auto row = st->Step();  // left mid-way
    ASSERT_TRUE(row.ok() && *row);
  }
  // A statement still stepping would make DROP TABLE fail ("table is locked").
  EXPECT_TRUE(db->Exec("DROP TABLE t").ok());
}

}  // namespace
}  // namespace tau::store
