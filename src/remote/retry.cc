#include "remote/retry.h"

#include <algorithm>

namespace docfeed::internal {

int64_t BackoffDelayMs(const RetryPolicy& policy, int retry, uint64_t random) {
  int64_t cap = std::max<int64_t>(policy.base_delay_ms, 0);
  for (int i = 0; i < retry && cap < policy.max_delay_ms; ++i) cap *= 2;
  cap = std::min(cap, policy.max_delay_ms);
  if (cap <= 0) return 0;
  return static_cast<int64_t>(random % static_cast<uint64_t>(cap + 1));
}

bool IsRetryableHttpStatus(long status) { return status >= 500 || status == 429 || status == 408; }

}  // namespace docfeed::internal
