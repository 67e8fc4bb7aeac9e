// The namespace mirror's keys and values (cluster/namespace_mirror.hpp): a
// key any bucket takes for any namespace name, and the revision a value
// holds, read back (or none, for a value a mirror did not write).
#include <gtest/gtest.h>

#include "ebb/cluster/namespace_mirror.hpp"

namespace ebb::cluster {
namespace {

TEST(NamespaceMirror, KeysKeepLettersDigitsDashAndUnderscoreAndHexTheRest) {
  EXPECT_EQ(namespace_key("tags"), "tags");
  EXPECT_EQ(namespace_key("Top_tags-2"), "Top_tags-2");
  EXPECT_EQ(namespace_key("a.b c/d=e"), "a=2Eb=20c=2Fd=3De");
  EXPECT_EQ(namespace_key("caf\xc3\xa9"), "caf=C3=A9");
  EXPECT_NE(namespace_key("a.b"), namespace_key("a=2Eb"));  // '=' is encoded too: no two names share a key
}

TEST(NamespaceMirror, TheRevisionOfAValueReadsBack) {
  EXPECT_EQ(mirrored_revision(R"({"revision":42,"config":{"name":"tags"}})"), 42u);
  EXPECT_EQ(mirrored_revision(R"({"revision":7,"deleted":true})"), 7u);
  EXPECT_EQ(mirrored_revision(R"({"revision":7})"), std::nullopt);
  EXPECT_EQ(mirrored_revision(R"({"config":{},"revision":7,)"), std::nullopt);
  EXPECT_EQ(mirrored_revision("written by hand"), std::nullopt);
  EXPECT_EQ(mirrored_revision(R"({"revision":-1,"deleted":true})"), std::nullopt);
}

}  // namespace
}  // namespace ebb::cluster
