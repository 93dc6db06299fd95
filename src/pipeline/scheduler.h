// The loader's scheduler: which batch of which epoch each pool buffer holds, which slot each
// worker fills, the order batches are handed out in, and the look-ahead into the next epoch.
//
//   TryClaim/WaitForClaim  a worker takes the next unclaimed slot, starting a new batch in a
//                          free buffer when the prefetch window allows (current epoch first,
//                          then the next epoch's first batches: the look-ahead)
//   Finish                 the worker reports the slot done (or its error); the last slot of a
//                          batch makes it ready
//   Next                   the consumer takes the next batch in order once it is ready
//   Release                a delivered buffer returns to the free list
//   StartEpoch             drops prefetched work (keeping what belongs to the new epoch's
//                          start) after the workers left the buffers they write
//   Close                  wakes every waiter: workers stop claiming, Next and StartEpoch
//                          return Cancelled from then on
//
// Locking: one Mutex guards every member below it (checked by clang's -Wthread-safety). The
// scheduler never calls out while holding it. The `on_complete` hook (the label and pixel
// compaction of a finished batch, which touches only that batch's buffer) runs without it, on
// the worker that finished the batch's last slot, before the batch becomes ready; that worker
// counts as active until then, so StartEpoch waits for it.
//
// Every consumer-side call may come from several threads at once. Each wait re-checks, after
// every wake-up, all the conditions that end it (the batch is ready, the epoch is over, the
// scheduler is closed, every buffer is held), so no caller waits for something another caller
// already took: each batch goes to exactly one Next(), and every Next() waiting when the last
// batch is taken returns the end of the epoch.
#ifndef DOCFEED_PIPELINE_SCHEDULER_H_
#define DOCFEED_PIPELINE_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "base/mutex.h"
#include "docfeed/loader.h"
#include "docfeed/status.h"
#include "pipeline/epoch_order.h"

namespace docfeed::internal {

using docfeed::LoaderState;

// What one worker took on: slot j of batch k of `order`, in `generation`, into `buffer`.
struct Claim {
  std::shared_ptr<const EpochOrder> order;
  uint64_t generation = 0;
  uint64_t k = 0;
  uint32_t j = 0;
  int buffer = -1;
};

// A batch handed to the consumer (or the end of the epoch, when `end`).
struct Delivery {
  bool end = false;
  int buffer = -1;
  uint32_t size = 0;
  uint64_t epoch = 0;
  uint64_t k = 0;
  LoaderState resume_state;
};

// What the workers will claim next, in claim order (the range prefetcher's plan): the unclaimed
// slots of batches already started, then the batches of `order` from `next_to_start`, then the
// look-ahead's from `ahead_next_to_start` (the scheduler starts at most `prefetch` of those).
struct UpcomingClaims {
  struct Started {
    std::shared_ptr<const EpochOrder> order;
    uint64_t k = 0;
    uint32_t first_slot = 0;
  };
  uint64_t generation = 0;
  std::vector<Started> started;
  std::shared_ptr<const EpochOrder> order;
  uint64_t next_to_start = 0;
  std::shared_ptr<const EpochOrder> ahead;
  uint64_t ahead_next_to_start = 0;
};

class Scheduler {
 public:
  using OrderFactory =
      std::function<Result<std::shared_ptr<const EpochOrder>>(uint64_t epoch, uint64_t position)>;

  // `buffers` pool buffers (all free), at most `prefetch` batches in flight. `on_complete(buffer,
  // size)` runs, without the lock, when the last slot of a batch without errors finishes, and
  // the batch is ready once it returns. Every LoaderState reported carries `shape`'s seed,
  // world_size and batch_size.
  Scheduler(const LoaderState& shape, int buffers, int prefetch, OrderFactory make_order,
            std::function<void(int buffer, uint32_t size)> on_complete);

  // Called with the upcoming claims whenever a new order is installed (Init, StartEpoch), before
  // any worker claims from it: claims stay paused while it runs, without the lock. Set before
  // Init(), at most once.
  void SetOrderHook(std::function<void(const UpcomingClaims&)> hook) {
    order_hook_ = std::move(hook);
  }

  // Starts epoch 0 at position 0 with epoch 1 as look-ahead.
  Status Init() DOCFEED_EXCLUDES(mu_);

  // Worker side: blocks until a slot is claimed (true) or Stop() was called (false). Adds the
  // time spent waiting for a free buffer to *buffer_wait_nanos.
  bool WaitForClaim(Claim* claim, uint64_t* buffer_wait_nanos) DOCFEED_EXCLUDES(mu_);
  // Worker side: slot `claim` is done; `status` is its error, if any. The lowest failed slot's
  // error becomes the batch's.
  void Finish(const Claim& claim, Status status) DOCFEED_EXCLUDES(mu_);

  // Consumer side: the next batch in order, waiting for it; Delivery::end at the end of the
  // epoch. Errors: the batch's first failed slot (its buffer is freed), ResourceExhausted
  // when every buffer is held by the consumer, or Cancelled once Close() was called (also for a
  // call waiting when it is). `*waited_nanos` gets the time waited; the
  // batches already complete at the call add to ready_depth_sum().
  Result<Delivery> Next(uint64_t* waited_nanos) DOCFEED_EXCLUDES(mu_);
  // A delivered buffer is free again. Any thread.
  void Release(int buffer) DOCFEED_EXCLUDES(mu_);

  // Drops prefetched work and starts `epoch` at global position `position`, keeping batches
  // already prefetched for exactly that start (nothing delivered yet, or the look-ahead).
  // `elastic`, when given, becomes the mode every state reports from then on (a Restore).
  // Errors: Cancelled once Close() was called.
  Status StartEpoch(uint64_t epoch, uint64_t position,
                    std::optional<ElasticMode> elastic = std::nullopt) DOCFEED_EXCLUDES(mu_);
  // Wakes every waiting thread: WaitForClaim returns false, Next() and StartEpoch() Cancelled,
  // from now on. Idempotent; any thread.
  void Close() DOCFEED_EXCLUDES(mu_);

  // The state after the last batch handed out, or the start of the epoch; once Next() has
  // returned the end of the epoch, its end (position num_samples).
  LoaderState state() const DOCFEED_EXCLUDES(mu_);
  uint64_t num_batches() const DOCFEED_EXCLUDES(mu_);
  uint64_t ready_depth_sum() const DOCFEED_EXCLUDES(mu_);

 private:
  // A batch that workers are filling or that waits for the consumer.
  struct InFlight {
    std::shared_ptr<const EpochOrder> order;  // the current epoch's, or the look-ahead's
    uint64_t k = 0;                           // batch number in that epoch
    int buffer = -1;
    uint32_t size = 0;
    uint32_t next_slot = 0;  // slots below it are claimed
    uint32_t remaining = 0;  // slots not yet finished
    uint32_t error_slot = 0;
    Status error;  // the lowest-numbered failed slot's error
  };

  bool TryClaim(Claim* claim, bool* no_buffer) DOCFEED_REQUIRES(mu_);
  UpcomingClaims Upcoming() const DOCFEED_REQUIRES(mu_);
  // The in-flight batch `c` claimed a slot of (null if none).
  InFlight* Find(const Claim& c) DOCFEED_REQUIRES(mu_);
  bool FrontReady() const DOCFEED_REQUIRES(mu_);
  // The Delivery of the front batch, which is ready; its buffer is held (or freed on error).
  Result<Delivery> TakeFront() DOCFEED_REQUIRES(mu_);

  // The state at (epoch, position) with this loader's shape and elastic mode.
  LoaderState StateAt(uint64_t epoch, uint64_t position) const DOCFEED_REQUIRES(mu_);

  const LoaderState shape_;  // seed, world_size, batch_size
  const int num_buffers_;
  const int prefetch_;
  const OrderFactory make_order_;
  const std::function<void(int, uint32_t)> on_complete_;
  std::function<void(const UpcomingClaims&)> order_hook_;

  mutable Mutex mu_;
  CondVar work_cv_;   // workers: new work, a free buffer, stop
  CondVar ready_cv_;  // consumer: a batch completed
  CondVar idle_cv_;   // StartEpoch: the workers left the slots they held
  std::shared_ptr<const EpochOrder> order_ DOCFEED_GUARDED_BY(mu_);
  // The epoch after this one, from its start: once every batch of `order_` is started, idle
  // workers fill buffers from it, so the first batches of the next epoch are ready when it is
  // asked for (StartEpoch(epoch + 1) keeps them) instead of the consumer waiting at every epoch
  // boundary.
  std::shared_ptr<const EpochOrder> ahead_ DOCFEED_GUARDED_BY(mu_);
  uint64_t ahead_next_to_start_ DOCFEED_GUARDED_BY(mu_) = 0;
  uint64_t generation_ DOCFEED_GUARDED_BY(mu_) = 0;
  // StartEpoch calls waiting for the workers to go idle: no claims while it is above 0 (a count,
  // not a flag, so one restart finishing cannot let workers starve another one's wait).
  int pausers_ DOCFEED_GUARDED_BY(mu_) = 0;
  bool closed_ DOCFEED_GUARDED_BY(mu_) = false;
  int active_ DOCFEED_GUARDED_BY(mu_) = 0;  // workers filling a claimed slot outside the lock
  uint64_t next_to_start_ DOCFEED_GUARDED_BY(mu_) = 0;
  uint64_t next_to_deliver_ DOCFEED_GUARDED_BY(mu_) = 0;
  std::deque<InFlight> in_flight_ DOCFEED_GUARDED_BY(mu_);  // front(): batch next_to_deliver_
  std::vector<int> free_buffers_ DOCFEED_GUARDED_BY(mu_);
  int held_ DOCFEED_GUARDED_BY(mu_) = 0;
  LoaderState last_state_ DOCFEED_GUARDED_BY(mu_);
  ElasticMode elastic_ DOCFEED_GUARDED_BY(mu_) = ElasticMode::kSame;
  bool delivered_any_ DOCFEED_GUARDED_BY(mu_) = false;
  uint64_t ready_depth_sum_ DOCFEED_GUARDED_BY(mu_) = 0;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_PIPELINE_SCHEDULER_H_
