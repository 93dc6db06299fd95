// RangePrefetcher: reads a remote dataset by its index, ahead of the loader's workers.
//
// The loader knows the order its workers will read samples in (the epoch order, this rank's
// slots, from the scheduler's next unclaimed slot on, plus the look-ahead's first batches). It
// hands that list of sample ids to Plan(); the prefetcher turns each id into the byte range
// ReadSample will read (Dataset::PlanSample: the sample's record batch, or its image), and a
// pool of fetch threads reads the ranges in that order with positioned reads of the data files
// (on a RemoteEnv: one ranged GET each, retried by the HTTP client):
//
//   Plan(ids) ──► queue of planned samples (only the next few are materialized)
//                   │ the first unscheduled one, plus upcoming neighbours in the same file
//                   │ (overlapping, adjacent, or a small gap apart: coalesced into one request)
//                   ▼
//   fetch threads (max_requests): ReadAt(range) ─► every sample's bytes against its XXH3
//                   │                               (mismatch: the range is fetched once more)
//                   ▼
//   Take(id) ◄── a worker: waits for its sample's bytes, reads the sample from them
//
// Bounds: at most max_requests requests in flight, and at most max_bytes fetched (or being
// fetched) and not yet used, except that a sample a worker is waiting for is always fetched at
// once (alone), so a full budget can never stall the sample the consumer needs next. Memory is
// thus at most max_bytes plus one sample per worker. Both limits start low and grow: 2 requests
// when a plan starts (one more per completed request), 8 MiB before any sample was used (plus
// twice the bytes the workers used), so the first samples get the bandwidth and CPU first
// instead of sharing them with fetches far ahead. Coalescing never fetches more than max_waste
// of the bytes its samples need, nor gaps above max_gap_bytes, nor a request above
// max_merge_bytes (a single sample's range may be larger).
//
// A sample whose range a local cache holds (RandomAccessFile::HeldLocally, when the entry is
// made) is not fetched: Take() answers null and the worker reads the cache's copy itself.
//
// Correctness never depends on the plan: Take(id) of a sample that is not planned (a replacement
// under on_error = skip, a restart racing the new plan) answers "not planned" and the worker
// reads the sample from the file itself. Fetched bytes are only ever handed out for the sample
// id they were fetched for, after their checksum matched; the reader checks them again exactly
// as it checks a file's bytes.
//
// Thread safety: every method may be called from any thread. One mutex guards the queue; the
// fetches and checksums run outside it.
#ifndef DOCFEED_PIPELINE_RANGE_PREFETCHER_H_
#define DOCFEED_PIPELINE_RANGE_PREFETCHER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/uninitialized_buffer.h"
#include "docfeed/status.h"
#include "format/dataset.h"
#include "pipeline/loader_stats.h"

namespace docfeed::internal {

struct RangePrefetchOptions {
  bool with_labels = false;       // the reads the plan must cover (Dataset::PlanSample)
  uint64_t max_bytes = 32 << 20;  // fetched or in flight and not yet used
  int max_requests = 8;           // requests in flight at once (fetch threads)
  // A coalesced request, at most: coalescing saves the per-request cost of small ranges; a
  // large merged request only makes the first sample in it wait for the others.
  uint64_t max_merge_bytes = 1 << 20;
  uint64_t max_gap_bytes = 64 << 10;  // unneeded bytes between two coalesced ranges, at most
  double max_waste = 0.05;            // unneeded bytes / needed bytes of a coalesced request
  size_t merge_window = 32;           // upcoming unscheduled samples searched for neighbours
};

// Counters over the prefetcher's life (relaxed atomics).
struct RangePrefetchCounters {
  std::atomic<uint64_t> requests{0};       // ranges read (refetches included)
  std::atomic<uint64_t> bytes_fetched{0};  // bytes of those ranges
  std::atomic<uint64_t> bytes_used{0};     // bytes of the planned ranges handed to workers
  std::atomic<uint64_t> coalesced{0};      // samples whose range joined another's request
  std::atomic<uint64_t> refetches{0};      // ranges fetched again after a checksum mismatch
  std::atomic<uint64_t> hits{0};           // Take() of a planned sample
  std::atomic<uint64_t> misses{0};         // Take() of a sample not planned (read directly)
  std::atomic<uint64_t> held_locally{0};   // Take() of a sample a local cache held (read there)
  std::atomic<uint64_t> peak_bytes{0};     // most bytes held at once (requests and spares)
  AtomicStage wait;                        // Take() waiting for a fetch
};

class RangePrefetcher;
struct PrefetchChunk;  // one request's bytes (range_prefetcher.cc)
struct PrefetchEntry;  // one planned sample (range_prefetcher.cc)

// A sample's fetched bytes, held by the worker that reads it; the budget gets them back when
// this is destroyed.
class PrefetchedSample {
 public:
  ~PrefetchedSample();
  PrefetchedSample(const PrefetchedSample&) = delete;
  PrefetchedSample& operator=(const PrefetchedSample&) = delete;
  const FetchedRange& range() const { return range_; }

 private:
  friend class RangePrefetcher;
  PrefetchedSample() = default;
  RangePrefetcher* owner_ = nullptr;
  std::shared_ptr<PrefetchChunk> chunk_;
  FetchedRange range_;
  uint64_t used_ = 0;
};

class RangePrefetcher {
 public:
  // `dataset` must outlive the prefetcher. Starts options.max_requests fetch threads.
  RangePrefetcher(const Dataset* dataset, const RangePrefetchOptions& options);
  ~RangePrefetcher();  // Close()
  RangePrefetcher(const RangePrefetcher&) = delete;
  RangePrefetcher& operator=(const RangePrefetcher&) = delete;

  // The samples the workers will read next, in order, for the scheduler's `generation`; an
  // older generation than the one installed is ignored (two restarts racing). Samples fetched
  // or in flight that the new plan still needs are kept, the rest dropped.
  void Plan(uint64_t generation, std::vector<uint64_t> ids) DOCFEED_EXCLUDES(mu_);

  // The bytes of sample `id`, waiting for their fetch. Null when `id` is not planned (read it
  // from the file). Errors, naming the dataset, the sample and the range's URL: the fetch failed
  // (the Env's error, after the HTTP client's retries), or the bytes did not match their
  // checksum twice (Corruption); Cancelled after Close().
  Result<std::unique_ptr<PrefetchedSample>> Take(uint64_t id) DOCFEED_EXCLUDES(mu_);

  // Wakes every waiting Take (Cancelled) and joins the fetch threads after their current
  // request. Idempotent.
  void Close() DOCFEED_EXCLUDES(mu_);

  const RangePrefetchCounters& counters() const { return counters_; }
  const RangePrefetchOptions& options() const { return options_; }
  // Bytes fetched or in flight and not yet released (for tests of the bound).
  uint64_t bytes_held() const DOCFEED_EXCLUDES(mu_);

 private:
  friend class PrefetchedSample;
  using Chunk = PrefetchChunk;
  using Entry = PrefetchEntry;

  void FetchLoop() DOCFEED_EXCLUDES(mu_);
  // Picks the next request (a demanded sample, else the first unscheduled planned one with its
  // neighbours) and marks its samples scheduled; null when there is nothing allowed now.
  std::shared_ptr<Chunk> NextChunk() DOCFEED_REQUIRES(mu_);
  // A request for `range` serving `members` (now scheduled), counted in the budget.
  std::shared_ptr<Chunk> StartChunk(std::vector<Entry*> members, const FileRange& range)
      DOCFEED_REQUIRES(mu_);
  // Materializes planned ids until `want` unscheduled entries follow the scheduled ones or the
  // plan is exhausted.
  void Materialize(size_t want) DOCFEED_REQUIRES(mu_);
  // A queue entry for `id` with its plan (unplanned when PlanSample fails: the worker's own
  // read then reports the error).
  std::shared_ptr<Entry> MakeEntry(uint64_t id) const;
  // Reads the chunk's range, checks each sample's bytes (refetching once on a mismatch).
  void Fetch(Chunk& chunk) DOCFEED_EXCLUDES(mu_);
  void Release(Chunk& chunk, uint64_t used) DOCFEED_EXCLUDES(mu_);
  // Frees the chunk's bytes and budget once no entry waits for it and no worker holds it.
  void MaybeFree(Chunk& chunk) DOCFEED_REQUIRES(mu_);
  // An empty buffer whose capacity holds `length` bytes: the smallest spare that does, else a
  // new one (spares freed to make room for it within max_bytes).
  UninitializedBuffer BufferFor(uint64_t length) DOCFEED_REQUIRES(mu_);

  const Dataset* const dataset_;
  const RangePrefetchOptions options_;
  RangePrefetchCounters counters_;

  mutable Mutex mu_;
  CondVar work_cv_;   // fetch threads: new plan, a demand, budget freed, close
  CondVar ready_cv_;  // Take: a chunk arrived, close
  bool closed_ DOCFEED_GUARDED_BY(mu_) = false;
  bool has_plan_ DOCFEED_GUARDED_BY(mu_) = false;
  uint64_t generation_ DOCFEED_GUARDED_BY(mu_) = 0;
  std::vector<uint64_t> ids_ DOCFEED_GUARDED_BY(mu_);  // the plan
  size_t next_id_ DOCFEED_GUARDED_BY(mu_) = 0;         // ids_ below it are materialized
  std::deque<std::shared_ptr<Entry>> queue_ DOCFEED_GUARDED_BY(mu_);   // untaken, in order
  std::deque<std::shared_ptr<Entry>> demand_ DOCFEED_GUARDED_BY(mu_);  // taken, unscheduled
  uint64_t bytes_held_ DOCFEED_GUARDED_BY(mu_) = 0;
  uint64_t used_bytes_ DOCFEED_GUARDED_BY(mu_) = 0;  // handed to workers, over the life
  int in_flight_ DOCFEED_GUARDED_BY(mu_) = 0;        // requests being fetched
  int in_flight_limit_ DOCFEED_GUARDED_BY(mu_) = 2;  // slow start, up to max_requests
  // Buffers of freed requests, reused by the next ones; their capacity and bytes_held_ stay
  // within max_bytes together.
  std::vector<UninitializedBuffer> spare_ DOCFEED_GUARDED_BY(mu_);
  uint64_t spare_bytes_ DOCFEED_GUARDED_BY(mu_) = 0;
  std::vector<std::thread> threads_;  // started in the constructor, joined by Close()
  Mutex close_mu_;                    // serializes Close()'s join
};

}  // namespace docfeed::internal

#endif  // DOCFEED_PIPELINE_RANGE_PREFETCHER_H_
