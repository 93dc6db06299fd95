// OrderedParallelFor: runs work(i) for i = 0..n-1 on worker threads and hands each result to
// consume(i, result) on the calling thread in index order. Workers run at most `window` items
// ahead of the consumer, so memory stays bounded by `window` results however large n is, and a
// slow item (a 600 dpi scan) only delays the items behind it by the window, not a whole batch.
#ifndef DOCFEED_BASE_ORDERED_PARALLEL_H_
#define DOCFEED_BASE_ORDERED_PARALLEL_H_

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/check.h"
#include "docfeed/status.h"

namespace docfeed::internal {

// REQUIRES: threads >= 1, window >= 1. `work` must be safe to call concurrently.
// Returns the first error `consume` returns; the remaining items are then not consumed (workers
// stop claiming new items and are joined before returning).
template <typename R>
Status OrderedParallelFor(size_t n, int threads, size_t window,
                          const std::function<R(size_t)>& work,
                          const std::function<Status(size_t, R&)>& consume) {
  DOCFEED_CHECK(threads >= 1 && window >= 1);
  std::mutex mu;
  std::condition_variable ready_cv;  // a result landed in the ring
  std::condition_variable space_cv;  // the consumer freed a slot (or stopped)
  std::vector<std::optional<R>> ring(window);
  size_t next_claim = 0;
  size_t consumed = 0;
  bool stop = false;

  auto worker = [&] {
    while (true) {
      size_t i;
      {
        std::unique_lock lock(mu);
        space_cv.wait(lock,
                      [&] { return stop || next_claim >= n || next_claim < consumed + window; });
        if (stop || next_claim >= n) return;
        i = next_claim++;
      }
      R result = work(i);
      std::lock_guard lock(mu);
      ring[i % window].emplace(std::move(result));
      ready_cv.notify_all();
    }
  };

  Status status;
  {
    std::vector<std::jthread> workers;
    for (int t = 0; t < threads; ++t) workers.emplace_back(worker);
    for (size_t i = 0; i < n && status.ok(); ++i) {
      std::optional<R> item;
      {
        std::unique_lock lock(mu);
        ready_cv.wait(lock, [&] { return ring[i % window].has_value(); });
        item.swap(ring[i % window]);
        consumed = i + 1;
      }
      space_cv.notify_all();
      status = consume(i, *item);
    }
    {
      std::lock_guard lock(mu);
      stop = true;
    }
    space_cv.notify_all();
  }  // jthreads join here
  return status;
}

}  // namespace docfeed::internal

#endif  // DOCFEED_BASE_ORDERED_PARALLEL_H_
