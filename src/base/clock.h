// The monotonic clock docfeed times its stages with.
#ifndef DOCFEED_BASE_CLOCK_H_
#define DOCFEED_BASE_CLOCK_H_

#include <chrono>
#include <cstdint>

namespace docfeed::internal {

using Clock = std::chrono::steady_clock;

// Nanoseconds from `start` to now.
inline uint64_t NanosSince(Clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
}

}  // namespace docfeed::internal

#endif  // DOCFEED_BASE_CLOCK_H_
