#include "base/hash.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace docfeed::internal {
namespace {

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// XXH3-64 of the empty input with seed 0, as published with xxHash (XXH3_64bits("", 0)).
TEST(Hash64, MatchesPublishedEmptyInputValue) { EXPECT_EQ(Hash64({}), 0x2D06800538D394C2ULL); }

TEST(Hasher64, IncrementalEqualsOneShot) {
  std::string text = "docfeed shards are checksummed with XXH3-64";
  Hasher64 h;
  h.Update(Bytes(text.substr(0, 7)));
  h.Update(std::string_view(text).substr(7));
  EXPECT_EQ(h.Digest(), Hash64(Bytes(text)));
}

TEST(Hash64, OneFlippedBitChangesDigest) {
  std::string text(1000, 'x');
  uint64_t before = Hash64(Bytes(text));
  text[500] ^= 1;
  EXPECT_NE(Hash64(Bytes(text)), before);
}

}  // namespace
}  // namespace docfeed::internal
