#include "pipeline/scheduler.h"

#include <string>
#include <utility>

#include "base/check.h"
#include "base/clock.h"

namespace docfeed::internal {

Scheduler::Scheduler(const LoaderState& shape, int buffers, int prefetch, OrderFactory make_order,
                     std::function<void(int buffer, uint32_t size)> on_complete)
    : shape_(shape),
      num_buffers_(buffers),
      prefetch_(prefetch),
      make_order_(std::move(make_order)),
      on_complete_(std::move(on_complete)) {
  MutexLock lock(&mu_);
  // Buffer 0 is taken first.
  for (int i = buffers - 1; i >= 0; --i) free_buffers_.push_back(i);
}

Status Scheduler::Init() {
  DOCFEED_ASSIGN_OR_RETURN(std::shared_ptr<const EpochOrder> order, make_order_(0, 0));
  DOCFEED_ASSIGN_OR_RETURN(std::shared_ptr<const EpochOrder> ahead, make_order_(1, 0));
  UpcomingClaims upcoming;
  {
    MutexLock lock(&mu_);
    order_ = std::move(order);
    ahead_ = std::move(ahead);
    last_state_ = StateAt(0, 0);
    if (order_hook_) upcoming = Upcoming();
  }
  if (order_hook_) order_hook_(upcoming);  // no worker runs yet
  return Status::Ok();
}

LoaderState Scheduler::StateAt(uint64_t epoch, uint64_t position) const {
  LoaderState s = shape_;
  s.epoch = epoch;
  s.position = position;
  s.elastic = elastic_;
  return s;
}

UpcomingClaims Scheduler::Upcoming() const {
  UpcomingClaims u;
  u.generation = generation_;
  for (const InFlight& b : in_flight_) {
    if (b.next_slot < b.size) u.started.push_back({b.order, b.k, b.next_slot});
  }
  u.order = order_;
  u.next_to_start = next_to_start_;
  u.ahead = ahead_;
  u.ahead_next_to_start = ahead_next_to_start_;
  return u;
}

bool Scheduler::TryClaim(Claim* claim, bool* no_buffer) {
  *no_buffer = false;
  if (pausers_ > 0 || order_ == nullptr) return false;
  // Unclaimed slots of started batches first: the current epoch's come before the look-ahead's.
  for (InFlight& b : in_flight_) {
    if (b.next_slot < b.size) {
      *claim = {b.order, generation_, b.k, b.next_slot++, b.buffer};
      return true;
    }
  }
  std::shared_ptr<const EpochOrder> from;
  uint64_t* counter = nullptr;
  if (next_to_start_ < order_->num_batches()) {
    from = order_;
    counter = &next_to_start_;
  } else if (ahead_ != nullptr && ahead_next_to_start_ < ahead_->num_batches()) {
    from = ahead_;
    counter = &ahead_next_to_start_;
  } else {
    return false;
  }
  if (free_buffers_.empty() || in_flight_.size() >= static_cast<size_t>(prefetch_)) {
    *no_buffer = true;
    return false;
  }
  InFlight b;
  b.order = from;
  b.k = (*counter)++;
  b.buffer = free_buffers_.back();
  free_buffers_.pop_back();
  b.size = from->BatchSize(b.k);
  b.remaining = b.size;
  b.next_slot = 1;
  in_flight_.push_back(std::move(b));
  *claim = {from, generation_, in_flight_.back().k, 0, in_flight_.back().buffer};
  return true;
}

bool Scheduler::WaitForClaim(Claim* claim, uint64_t* buffer_wait_nanos) {
  MutexLock lock(&mu_);
  bool no_buffer = false;
  bool waited_for_buffer = false;
  Clock::time_point wait_start;
  while (!closed_ && !TryClaim(claim, &no_buffer)) {
    if (no_buffer && !waited_for_buffer) {
      waited_for_buffer = true;
      wait_start = Clock::now();
    }
    work_cv_.Wait(&mu_);
  }
  if (waited_for_buffer) *buffer_wait_nanos += NanosSince(wait_start);
  if (closed_) return false;
  ++active_;
  return true;
}

Scheduler::InFlight* Scheduler::Find(const Claim& c) {
  for (InFlight& f : in_flight_) {
    if (f.k == c.k && f.order == c.order) return &f;
  }
  return nullptr;
}

void Scheduler::Finish(const Claim& c, Status status) {
  int buffer = -1;
  uint32_t size = 0;
  {
    MutexLock lock(&mu_);
    if (c.generation == generation_) {  // else the epoch was restarted; the batch is gone
      InFlight* b = Find(c);
      DOCFEED_CHECK(b != nullptr);
      if (!status.ok() && (b->error.ok() || c.j < b->error_slot)) {
        b->error = std::move(status);
        b->error_slot = c.j;
      }
      if (b->remaining == 1 && b->error.ok()) {
        // The last slot of a good batch: this worker assembles it below, still counted as
        // active, so StartEpoch cannot take the buffer away meanwhile.
        buffer = b->buffer;
        size = b->size;
      } else if (--b->remaining == 0) {
        ready_cv_.SignalAll();  // a failed batch: Next() reports its error
      }
    }
    if (buffer < 0) {
      if (--active_ == 0) idle_cv_.SignalAll();
      return;
    }
  }
  // Outside the lock: every slot of the batch is written and it is not ready, so nobody else
  // touches its buffer, and other workers and consumers go on meanwhile.
  on_complete_(buffer, size);
  MutexLock lock(&mu_);
  InFlight* b = Find(c);  // the deque may have moved (batches taken), the batch is still there
  DOCFEED_CHECK(b != nullptr && b->remaining == 1);
  b->remaining = 0;
  ready_cv_.SignalAll();
  if (--active_ == 0) idle_cv_.SignalAll();
}

bool Scheduler::FrontReady() const {
  return !in_flight_.empty() && in_flight_.front().order == order_ &&
         in_flight_.front().k == next_to_deliver_ && in_flight_.front().remaining == 0;
}

namespace {

Status ClosedError() { return CancelledError("loader was closed"); }

}  // namespace

Result<Delivery> Scheduler::TakeFront() {
  InFlight done = std::move(in_flight_.front());
  in_flight_.pop_front();
  ++next_to_deliver_;
  delivered_any_ = true;
  last_state_ = StateAt(order_->options().epoch, order_->PositionAfter(done.k));
  work_cv_.SignalAll();
  ready_cv_.SignalAll();  // other consumers waiting re-check (the epoch may be over now)
  if (!done.error.ok()) {
    free_buffers_.push_back(done.buffer);
    return done.error;
  }
  ++held_;
  return Delivery{.end = false,
                  .buffer = done.buffer,
                  .size = done.size,
                  .epoch = order_->options().epoch,
                  .k = done.k,
                  .resume_state = last_state_};
}

Result<Delivery> Scheduler::Next(uint64_t* waited_nanos) {
  MutexLock lock(&mu_);
  for (const InFlight& b : in_flight_) ready_depth_sum_ += b.remaining == 0 ? 1 : 0;
  const Clock::time_point start = Clock::now();
  // Every exit condition is checked after each wake-up: another consumer thread may have taken
  // the batch this one waited for (or the last one of the epoch), or closed the loader.
  while (true) {
    if (closed_) return ClosedError();
    if (next_to_deliver_ >= order_->num_batches()) {
      // The epoch is over: its state is its end (not the start of a step that a resume with
      // smaller steps could still serve, e.g. after restoring at a kDrop tail).
      last_state_.position = order_->options().num_samples;
      Delivery end;
      end.end = true;
      return end;
    }
    if (FrontReady()) break;
    if (in_flight_.empty() && held_ == num_buffers_) {
      return ResourceExhaustedError(
          "every batch buffer (" + std::to_string(num_buffers_) +
          ", prefetch + max_held) is held by the consumer; release a batch before asking for "
          "the next, or raise max_held");
    }
    ready_cv_.Wait(&mu_);
  }
  *waited_nanos = NanosSince(start);
  return TakeFront();
}

void Scheduler::Release(int buffer) {
  {
    MutexLock lock(&mu_);
    free_buffers_.push_back(buffer);
    --held_;
  }
  work_cv_.SignalAll();
}

Status Scheduler::StartEpoch(uint64_t epoch, uint64_t position,
                             std::optional<ElasticMode> elastic) {
  std::shared_ptr<const EpochOrder> order;
  {
    MutexLock lock(&mu_);
    if (closed_) return ClosedError();
    // Nothing handed out yet and the same start: keep what the workers prefetched.
    const EpochOrderOptions& cur = order_->options();
    if (!delivered_any_ && cur.epoch == epoch && cur.start == position) {
      if (elastic) elastic_ = *elastic;
      last_state_ = StateAt(epoch, position);
      return Status::Ok();
    }
    // The epoch the workers looked ahead into: keep its prefetched batches.
    const EpochOrderOptions& next = ahead_->options();
    if (next.epoch == epoch && next.start == position) order = ahead_;
  }
  if (order == nullptr) {
    DOCFEED_ASSIGN_OR_RETURN(order, make_order_(epoch, position));
  }
  DOCFEED_ASSIGN_OR_RETURN(std::shared_ptr<const EpochOrder> ahead, make_order_(epoch + 1, 0));
  UpcomingClaims upcoming;
  {
    MutexLock lock(&mu_);
    if (closed_) return ClosedError();
    // Stop new claims and wait for the workers to leave the slots they are writing, so no
    // buffer goes back to the pool while a worker still writes into it.
    ++pausers_;
    while (active_ != 0) idle_cv_.Wait(&mu_);
    --pausers_;
    if (closed_) return ClosedError();
    // Only the look-ahead's batches are kept, and only while `order` still is the look-ahead:
    // another StartEpoch may have installed it since, and its batches may be half delivered.
    const bool from_ahead = order == ahead_;
    std::deque<InFlight> kept;
    for (InFlight& b : in_flight_) {
      if (from_ahead && b.order == order) {
        kept.push_back(std::move(b));
      } else {
        free_buffers_.push_back(b.buffer);
      }
    }
    next_to_start_ = from_ahead ? ahead_next_to_start_ : 0;
    in_flight_ = std::move(kept);
    order_ = std::move(order);
    ahead_ = std::move(ahead);
    ahead_next_to_start_ = 0;
    ++generation_;
    next_to_deliver_ = 0;
    delivered_any_ = false;
    if (elastic) elastic_ = *elastic;
    last_state_ = StateAt(epoch, position);
    if (order_hook_) {
      upcoming = Upcoming();
      ++pausers_;  // no claims from the new order until the hook has seen it
    }
  }
  if (order_hook_) {
    order_hook_(upcoming);
    MutexLock lock(&mu_);
    --pausers_;
  }
  // Workers claim the new epoch's slots; a Next() waiting on the old order re-checks the new.
  work_cv_.SignalAll();
  ready_cv_.SignalAll();
  return Status::Ok();
}

void Scheduler::Close() {
  {
    MutexLock lock(&mu_);
    closed_ = true;
  }
  work_cv_.SignalAll();
  ready_cv_.SignalAll();
  idle_cv_.SignalAll();
}

LoaderState Scheduler::state() const {
  MutexLock lock(&mu_);
  return last_state_;
}

uint64_t Scheduler::num_batches() const {
  MutexLock lock(&mu_);
  return order_->num_batches();
}

uint64_t Scheduler::ready_depth_sum() const {
  MutexLock lock(&mu_);
  return ready_depth_sum_;
}

}  // namespace docfeed::internal
