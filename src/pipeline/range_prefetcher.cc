#include "pipeline/range_prefetcher.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "base/check.h"
#include "base/clock.h"
#include "base/hash.h"

namespace docfeed::internal {

// One request: a range of a data file covering one or more planned samples' ranges. Written by
// its fetch thread until `done` (published under the prefetcher's lock), read-only after.
struct PrefetchChunk {
  FileRange range;
  UninitializedBuffer bytes;        // resized without zeroing: a fetch fills it whole
  std::vector<SamplePlan> members;  // the samples it serves
  std::vector<uint64_t> member_ids;
  std::vector<Status> member_errors;  // a member's bytes that failed their checksum twice
  Status error;                       // the read itself failed
  // Guarded by the prefetcher's lock:
  bool done = false;
  int untaken = 0;       // members neither taken nor dropped from the plan
  int leases = 0;        // PrefetchedSamples alive
  uint64_t charged = 0;  // bytes counted in bytes_held_ until freed
};

// One planned sample, in plan order.
struct PrefetchEntry {
  uint64_t id = 0;
  // PlanSample succeeded and the range is not in a local cache; else the worker reads it (and
  // reports the error, or reads the cache's copy).
  bool planned = false;
  bool held_locally = false;  // not planned: a cache holds its range
  SamplePlan plan;
  std::shared_ptr<PrefetchChunk> chunk;  // null until scheduled
  size_t member = 0;                     // its index in chunk->members
};

namespace {

// How far Take() looks into the plan for an id that is not materialized yet (a worker ahead of
// the fetch threads).
constexpr size_t kTakeSearch = 4096;

// Requests in flight when a plan starts (see NextChunk).
constexpr int kSlowStart = 2;

// The byte budget before any sample was used; it grows by twice the bytes used (NextChunk).
constexpr uint64_t kStartBytes = 8 << 20;

}  // namespace

PrefetchedSample::~PrefetchedSample() {
  if (owner_ != nullptr) owner_->Release(*chunk_, used_);
}

RangePrefetcher::RangePrefetcher(const Dataset* dataset, const RangePrefetchOptions& options)
    : dataset_(dataset), options_(options) {
  const int threads = std::max(1, options_.max_requests);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { FetchLoop(); });
}

RangePrefetcher::~RangePrefetcher() { Close(); }

void RangePrefetcher::Close() {
  {
    MutexLock lock(&mu_);
    closed_ = true;
  }
  work_cv_.SignalAll();
  ready_cv_.SignalAll();
  MutexLock lock(&close_mu_);
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

uint64_t RangePrefetcher::bytes_held() const {
  MutexLock lock(&mu_);
  return bytes_held_;
}

void RangePrefetcher::Plan(uint64_t generation, std::vector<uint64_t> ids) {
  MutexLock lock(&mu_);
  if (closed_ || (has_plan_ && generation <= generation_)) return;
  has_plan_ = true;
  generation_ = generation;
  in_flight_limit_ = kSlowStart;
  // Samples already fetched or in flight are kept for their first occurrence near the front of
  // the new plan (a restart keeps the look-ahead's batches); the others are dropped.
  std::unordered_multimap<uint64_t, std::shared_ptr<Entry>> scheduled;
  for (std::shared_ptr<Entry>& e : queue_) {
    if (e->chunk != nullptr) scheduled.emplace(e->id, std::move(e));
  }
  queue_.clear();
  ids_ = std::move(ids);
  next_id_ = 0;
  size_t last_kept = 0;
  const size_t horizon = std::min(ids_.size(), scheduled.size() + options_.merge_window + 1024);
  std::vector<std::shared_ptr<Entry>> kept(horizon);
  for (size_t i = 0; i < horizon && !scheduled.empty(); ++i) {
    auto it = scheduled.find(ids_[i]);
    if (it == scheduled.end()) continue;
    kept[i] = std::move(it->second);
    scheduled.erase(it);
    last_kept = i + 1;
  }
  for (size_t i = 0; i < last_kept; ++i) {
    if (kept[i] != nullptr) {
      queue_.push_back(std::move(kept[i]));
    } else {
      queue_.push_back(MakeEntry(ids_[i]));
    }
  }
  next_id_ = last_kept;
  for (auto& [id, e] : scheduled) {
    --e->chunk->untaken;
    MaybeFree(*e->chunk);
  }
  work_cv_.SignalAll();
}

void RangePrefetcher::Materialize(size_t want) {
  size_t unscheduled = 0;
  for (const std::shared_ptr<Entry>& e : queue_) unscheduled += e->planned && !e->chunk ? 1 : 0;
  while (unscheduled < want && next_id_ < ids_.size()) {
    queue_.push_back(MakeEntry(ids_[next_id_++]));
    unscheduled += queue_.back()->planned ? 1 : 0;
  }
}

std::shared_ptr<RangePrefetcher::Entry> RangePrefetcher::MakeEntry(uint64_t id) const {
  auto e = std::make_shared<Entry>();
  e->id = id;
  Result<SamplePlan> plan = dataset_->PlanSample(id, options_.with_labels);
  e->planned = plan.ok();
  if (plan.ok()) {
    e->plan = *plan;
    // A range a local cache holds is read by the worker from it, as a local file is: fetching
    // it ahead would only copy it once more and hold it in the budget.
    const FileRange& r = e->plan.range;
    e->held_locally = dataset_->data_file(r.file).HeldLocally(r.offset, r.length);
    e->planned = !e->held_locally;
  }
  return e;
}

std::shared_ptr<RangePrefetcher::Chunk> RangePrefetcher::StartChunk(std::vector<Entry*> members,
                                                                    const FileRange& range) {
  auto chunk = std::make_shared<Chunk>();
  chunk->range = range;
  chunk->bytes = BufferFor(range.length);
  chunk->untaken = static_cast<int>(members.size());
  // The buffer's capacity, not the range's length: a reused buffer may be larger, and the
  // budget bounds the memory held.
  chunk->charged = chunk->bytes.capacity();
  chunk->member_errors.resize(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    members[i]->chunk = chunk;
    members[i]->member = i;
    chunk->members.push_back(members[i]->plan);
    chunk->member_ids.push_back(members[i]->id);
  }
  bytes_held_ += chunk->charged;
  ++in_flight_;
  if (bytes_held_ + spare_bytes_ > counters_.peak_bytes.load(std::memory_order_relaxed)) {
    counters_.peak_bytes.store(bytes_held_ + spare_bytes_, std::memory_order_relaxed);
  }
  if (members.size() > 1) {
    counters_.coalesced.fetch_add(members.size() - 1, std::memory_order_relaxed);
  }
  return chunk;
}

std::shared_ptr<RangePrefetcher::Chunk> RangePrefetcher::NextChunk() {
  // A sample a worker waits for goes first, alone and whatever the budget.
  while (!demand_.empty()) {
    std::shared_ptr<Entry> e = std::move(demand_.front());
    demand_.pop_front();
    if (e->chunk == nullptr) return StartChunk({e.get()}, e->plan.range);
  }
  // Slow start: the first requests of a plan share the bandwidth with few others, so the first
  // samples arrive (and are decoded) early instead of all at once after every request of the
  // window; each completed request allows one more in flight, up to max_requests.
  if (in_flight_ >= in_flight_limit_) return nullptr;
  Materialize(options_.merge_window + 1);
  auto first = std::find_if(queue_.begin(), queue_.end(), [](const std::shared_ptr<Entry>& e) {
    return e->planned && e->chunk == nullptr;
  });
  if (first == queue_.end()) return nullptr;
  Entry& head = **first;
  // The budget grows with what the workers used: at the start, fetching far ahead takes the
  // CPU and bandwidth the first batch needs (measured: twice its pad/normalize time with 64 MiB
  // in flight on two cores), and a consumer slower than the network needs little ahead.
  const uint64_t budget = std::min(options_.max_bytes, kStartBytes + 2 * used_bytes_);
  if (bytes_held_ > 0 && bytes_held_ + head.plan.range.length > budget) return nullptr;
  // Neighbours among the next unscheduled samples: overlapping, adjacent or a small gap away
  // in the same file, while the request stays within its size, waste and the budget.
  FileRange range = head.plan.range;
  uint64_t needed = range.length;
  std::vector<Entry*> members = {&head};
  for (bool grew = true; grew;) {
    grew = false;
    size_t seen = 0;
    for (auto it = first + 1; it != queue_.end() && seen < options_.merge_window; ++it) {
      Entry& c = **it;
      if (!c.planned || c.chunk != nullptr) continue;
      ++seen;
      if (c.plan.range.file != range.file ||
          std::find(members.begin(), members.end(), &c) != members.end()) {
        continue;
      }
      const FileRange& r = c.plan.range;
      const uint64_t gap = r.offset > range.end()   ? r.offset - range.end()
                           : r.end() < range.offset ? range.offset - r.end()
                                                    : 0;
      if (gap > options_.max_gap_bytes) continue;
      const uint64_t lo = std::min(range.offset, r.offset);
      const uint64_t hi = std::max(range.end(), r.end());
      const uint64_t overlap =
          std::max(range.offset, r.offset) < std::min(range.end(), r.end())
              ? std::min(range.end(), r.end()) - std::max(range.offset, r.offset)
              : 0;
      const uint64_t new_needed = needed + (r.length - overlap);
      const uint64_t new_length = hi - lo;
      if (new_length > range.length && new_length > options_.max_merge_bytes) continue;
      if (static_cast<double>(new_length - std::min(new_length, new_needed)) >
          options_.max_waste * static_cast<double>(new_needed)) {
        continue;
      }
      if (bytes_held_ + new_length > budget && new_length > range.length) continue;
      range = {range.file, lo, new_length};
      needed = new_needed;
      members.push_back(&c);
      grew = true;
    }
  }
  return StartChunk(std::move(members), range);
}

void RangePrefetcher::Fetch(Chunk& chunk) {
  const RandomAccessFile& file = dataset_->data_file(chunk.range.file);
  auto read = [&]() -> Status {
    chunk.bytes.resize(chunk.range.length);
    // Within the capacity charged to the budget (BufferFor), so the budget is the memory held.
    DOCFEED_CHECK(chunk.bytes.capacity() == chunk.charged);
    counters_.requests.fetch_add(1, std::memory_order_relaxed);
    Status st = file.ReadAt(chunk.range.offset, chunk.bytes);
    if (st.ok()) counters_.bytes_fetched.fetch_add(chunk.range.length, std::memory_order_relaxed);
    return st;
  };
  // Which members' bytes do not match their checksum.
  auto check = [&]() {
    bool all = true;
    for (size_t i = 0; i < chunk.members.size(); ++i) {
      const FileRange& r = chunk.members[i].range;
      const std::span<const uint8_t> bytes =
          std::span<const uint8_t>(chunk.bytes).subspan(r.offset - chunk.range.offset, r.length);
      const bool good = Hash64(bytes) == chunk.members[i].xxh3;
      if (!good) {
        chunk.member_errors[i] = CorruptionError(
            file.path() + " (bytes " + std::to_string(r.offset) + "-" +
            std::to_string(r.end() - 1) + "): the bytes fetched twice do not match the " +
            (chunk.members[i].whole_batch ? "manifest's record batch checksum"
                                          : "index's image checksum"));
      } else {
        chunk.member_errors[i] = Status::Ok();
      }
      all = all && good;
    }
    return all;
  };
  chunk.error = read();
  if (!chunk.error.ok() || check()) return;
  // A flipped byte on the way (or a server answering with other bytes): once more.
  counters_.refetches.fetch_add(1, std::memory_order_relaxed);
  file.Invalidate(chunk.range.offset, chunk.range.length);  // a cache's copy: not again
  chunk.error = read();
  if (chunk.error.ok()) check();
}

void RangePrefetcher::FetchLoop() {
  while (true) {
    std::shared_ptr<Chunk> chunk;
    {
      MutexLock lock(&mu_);
      while (!closed_ && (chunk = NextChunk()) == nullptr) work_cv_.Wait(&mu_);
      if (closed_) return;
    }
    Fetch(*chunk);
    {
      MutexLock lock(&mu_);
      chunk->done = true;
      --in_flight_;
      in_flight_limit_ = std::min(in_flight_limit_ + 1, std::max(1, options_.max_requests));
      MaybeFree(*chunk);
    }
    ready_cv_.SignalAll();
  }
}

void RangePrefetcher::MaybeFree(Chunk& chunk) {
  if (!chunk.done || chunk.untaken > 0 || chunk.leases > 0 || chunk.charged == 0) return;
  bytes_held_ -= chunk.charged;
  chunk.charged = 0;
  // Kept for the next request while the budget has room: buffers allocated by the fetch
  // threads and freed by the workers would otherwise pile up in the allocator's per-thread
  // arenas (the resident set grew by several budgets without this).
  UninitializedBuffer bytes = std::move(chunk.bytes);
  chunk.bytes = {};
  if (bytes_held_ + spare_bytes_ + bytes.capacity() <= options_.max_bytes) {
    spare_bytes_ += bytes.capacity();
    spare_.push_back(std::move(bytes));
  }
  work_cv_.SignalAll();
}

UninitializedBuffer RangePrefetcher::BufferFor(uint64_t length) {
  // The smallest spare that holds `length`.
  size_t pick = spare_.size();
  for (size_t i = 0; i < spare_.size(); ++i) {
    const uint64_t cap = spare_[i].capacity();
    if (cap >= length && (pick == spare_.size() || cap < spare_[pick].capacity())) pick = i;
  }
  UninitializedBuffer out;
  if (pick < spare_.size()) {
    out = std::move(spare_[pick]);
    spare_[pick] = std::move(spare_.back());
    spare_.pop_back();
    spare_bytes_ -= out.capacity();
    return out;
  }
  // None does: a new buffer of exactly `length` (a spare grown by resize() would take up to
  // twice that), and spares freed while the held bytes, the spares and it exceed the budget.
  while (!spare_.empty() && bytes_held_ + spare_bytes_ + length > options_.max_bytes) {
    spare_bytes_ -= spare_.back().capacity();
    spare_.pop_back();
  }
  out.reserve(length);
  return out;
}

void RangePrefetcher::Release(Chunk& chunk, uint64_t used) {
  counters_.bytes_used.fetch_add(used, std::memory_order_relaxed);
  MutexLock lock(&mu_);
  used_bytes_ += used;
  --chunk.leases;
  MaybeFree(chunk);
}

Result<std::unique_ptr<PrefetchedSample>> RangePrefetcher::Take(uint64_t id) {
  MutexLock lock(&mu_);
  if (closed_) return CancelledError("loader was closed");
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [id](const std::shared_ptr<Entry>& e) { return e->id == id; });
  if (it == queue_.end()) {
    // Planned but not materialized yet: the worker is ahead of the fetches.
    const size_t end = std::min(ids_.size(), next_id_ + kTakeSearch);
    const auto found = std::find(ids_.begin() + static_cast<ptrdiff_t>(next_id_),
                                 ids_.begin() + static_cast<ptrdiff_t>(end), id);
    if (found != ids_.begin() + static_cast<ptrdiff_t>(end)) {
      const auto through = static_cast<size_t>(found - ids_.begin());
      while (next_id_ <= through) queue_.push_back(MakeEntry(ids_[next_id_++]));
      it = queue_.end() - 1;
    }
  }
  if (it == queue_.end() || !(*it)->planned) {
    const bool held_locally = it != queue_.end() && (*it)->held_locally;
    if (it != queue_.end()) queue_.erase(it);
    (held_locally ? counters_.held_locally : counters_.misses)
        .fetch_add(1, std::memory_order_relaxed);
    return std::unique_ptr<PrefetchedSample>();
  }
  std::shared_ptr<Entry> e = std::move(*it);
  queue_.erase(it);
  counters_.hits.fetch_add(1, std::memory_order_relaxed);
  if (e->chunk == nullptr) {
    demand_.push_back(e);
    work_cv_.SignalAll();
  }
  if (e->chunk == nullptr || !e->chunk->done) {
    const Clock::time_point start = Clock::now();
    while (!closed_ && (e->chunk == nullptr || !e->chunk->done)) ready_cv_.Wait(&mu_);
    counters_.wait.Add(NanosSince(start));
  }
  if (closed_) return CancelledError("loader was closed");
  Chunk& chunk = *e->chunk;
  --chunk.untaken;
  const Status& error = chunk.error.ok() ? chunk.member_errors[e->member] : chunk.error;
  if (!error.ok()) {
    Status out = error.WithContext(dataset_->dir() + ": sample " + std::to_string(id));
    MaybeFree(chunk);
    return out;
  }
  ++chunk.leases;
  std::unique_ptr<PrefetchedSample> sample(new PrefetchedSample());
  sample->owner_ = this;
  sample->chunk_ = e->chunk;
  // Fetch checked this member's range against its plan's checksum (a failure returned above).
  const FileRange& checked = chunk.members[e->member].range;
  sample->range_ = {chunk.range.file, chunk.range.offset, chunk.bytes, checked.offset,
                    checked.length};
  sample->used_ = e->plan.range.length;
  return sample;
}

}  // namespace docfeed::internal
