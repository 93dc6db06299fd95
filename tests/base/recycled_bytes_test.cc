#include "base/recycled_bytes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace docfeed::internal {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Each test runs on a fresh thread, so it starts with no kept vectors (they are per thread).
template <typename F>
void OnFreshThread(F f) {
  std::thread t(f);
  t.join();
}

TEST(RecycledBytesTest, TakeGivesExactlyTheSizeAskedFor) {
  OnFreshThread([] {
    EXPECT_EQ(TakeBytes(0).size(), 0u);
    EXPECT_EQ(TakeBytes(17).size(), 17u);
    EXPECT_EQ(TakeBytes(3 * kMiB + 1).size(), 3 * kMiB + 1);
    EXPECT_EQ(RecycledBytesHeld(), 0u);
  });
}

TEST(RecycledBytesTest, ARecycledVectorComesBackWithoutANewAllocation) {
  OnFreshThread([] {
    std::vector<uint8_t> a = TakeBytes(4 * kMiB);
    a[0] = 7;
    const uint8_t* storage = a.data();
    RecycleBytes(std::move(a));
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(RecycledBytesHeld(), 4 * kMiB);
    // Smaller and equal sizes reuse the storage; the kept slot is then empty.
    std::vector<uint8_t> b = TakeBytes(3 * kMiB);
    EXPECT_EQ(b.data(), storage);
    EXPECT_EQ(b.size(), 3 * kMiB);
    EXPECT_EQ(RecycledBytesHeld(), 0u);
    RecycleBytes(std::move(b));
    // Growing within the capacity zeroes only the bytes past the last size; the size is exact.
    std::vector<uint8_t> c = TakeBytes(4 * kMiB);
    EXPECT_EQ(c.data(), storage);
    EXPECT_EQ(c.size(), 4 * kMiB);
    EXPECT_EQ(c[4 * kMiB - 1], 0);
  });
}

TEST(RecycledBytesTest, TakesTheSmallestKeptVectorThatFits) {
  OnFreshThread([] {
    std::vector<uint8_t> small = TakeBytes(2 * kMiB), large = TakeBytes(8 * kMiB);
    const uint8_t* small_storage = small.data();
    const uint8_t* large_storage = large.data();
    RecycleBytes(std::move(large));
    RecycleBytes(std::move(small));
    EXPECT_EQ(RecycledBytesHeld(), 10 * kMiB);
    std::vector<uint8_t> fits_small = TakeBytes(kMiB + 5);
    EXPECT_EQ(fits_small.data(), small_storage);
    std::vector<uint8_t> needs_large = TakeBytes(3 * kMiB);
    EXPECT_EQ(needs_large.data(), large_storage);
    // Nothing kept fits: a new vector, and nothing kept is touched.
    RecycleBytes(std::move(fits_small));
    std::vector<uint8_t> too_big = TakeBytes(9 * kMiB);
    EXPECT_NE(too_big.data(), small_storage);
    EXPECT_EQ(RecycledBytesHeld(), 2 * kMiB);
  });
}

TEST(RecycledBytesTest, KeepsAtMostTheLargestTwoInTheRange) {
  OnFreshThread([] {
    RecycleBytes(TakeBytes(kMinRecycledBytes - 1));  // too small to be worth keeping
    EXPECT_EQ(RecycledBytesHeld(), 0u);
    std::vector<uint8_t> huge;
    huge.reserve(kMaxRecycledBytes + 1);  // reserved, never touched: no memory written
    RecycleBytes(std::move(huge));
    EXPECT_EQ(RecycledBytesHeld(), 0u);
    RecycleBytes(TakeBytes(2 * kMiB));
    RecycleBytes(TakeBytes(8 * kMiB));  // takes nothing kept (2 MiB does not fit)
    EXPECT_EQ(RecycledBytesHeld(), 10 * kMiB);
    RecycleBytes(TakeBytes(1 * kMiB));  // takes the 2 MiB one and gives it back
    EXPECT_EQ(RecycledBytesHeld(), 10 * kMiB);
    std::vector<uint8_t> four(4 * kMiB);
    RecycleBytes(std::move(four));  // replaces the 2 MiB one, the smallest
    EXPECT_EQ(RecycledBytesHeld(), 12 * kMiB);
    std::vector<uint8_t> three(3 * kMiB);
    RecycleBytes(std::move(three));  // smaller than both kept: freed
    EXPECT_EQ(RecycledBytesHeld(), 12 * kMiB);
  });
}

TEST(RecycledBytesTest, ThreadsKeepTheirOwn) {
  OnFreshThread([] {
    RecycleBytes(TakeBytes(2 * kMiB));
    EXPECT_EQ(RecycledBytesHeld(), 2 * kMiB);
    std::thread other([] { EXPECT_EQ(RecycledBytesHeld(), 0u); });
    other.join();
    EXPECT_EQ(RecycledBytesHeld(), 2 * kMiB);
  });
}

}  // namespace
}  // namespace docfeed::internal
