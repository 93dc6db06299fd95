#include "remote/concurrency_limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace docfeed::internal {
namespace {

using Outcome = ConcurrencyLimiter::Outcome;
using Ticket = ConcurrencyLimiter::Ticket;

std::vector<Ticket> AcquireN(ConcurrencyLimiter& limiter, int n) {
  std::vector<Ticket> tickets;
  for (int i = 0; i < n; ++i) tickets.push_back(limiter.Acquire());
  return tickets;
}

TEST(ConcurrencyLimiter, NoLimitUntilAServerThrottles) {
  ConcurrencyLimiter limiter(/*max_limit=*/8);
  std::vector<Ticket> tickets = AcquireN(limiter, 100);  // would block if there were a limit
  EXPECT_EQ(limiter.in_flight(), 100);
  for (const Ticket& t : tickets) limiter.Release(t, Outcome::kServed);
  EXPECT_EQ(limiter.limit(), 0);
  EXPECT_EQ(limiter.min_limit(), 0);
  EXPECT_EQ(limiter.decreases(), 0u);
}

TEST(ConcurrencyLimiter, AThrottleHalvesTheRequestsInFlightOncePerRound) {
  ConcurrencyLimiter limiter;
  std::vector<Ticket> tickets = AcquireN(limiter, 8);
  limiter.Release(tickets[0], Outcome::kThrottled);  // 8 were in flight
  EXPECT_EQ(limiter.limit(), 4);
  // The other seven were sent before the decrease: their throttles do not decrease again.
  for (int i = 1; i < 8; ++i) limiter.Release(tickets[i], Outcome::kThrottled);
  EXPECT_EQ(limiter.limit(), 4);
  EXPECT_EQ(limiter.decreases(), 1u);
  // A request sent under the new limit that is throttled again halves it again.
  tickets = AcquireN(limiter, 4);
  limiter.Release(tickets[0], Outcome::kThrottled);
  EXPECT_EQ(limiter.limit(), 2);
  for (int i = 1; i < 4; ++i) limiter.Release(tickets[i], Outcome::kThrottled);
  EXPECT_EQ(limiter.limit(), 2);
  // Down to one, never to zero (zero means "no limit").
  Ticket t = limiter.Acquire();
  limiter.Release(t, Outcome::kThrottled);
  EXPECT_EQ(limiter.limit(), 1);
  t = limiter.Acquire();
  limiter.Release(t, Outcome::kThrottled);
  EXPECT_EQ(limiter.limit(), 1);
  EXPECT_EQ(limiter.min_limit(), 1);
  EXPECT_EQ(limiter.in_flight(), 0);
}

TEST(ConcurrencyLimiter, WaitsForASlotUnderTheLimit) {
  ConcurrencyLimiter limiter;
  std::vector<Ticket> tickets = AcquireN(limiter, 4);
  limiter.Release(tickets[3], Outcome::kThrottled);  // limit 2; three still in flight
  ASSERT_EQ(limiter.limit(), 2);
  std::atomic<bool> acquired{false};
  int64_t waited_ns = -1;
  std::thread waiter([&] {
    Ticket t = limiter.Acquire(&waited_ns);
    acquired = true;
    limiter.Release(t, Outcome::kServed);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(acquired);  // 3 in flight >= 2
  limiter.Release(tickets[0], Outcome::kServed);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(acquired);  // 2 in flight >= 2
  limiter.Release(tickets[1], Outcome::kServed);
  waiter.join();
  EXPECT_TRUE(acquired);
  EXPECT_GE(waited_ns, 50'000'000);
  limiter.Release(tickets[2], Outcome::kServed);
  EXPECT_EQ(limiter.in_flight(), 0);
}

TEST(ConcurrencyLimiter, GrowsByOnePerLimitServedAndDropsPastTheMaximum) {
  ConcurrencyLimiter limiter(/*max_limit=*/5);
  std::vector<Ticket> tickets = AcquireN(limiter, 8);
  limiter.Release(tickets[0], Outcome::kThrottled);
  for (int i = 1; i < 8; ++i) limiter.Release(tickets[i], Outcome::kNoAnswer);
  ASSERT_EQ(limiter.limit(), 4);
  auto serve = [&](int n) {
    for (int i = 0; i < n; ++i) limiter.Release(limiter.Acquire(), Outcome::kServed);
  };
  serve(3);
  EXPECT_EQ(limiter.limit(), 4);
  serve(1);  // 4 in a row
  EXPECT_EQ(limiter.limit(), 5);
  // Connection errors say nothing about load: they neither grow nor shrink the limit, nor
  // break a run of served answers.
  limiter.Release(limiter.Acquire(), Outcome::kNoAnswer);
  serve(4);
  EXPECT_EQ(limiter.limit(), 5);
  serve(1);  // past max_limit: no limit again
  EXPECT_EQ(limiter.limit(), 0);
  EXPECT_EQ(limiter.min_limit(), 4);
}

TEST(ConcurrencyLimiter, TheThrottledConcurrencyIsApproachedSlowly) {
  ConcurrencyLimiter limiter;
  std::vector<Ticket> tickets = AcquireN(limiter, 4);
  for (const Ticket& t : tickets) limiter.Release(t, Outcome::kThrottled);
  ASSERT_EQ(limiter.limit(), 2);  // 4 were in flight when throttled
  auto serve = [&](int n) {
    for (int i = 0; i < n; ++i) limiter.Release(limiter.Acquire(), Outcome::kServed);
  };
  serve(2);
  EXPECT_EQ(limiter.limit(), 3);
  // 3 -> 4 would be the throttled concurrency again: kProbeRuns runs of 3.
  serve(ConcurrencyLimiter::kProbeRuns * 3 - 1);
  EXPECT_EQ(limiter.limit(), 3);
  serve(1);
  EXPECT_EQ(limiter.limit(), 4);
  // Reached without a throttle: the normal pace again.
  serve(4);
  EXPECT_EQ(limiter.limit(), 5);
}

TEST(ConcurrencyLimiter, AThrottleRestartsTheRunOfServedAnswers) {
  ConcurrencyLimiter limiter;
  std::vector<Ticket> tickets = AcquireN(limiter, 8);
  for (const Ticket& t : tickets) limiter.Release(t, Outcome::kThrottled);
  ASSERT_EQ(limiter.limit(), 4);
  for (int i = 0; i < 3; ++i) limiter.Release(limiter.Acquire(), Outcome::kServed);
  // Sent before a decrease that this throttle does not repeat, yet it still ends the run.
  Ticket old = limiter.Acquire();
  Ticket newer = limiter.Acquire();
  limiter.Release(newer, Outcome::kThrottled);  // 2 in flight: limit 1
  ASSERT_EQ(limiter.limit(), 1);
  limiter.Release(old, Outcome::kThrottled);  // same round as `newer`'s decrease: no change
  EXPECT_EQ(limiter.limit(), 1);
  // 1 -> 2 is back to the throttled concurrency: kProbeRuns served answers in a row.
  for (int i = 0; i < ConcurrencyLimiter::kProbeRuns; ++i) {
    EXPECT_EQ(limiter.limit(), 1);
    limiter.Release(limiter.Acquire(), Outcome::kServed);
  }
  EXPECT_EQ(limiter.limit(), 2);
}

TEST(ConcurrencyLimiter, DisabledNeverLimits) {
  ConcurrencyLimiter limiter(/*max_limit=*/64, /*enabled=*/false);
  std::vector<Ticket> tickets = AcquireN(limiter, 8);
  for (const Ticket& t : tickets) limiter.Release(t, Outcome::kThrottled);
  EXPECT_EQ(limiter.limit(), 0);
  EXPECT_EQ(limiter.min_limit(), 0);
  tickets = AcquireN(limiter, 16);
  EXPECT_EQ(limiter.in_flight(), 16);
  for (const Ticket& t : tickets) limiter.Release(t, Outcome::kServed);
}

// 12 threads, 200 attempts each, against a "server" that serves 3 at a time and throttles the
// rest. Returns the throttled attempts among each thread's last 100.
int ThrottledLate(ConcurrencyLimiter& limiter) {
  constexpr int kCapacity = 3;
  std::atomic<int> serving{0};
  std::atomic<int> throttled_late{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 12; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 200; ++k) {
        Ticket t = limiter.Acquire();
        // A throttled request is refused at once; a served one holds its slot for a while.
        const bool over = serving.fetch_add(1) >= kCapacity;
        if (over) serving.fetch_sub(1);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        if (!over) serving.fetch_sub(1);
        if (over && k >= 100) throttled_late.fetch_add(1);
        limiter.Release(t, over ? Outcome::kThrottled : Outcome::kServed);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return throttled_late.load();
}

TEST(ConcurrencyLimiter, ConvergesNearAServersCapacity) {
  ConcurrencyLimiter fixed(/*max_limit=*/64, /*enabled=*/false);
  const int without = ThrottledLate(fixed);
  ConcurrencyLimiter adaptive;
  const int with = ThrottledLate(adaptive);
  EXPECT_GE(adaptive.decreases(), 1u);
  EXPECT_GE(adaptive.min_limit(), 1);
  EXPECT_LE(adaptive.min_limit(), 3);
  // 12 threads against 3 slots: about 3 of 4 late attempts throttled without adapting. The
  // additive increase still probes past the capacity now and then (a throttle per probe).
  EXPECT_GT(without, 600) << "the simulated server does not throttle as intended";
  EXPECT_LT(with, without / 2) << "without adapting: " << without;
}

}  // namespace
}  // namespace docfeed::internal
