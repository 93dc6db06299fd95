#include "remote/concurrency_limiter.h"

#include <algorithm>
#include <chrono>

namespace docfeed::internal {

ConcurrencyLimiter::ConcurrencyLimiter(int max_limit, bool enabled)
    : max_limit_(std::max(max_limit, 1)), enabled_(enabled) {}

ConcurrencyLimiter::Ticket ConcurrencyLimiter::Acquire(int64_t* waited_ns) {
  MutexLock lock(&mu_);
  if (enabled_ && limit_ > 0 && in_flight_ >= limit_) {
    const auto start = std::chrono::steady_clock::now();
    while (limit_ > 0 && in_flight_ >= limit_) cv_.Wait(&mu_);
    if (waited_ns != nullptr) {
      *waited_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count();
    }
  } else if (waited_ns != nullptr) {
    *waited_ns = 0;
  }
  ++in_flight_;
  return Ticket{round_};
}

void ConcurrencyLimiter::Release(const Ticket& ticket, Outcome outcome) {
  MutexLock lock(&mu_);
  const int was_in_flight = in_flight_;
  --in_flight_;
  if (enabled_ && outcome == Outcome::kThrottled) {
    served_in_a_row_ = 0;
    if (ticket.round == round_) {  // sent since the last decrease: its answer counts
      throttled_at_ = was_in_flight;
      limit_ = std::max(1, was_in_flight / 2);
      min_limit_ = min_limit_ == 0 ? limit_ : std::min(min_limit_, limit_);
      ++round_;
    }
  } else if (enabled_ && outcome == Outcome::kServed && limit_ > 0) {
    // Back to the concurrency that was throttled: slowly (a probe that costs a throttle).
    const bool probe = throttled_at_ > 0 && limit_ + 1 >= throttled_at_;
    if (++served_in_a_row_ >= (probe ? kProbeRuns * limit_ : limit_)) {
      served_in_a_row_ = 0;
      if (probe) throttled_at_ = 0;  // reached unthrottled: the capacity grew
      limit_ = limit_ + 1 > max_limit_ ? 0 : limit_ + 1;
    }
  }
  // A slot is free, and a raised (or dropped) limit may free more.
  cv_.SignalAll();
}

int ConcurrencyLimiter::limit() const {
  MutexLock lock(&mu_);
  return limit_;
}

int ConcurrencyLimiter::min_limit() const {
  MutexLock lock(&mu_);
  return min_limit_;
}

uint64_t ConcurrencyLimiter::decreases() const {
  MutexLock lock(&mu_);
  return round_;
}

int ConcurrencyLimiter::in_flight() const {
  MutexLock lock(&mu_);
  return in_flight_;
}

}  // namespace docfeed::internal
