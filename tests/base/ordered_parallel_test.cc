#include "base/ordered_parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace docfeed::internal {
namespace {

TEST(OrderedParallelFor, ConsumesInIndexOrderWhateverTheThreadCount) {
  for (int threads : {1, 2, 3, 8}) {
    std::vector<size_t> order;
    Status s = OrderedParallelFor<size_t>(
        100, threads, 5,
        [](size_t i) {
          // Uneven work so later items often finish first.
          std::this_thread::sleep_for(std::chrono::microseconds((i * 37) % 200));
          return i * i;
        },
        [&](size_t i, size_t& r) {
          EXPECT_EQ(r, i * i);
          order.push_back(i);
          return Status::Ok();
        });
    ASSERT_TRUE(s.ok());
    ASSERT_EQ(order.size(), 100u);
    for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i) << threads;
  }
}

TEST(OrderedParallelFor, WorkersStayWithinTheWindow) {
  std::atomic<size_t> consumed{0};
  std::atomic<size_t> max_ahead{0};
  Status s = OrderedParallelFor<int>(
      200, 4, 3,
      [&](size_t i) {
        size_t ahead = i - std::min(i, consumed.load());
        size_t seen = max_ahead.load();
        while (ahead > seen && !max_ahead.compare_exchange_weak(seen, ahead)) {
        }
        return 0;
      },
      [&](size_t i, int&) {
        consumed = i + 1;
        return Status::Ok();
      });
  ASSERT_TRUE(s.ok());
  EXPECT_LE(max_ahead.load(), 3u);
}

TEST(OrderedParallelFor, StopsAtTheFirstConsumerError) {
  std::atomic<size_t> worked{0};
  size_t last = 0;
  Status s = OrderedParallelFor<int>(
      10000, 2, 4,
      [&](size_t) {
        ++worked;
        return 0;
      },
      [&](size_t i, int&) {
        last = i;
        return i == 10 ? InvalidArgumentError("sample 10 is bad") : Status::Ok();
      });
  EXPECT_EQ(s.message(), "sample 10 is bad");
  EXPECT_EQ(last, 10u);
  EXPECT_LE(worked.load(), 10u + 1 + 4 + 2);
}

TEST(OrderedParallelFor, EmptyRangeIsOk) {
  Status s = OrderedParallelFor<int>(
      0, 2, 2, [](size_t) { return 0; }, [](size_t, int&) { return InternalError("never"); });
  EXPECT_TRUE(s.ok());
}

}  // namespace
}  // namespace docfeed::internal
