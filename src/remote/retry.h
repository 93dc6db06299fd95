// When and how long the HTTP client waits before trying a request again: exponential backoff
// with full jitter (a delay drawn uniformly from [0, min(max, base * 2^retry)]), bounded by a
// number of attempts and by a budget of time spent waiting, after which the request's error is
// final.
#ifndef DOCFEED_REMOTE_RETRY_H_
#define DOCFEED_REMOTE_RETRY_H_

#include <cstdint>

namespace docfeed::internal {

struct RetryPolicy {
  int max_attempts = 5;         // the first try included
  int64_t base_delay_ms = 100;  // the backoff's scale before the first retry
  int64_t max_delay_ms = 5000;  // no single wait is longer
  int64_t budget_ms = 30000;    // the waits of one request add up to no more than this
};

// The wait before retry number `retry` (0 for the first retry): uniform in
// [0, min(max_delay_ms, base_delay_ms * 2^retry)] from `random` (any 64-bit value).
int64_t BackoffDelayMs(const RetryPolicy& policy, int retry, uint64_t random);

// HTTP statuses worth another try: 5xx (503 is also S3's SlowDown), 429 Too Many Requests and
// 408 Request Timeout. 4xx otherwise are final (a missing object or a bad signature does not get
// better by asking again).
bool IsRetryableHttpStatus(long status);

}  // namespace docfeed::internal

#endif  // DOCFEED_REMOTE_RETRY_H_
