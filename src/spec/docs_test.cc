// docs/spec.md carries the generated field reference between two markers;
// this test keeps it equal to the catalogue (UPDATE_GOLDEN=1 rewrites it).

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "spec/fields.h"

namespace tau::spec {
namespace {

constexpr char kBegin[] = "<!-- BEGIN GENERATED FIELD REFERENCE (tau explain --markdown) -->\n";
constexpr char kEnd[] = "<!-- END GENERATED FIELD REFERENCE -->\n";

TEST(SpecDocsTest, FieldReferenceMatchesTheCatalogue) {
  const std::string path = std::string(TAU_SOURCE_DIR) + "/docs/spec.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream buf;
  buf << in.rdbuf();
  std::string doc = buf.str();
  size_t begin = doc.find(kBegin);
  size_t end = doc.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << "docs/spec.md lacks the begin marker";
  ASSERT_NE(end, std::string::npos) << "docs/spec.md lacks the end marker";
  begin += sizeof(kBegin) - 1;
  std::string generated = "\n" + FieldReferenceMarkdown();
  if (std::getenv("UPDATE_GOLDEN")) {
    std::ofstream(path) << doc.substr(0, begin) << generated << doc.substr(end);
    return;
  }
  EXPECT_EQ(doc.substr(begin, end - begin), generated)
      << "docs/spec.md is out of date; run spec_test with UPDATE_GOLDEN=1";
  for (const FieldDoc& f : AllFields()) {
    EXPECT_NE(doc.find("`" + std::string(f.path) + "`"), std::string::npos) << f.path;
  }
}

}  // namespace
}  // namespace tau::spec
