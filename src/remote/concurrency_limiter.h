// ConcurrencyLimiter: how many requests of one HTTP client may be on the wire at once, adapted
// to a server that throttles.
//
// A throttled answer (S3's 503 SlowDown, or any 503 or 429) says the client sends more than the
// server serves. Retrying each one with backoff (retry.h) spreads the retries out in time, but
// the callers keep as many requests going as before: with eight fetch threads against a server
// that serves two at a time, most attempts keep being throttled and some requests exhaust their
// retry budget. So the client also lowers its concurrency, the way TCP lowers its window
// (additive increase, multiplicative decrease; RFC 5681's congestion avoidance, by requests
// instead of segments):
//
//   - no limit until the first throttled answer (an unthrottled client never waits here);
//   - a throttled answer sets the limit to half the requests that were in flight (at least 1),
//     once per round: answers to requests sent before the last decrease do not decrease again
//     (they were sent at the old concurrency and tell nothing about the new one);
//   - every `limit` successful answers in a row raise the limit by one, up to `max_limit`, after
//     which the limit is dropped (no limit again) until the next throttled answer;
//   - but the step that would bring it back to the concurrency that was last throttled takes
//     kProbeRuns times as many answers: a server whose capacity stays put is probed past it
//     rarely (each probe costs a throttled answer), while one whose capacity grew is found
//     again, after which growth is at the normal pace (CUBIC, RFC 8312, plateaus near the last
//     loss the same way).
//
// Thread safety: every method may be called from any thread.
#ifndef DOCFEED_REMOTE_CONCURRENCY_LIMITER_H_
#define DOCFEED_REMOTE_CONCURRENCY_LIMITER_H_

#include <cstdint>

#include "base/mutex.h"

namespace docfeed::internal {

class ConcurrencyLimiter {
 public:
  // What an attempt's answer says about the server's load.
  enum class Outcome {
    kServed,     // an answer other than a throttle (an error status included)
    kThrottled,  // 503 or 429
    kNoAnswer,   // a connection error or timeout: says nothing, changes nothing
  };

  // A slot held by one attempt, from Acquire() to Release().
  struct Ticket {
    uint64_t round = 0;  // the decreases made before the attempt was sent
  };

  // `max_limit`: the limit above which it is dropped again (>= 1). `enabled` false: Acquire never
  // waits and the limit is never set (the counters still count).
  explicit ConcurrencyLimiter(int max_limit = 64, bool enabled = true);
  // How many runs of `limit` served answers the step back to the last throttled concurrency
  // takes.
  static constexpr int kProbeRuns = 4;
  ConcurrencyLimiter(const ConcurrencyLimiter&) = delete;
  ConcurrencyLimiter& operator=(const ConcurrencyLimiter&) = delete;

  // Waits until fewer than limit() attempts are in flight, then takes a slot. `waited_ns`, when
  // not null, receives the time spent waiting.
  Ticket Acquire(int64_t* waited_ns = nullptr) DOCFEED_EXCLUDES(mu_);
  // Gives the slot back and learns from the attempt's outcome.
  void Release(const Ticket& ticket, Outcome outcome) DOCFEED_EXCLUDES(mu_);

  // The current limit; 0 when there is none.
  int limit() const DOCFEED_EXCLUDES(mu_);
  // The lowest limit ever set; 0 when none was.
  int min_limit() const DOCFEED_EXCLUDES(mu_);
  // Decreases so far.
  uint64_t decreases() const DOCFEED_EXCLUDES(mu_);
  int in_flight() const DOCFEED_EXCLUDES(mu_);

 private:
  const int max_limit_;
  const bool enabled_;
  mutable Mutex mu_;
  CondVar cv_;
  int limit_ DOCFEED_GUARDED_BY(mu_) = 0;  // 0: none
  int min_limit_ DOCFEED_GUARDED_BY(mu_) = 0;
  int in_flight_ DOCFEED_GUARDED_BY(mu_) = 0;
  int served_in_a_row_ DOCFEED_GUARDED_BY(mu_) = 0;
  int throttled_at_ DOCFEED_GUARDED_BY(mu_) = 0;  // in flight at the last decrease; 0: passed
  uint64_t round_ DOCFEED_GUARDED_BY(mu_) = 0;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_REMOTE_CONCURRENCY_LIMITER_H_
