// The loader's statistics: what LoaderStats reports, the counters the workers bump without a
// lock, and the one JSON rendering that `docfeed bench --json`, the Python module's stats() and
// `docfeed doctor` all read.
//
// Thread safety: StatsRecorder's counters are relaxed atomics (statistics, not synchronization);
// its bad-sample list has its own lock. Any thread may record; Snapshot() may run concurrently.
#ifndef DOCFEED_PIPELINE_LOADER_STATS_H_
#define DOCFEED_PIPELINE_LOADER_STATS_H_

#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "docfeed/loader.h"

namespace docfeed::internal {

using docfeed::LoaderStats;
using docfeed::LoaderStatsJson;
using docfeed::StageTime;

// The names of LoaderStats' stages, in declaration order (each a {"count", "nanos"} object in
// the JSON).
inline constexpr const char* kLoaderStageNames[] = {
    "read", "decode", "resize", "decode_resize", "pad_normalize", "buffer_wait", "consumer_wait"};

// A stage timer updated without a lock.
class AtomicStage {
 public:
  void Add(uint64_t nanos) {
    count_.fetch_add(1, std::memory_order_relaxed);
    nanos_.fetch_add(nanos, std::memory_order_relaxed);
  }
  StageTime Load() const {
    return {count_.load(std::memory_order_relaxed), nanos_.load(std::memory_order_relaxed)};
  }

 private:
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> nanos_{0};
};

// The live counters behind Loader::stats().
class StatsRecorder {
 public:
  AtomicStage read, decode, resize, decode_resize, pad_normalize, buffer_wait, consumer_wait;
  std::atomic<uint64_t> samples{0}, batches{0}, stored_bytes{0};
  std::atomic<uint64_t> direct_reads{0};    // samples a range prefetcher had not planned
  std::atomic<uint64_t> reread_samples{0};  // samples read again after a failed remote read

  // Counts sample `id` of `epoch` as skipped unless it already was (a sample is skipped at most
  // once per epoch however often it is read: by a look-ahead that is later dropped, by two
  // slots both trying it as a replacement, by a restarted epoch), keeps the first few messages;
  // returns the count so far.
  uint64_t RecordBad(uint64_t epoch, uint64_t id, const std::string& message) DOCFEED_EXCLUDES(mu_);
  uint64_t bad_samples() const { return bad_samples_.load(std::memory_order_relaxed); }

  // Every counter except the pool's and the scheduler's (the caller fills those).
  LoaderStats Snapshot() const DOCFEED_EXCLUDES(mu_);

 private:
  std::atomic<uint64_t> bad_samples_{0};
  mutable Mutex mu_;
  std::vector<std::string> bad_errors_ DOCFEED_GUARDED_BY(mu_);
  std::set<std::pair<uint64_t, uint64_t>> bad_seen_ DOCFEED_GUARDED_BY(mu_);  // (epoch, id)
};

}  // namespace docfeed::internal

#endif  // DOCFEED_PIPELINE_LOADER_STATS_H_
