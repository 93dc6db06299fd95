// The loader: glue between its four parts (buffer_pool.h, scheduler.h, sample_reader.h,
// loader_stats.h) and the worker threads.
#include "pipeline/loader.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "base/file.h"
#include "base/mutex.h"
#include "docfeed/remote.h"
#include "format/dataset.h"
#include "format/manifest.h"
#include "pipeline/buffer_pool.h"
#include "pipeline/range_prefetcher.h"
#include "pipeline/sample_reader.h"
#include "pipeline/scheduler.h"
#include "remote/disk_cache.h"
#include "remote/remote_env.h"

namespace docfeed::internal {

// Shared by the Loader and every Batch it handed out: the pool (and what its buffers' contents
// mean) outlives the Loader while batches do. Workers are joined by Close() (also run by
// ~Loader), so a LoaderCore is never destroyed with a worker running.
//
// After fork() the child has this memory but none of the workers, and the scheduler's mutex
// and condition variables may be in the state a parent thread left them in (held, waited on):
// nothing in the child may lock, wait on or destroy them. So every entry point checks Forked()
// first; in the child the calls that return a Status fail, and the last reference is leaked
// instead of destroyed (LeakInForkedChild).
struct LoaderCore {
  LoaderOptions options;
  const int owner_pid = CurrentProcessId();
  StatsRecorder stats;
  // A remote dataset read through a local cache (LoaderOptions::cache_dir): the Env its files
  // were opened with, which must outlive them (declared before the reader).
  std::shared_ptr<internal::DiskCache> cache;
  std::unique_ptr<Env> cache_env;
  std::unique_ptr<SampleReader> reader;
  // Remote datasets: reads the samples' ranges ahead of the workers (null: workers read).
  std::unique_ptr<RangePrefetcher> prefetcher;
  RemoteStats remote_at_start;  // GetRemoteStats() when the loader was created
  std::unique_ptr<BufferPool> pool;
  std::unique_ptr<Scheduler> scheduler;
  Mutex workers_mu;  // serializes Close(): the second caller returns once the first joined
  std::vector<std::thread> workers DOCFEED_GUARDED_BY(workers_mu);

  bool Forked() const { return CurrentProcessId() != owner_pid; }
  Status ForkedError() const {
    return FailedPreconditionError(
        "this docfeed loader was created in process " + std::to_string(owner_pid) +
        " and is used in process " + std::to_string(CurrentProcessId()) +
        " after fork(); its worker threads do not exist here. Create a new Loader in the "
        "child (docfeed.Loader in Python does so by itself)");
  }
  // Stops the scheduler, then joins the workers (each finishes its current sample first).
  void Close() DOCFEED_EXCLUDES(workers_mu);

  // One worker: claim a slot, fill it (outside the scheduler's lock), report it.
  void WorkerLoop();
  // Slot c.j of its buffer. A variable-size preset's slot is at its final offset in the packed
  // batch: the predicted outputs of the batch's slots before it (the index knows every page's
  // size before any is read), so a batch whose pages come out as predicted needs no packing.
  SlotView SlotFor(const Claim& c) const;
  // Fills slot c.j of its buffer; under kSkip a failed sample is replaced by the next positions
  // of the same epoch order, so the replacement is the same whichever thread meets it, and the
  // replaced ids are noted in the slot for Next() to count.
  Status FillSlot(const Claim& c, WorkerScratch& scratch);
};

namespace {

// Keeps a forked child's reference to the core alive forever (see LoaderCore): the child never
// runs ~LoaderCore, which would destroy the parent's locks and condition variables (waiting for
// their phantom waiters) and its std::threads.
void LeakInForkedChild(std::shared_ptr<LoaderCore> core) {
  static_cast<void>(new std::shared_ptr<LoaderCore>(std::move(core)));
}

}  // namespace

void LoaderCore::Close() {
  scheduler->Close();
  // Wakes workers waiting for a fetch (Cancelled) and joins the fetch threads.
  if (prefetcher != nullptr) prefetcher->Close();
  MutexLock lock(&workers_mu);
  for (std::thread& t : workers) t.join();
  workers.clear();
}

void LoaderCore::WorkerLoop() {
  WorkerScratch scratch;
  while (true) {
    Claim claim;
    uint64_t buffer_wait = 0;
    const bool claimed = scheduler->WaitForClaim(&claim, &buffer_wait);
    if (buffer_wait > 0) stats.buffer_wait.Add(buffer_wait);
    if (!claimed) return;
    scheduler->Finish(claim, FillSlot(claim, scratch));
  }
}

SlotView LoaderCore::SlotFor(const Claim& c) const {
  if (!reader->preset().variable_size()) return pool->Slot(c.buffer, c.j);
  const EpochOrder& o = *c.order;
  if (reader->preset().pads_batch()) {
    // At j times the batch's largest predicted output: where PackPixels(pad) puts it.
    size_t largest = 0;
    for (uint32_t i = 0; i < o.BatchSize(c.k); ++i) {
      largest = std::max(largest, reader->PredictedBytes(o.SampleAt(o.Position(c.k, i))));
    }
    return pool->SlotAt(c.buffer, c.j, c.j * largest, largest);
  }
  size_t offset = 0;
  for (uint32_t i = 0; i < c.j; ++i)
    offset += reader->PredictedBytes(o.SampleAt(o.Position(c.k, i)));
  return pool->SlotAt(c.buffer, c.j, offset,
                      reader->PredictedBytes(o.SampleAt(o.Position(c.k, c.j))));
}

Status LoaderCore::FillSlot(const Claim& c, WorkerScratch& scratch) {
  const EpochOrder& o = *c.order;
  const SlotView slot = SlotFor(c);
  slot.skipped->clear();
  uint64_t position = o.Position(c.k, c.j);
  for (uint64_t tries = 0;; ++tries, ++position) {
    const uint64_t id = o.SampleAt(position);
    Status status = reader->Load(id, o.options().epoch, slot, scratch, prefetcher.get());
    if (status.ok()) return status;
    if (options.on_error == BadSamplePolicy::kError) return status;
    if (status.code() == StatusCode::kCancelled) return status;  // closed: no replacement
    slot.skipped->push_back({id, "sample " + std::to_string(id) + ": " + status.ToString()});
    // The lifetime budget is counted when the batch is handed out (Next); one slot alone may
    // not exceed it either, nor try every sample.
    if (tries + 1 > options.max_bad_samples || tries + 1 >= o.options().num_samples) {
      return ResourceExhaustedError(std::to_string(tries + 1) +
                                    " samples in a row failed to load, more than the budget of " +
                                    std::to_string(options.max_bad_samples) +
                                    " (max_bad_samples); the last: " + status.ToString());
    }
  }
}

}  // namespace docfeed::internal

namespace docfeed {

using internal::BufferPool;
using internal::Dataset;
using internal::Delivery;
using internal::EpochOrder;
using internal::EpochOrderOptions;
using internal::LoaderCore;
using internal::MakePreset;
using internal::Manifest;
using internal::PresetParams;
using internal::SampleReader;
using internal::SampleReaderOptions;
using internal::Scheduler;

// ---- Batch ----

Batch::Batch(Batch&& other) noexcept { *this = std::move(other); }

Batch& Batch::operator=(Batch&& other) noexcept {
  if (this == &other) return *this;
  Release();
  core_ = std::move(other.core_);
  buffer_ = std::exchange(other.buffer_, -1);
  size_ = other.size_;
  epoch_ = other.epoch_;
  index_ = other.index_;
  pixels_ = other.pixels_;
  pixel_bytes_ = other.pixel_bytes_;
  labels_ = other.labels_;
  label_length_ = other.label_length_;
  tokens_ = other.tokens_;
  token_block_ = other.token_block_;
  num_token_columns_ = other.num_token_columns_;
  token_length_ = other.token_length_;
  sample_ids_ = other.sample_ids_;
  pad_offsets_ = other.pad_offsets_;
  content_sizes_ = other.content_sizes_;
  resume_state_ = other.resume_state_;
  return *this;
}

Batch::~Batch() { Release(); }

void Batch::Release() {
  if (core_ == nullptr) return;
  if (core_->Forked()) {
    internal::LeakInForkedChild(std::move(core_));
  } else {
    core_->scheduler->Release(buffer_);
    core_.reset();
  }
  buffer_ = -1;
}

// ---- Loader ----

namespace {

Status ValidateOptions(const LoaderOptions& o) {
  DOCFEED_RETURN_IF_ERROR(internal::ValidateDonutConfig(o.preset.donut));
  if (o.batch_size == 0) return InvalidArgumentError("batch_size must be at least 1");
  if (o.prefetch < 1) return InvalidArgumentError("prefetch must be at least 1");
  if (o.max_held < 1) return InvalidArgumentError("max_held must be at least 1");
  if (o.prefetch_requests < 1) return InvalidArgumentError("prefetch_requests must be at least 1");
  if (o.num_threads < 0) return InvalidArgumentError("num_threads must be 0 (auto) or more");
  if (o.world_size == 0 || o.rank >= o.world_size) {
    return InvalidArgumentError("rank " + std::to_string(o.rank) + " is not below world_size " +
                                std::to_string(o.world_size));
  }
  if (static_cast<bool>(o.allocator.allocate) != static_cast<bool>(o.allocator.release)) {
    return InvalidArgumentError("a buffer allocator needs both allocate and release");
  }
  return Status::Ok();
}

// The preset's parameters: the options', with the normalization of the float outputs taken,
// for each of mean/std, from the options if set, else from the manifest if it records one
// (migrated datasets, whose recorded processor generation also replaces the options'), else the
// preset's (Donut's and Idefics3's 0.5 / 0.5, Nougat's ImageNet values, Qwen2-VL's CLIP values).
PresetParams MakePresetParams(const LoaderOptions& o, const Manifest& manifest) {
  PresetParams params = o.preset;
  if (manifest.normalization) {
    params.donut.mean = manifest.normalization->mean;
    params.donut.std = manifest.normalization->std;
    // A migrated page is only padded and normalized: the generation that matters is the one
    // whose arithmetic made the tensors, which the migration recorded.
    if (manifest.preprocess.preprocessed()) {
      params.donut.hf_version = manifest.preprocess.hf_version;
      Result<DonutBackend> backend = ParseDonutBackend(manifest.preprocess.backend);
      if (backend.ok()) params.donut.backend = *backend;
    }
  }
  if (o.image_mean) {
    params.donut.mean = params.qwen_vl.mean = params.nougat.mean = params.idefics3.mean =
        *o.image_mean;
  }
  if (o.image_std) {
    params.donut.std = params.qwen_vl.std = params.nougat.std = params.idefics3.std = *o.image_std;
  }
  return params;
}

// The samples the workers will read next, in claim order (the prefetcher's plan).
constexpr uint64_t kLookAheadBatches = 1;

std::vector<uint64_t> PlannedSamples(const internal::UpcomingClaims& u) {
  std::vector<uint64_t> ids;
  auto batch = [&ids](const EpochOrder& o, uint64_t k, uint32_t first) {
    for (uint32_t j = first; j < o.BatchSize(k); ++j) ids.push_back(o.SampleAt(o.Position(k, j)));
  };
  for (const internal::UpcomingClaims::Started& s : u.started) batch(*s.order, s.k, s.first_slot);
  if (u.order != nullptr) {
    ids.reserve(ids.size() +
                (u.order->num_batches() - std::min(u.order->num_batches(), u.next_to_start)) *
                    u.order->options().batch_size);
    for (uint64_t k = u.next_to_start; k < u.order->num_batches(); ++k) batch(*u.order, k, 0);
  }
  // The look-ahead's first batch: enough to cross the epoch boundary without waiting for the
  // network, little enough that a run stopping after this epoch fetched few bytes it never
  // uses. The scheduler may start up to `prefetch` of them; the others are read directly.
  if (u.ahead != nullptr) {
    const uint64_t end = std::min<uint64_t>(u.ahead->num_batches(), kLookAheadBatches);
    for (uint64_t k = u.ahead_next_to_start; k < end; ++k) batch(*u.ahead, k, 0);
  }
  return ids;
}

// Counts the samples the workers replaced in `batch` (handed out just now) against the
// lifetime budget; the batch's own samples are all good.
Status CountSkipped(LoaderCore& c, const BufferPool::Buffer& m, const Batch& batch) {
  uint64_t bad = 0;
  const internal::SkippedSample* last = nullptr;
  for (uint32_t j = 0; j < batch.size(); ++j) {
    for (const internal::SkippedSample& s : m.skipped[j]) {
      bad = c.stats.RecordBad(batch.epoch(), s.id, s.error);
      last = &s;
    }
  }
  if (last == nullptr || bad <= c.options.max_bad_samples) return Status::Ok();
  return ResourceExhaustedError(
      std::to_string(bad) + " samples failed to load, more than the budget of " +
      std::to_string(c.options.max_bad_samples) + " (max_bad_samples); the last: " + last->error);
}

}  // namespace

Loader::Loader(std::shared_ptr<LoaderCore> core) : core_(std::move(core)) {}

Result<std::unique_ptr<Loader>> Loader::Create(const LoaderOptions& options) {
  DOCFEED_RETURN_IF_ERROR(ValidateOptions(options));
  auto core = std::make_shared<LoaderCore>();
  core->options = options;
  Env* env = options.env;
  if (env == nullptr && !options.cache_dir.empty() && IsRemotePath(options.path)) {
    internal::DiskCacheOptions co;
    co.dir = options.cache_dir;
    co.limit_bytes = options.cache_limit_bytes;
    DOCFEED_ASSIGN_OR_RETURN(core->cache, internal::DiskCache::Open(co));
    core->cache_env = internal::MakeCachingEnv(internal::RemoteEnv::Default(), core->cache);
    env = core->cache_env.get();
  }
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<Dataset> dataset, Dataset::Open(options.path, env));
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<const internal::Preset> preset,
                           MakePreset(MakePresetParams(options, dataset->manifest())));
  SampleReaderOptions ro;
  ro.seed = options.seed;
  ro.dtype = options.dtype;
  ro.layout = options.layout;
  ro.label_column = options.label_column;
  ro.label_length = options.label_length;
  for (const TokenColumn& t : options.token_columns) ro.token_columns.push_back(t.name);
  ro.token_capacity = options.token_capacity;
  ro.reread_damaged = core->cache != nullptr;
  DOCFEED_ASSIGN_OR_RETURN(
      core->reader, SampleReader::Create(std::move(dataset), std::move(preset), ro, &core->stats));
  const size_t buffers =
      static_cast<size_t>(options.prefetch) + static_cast<size_t>(options.max_held);
  DOCFEED_ASSIGN_OR_RETURN(
      core->pool,
      BufferPool::Create(buffers, options.batch_size, core->reader->sample_pixel_bytes(),
                         core->reader->label_capacity(), options.allocator,
                         options.token_columns.size(), options.token_capacity));
  const uint64_t num_samples = core->reader->dataset().size();
  auto make_order = [options, num_samples](
                        uint64_t epoch,
                        uint64_t position) -> Result<std::shared_ptr<const EpochOrder>> {
    EpochOrderOptions eo;
    eo.num_samples = num_samples;
    eo.seed = options.seed;
    eo.epoch = epoch;
    eo.shuffle = options.shuffle;
    eo.batch_size = options.batch_size;
    eo.rank = options.rank;
    eo.world_size = options.world_size;
    eo.remainder = options.remainder;
    eo.start = position;
    DOCFEED_ASSIGN_OR_RETURN(EpochOrder order, EpochOrder::Create(eo));
    return std::make_shared<const EpochOrder>(std::move(order));
  };
  BufferPool* pool = core->pool.get();
  const bool labels = core->reader->has_labels();
  const uint32_t label_length = options.label_length;
  std::vector<int64_t> token_pads;
  for (const TokenColumn& t : options.token_columns) token_pads.push_back(t.pad);
  const bool variable_size = core->reader->preset().variable_size();
  const bool pads_batch = core->reader->preset().pads_batch();
  LoaderState shape;
  shape.seed = options.seed;
  shape.world_size = options.world_size;
  shape.batch_size = options.batch_size;
  core->scheduler = std::make_unique<Scheduler>(
      shape, static_cast<int>(buffers), options.prefetch, make_order,
      [pool, labels, label_length, token_pads, variable_size, pads_batch](int buffer,
                                                                          uint32_t size) {
        if (labels) pool->CompactLabels(buffer, size, label_length);
        if (!token_pads.empty()) pool->CompactTokens(buffer, size, token_pads);
        if (variable_size) {
          // Each page's output follows the previous one's (or, padded, starts at j times the
          // largest); written so already unless a replacement or a missed prediction displaced
          // some.
          pool->PackPixels(buffer, size, pads_batch);
        } else {
          pool->buffer(buffer).pixel_bytes = pool->sample_pixel_bytes() * size;
        }
      });
  const bool prefetch =
      options.range_prefetch == RangePrefetch::kOn ||
      (options.range_prefetch == RangePrefetch::kAuto && IsRemotePath(options.path));
  if (prefetch) {
    internal::RangePrefetchOptions po;
    po.with_labels = core->reader->reads_values();
    po.max_bytes = options.prefetch_bytes;
    po.max_requests = options.prefetch_requests;
    core->remote_at_start = GetRemoteStats();
    core->prefetcher = std::make_unique<internal::RangePrefetcher>(&core->reader->dataset(), po);
    internal::RangePrefetcher* prefetcher = core->prefetcher.get();
    core->scheduler->SetOrderHook([prefetcher](const internal::UpcomingClaims& u) {
      prefetcher->Plan(u.generation, PlannedSamples(u));
    });
  }
  DOCFEED_RETURN_IF_ERROR(core->scheduler->Init());
  int threads = options.num_threads;
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  LoaderCore* raw = core.get();
  {
    internal::MutexLock lock(&core->workers_mu);
    for (int i = 0; i < threads; ++i) core->workers.emplace_back([raw] { raw->WorkerLoop(); });
  }
  return std::unique_ptr<Loader>(new Loader(std::move(core)));
}

Loader::~Loader() {
  if (core_->Forked()) {
    internal::LeakInForkedChild(std::move(core_));
    return;
  }
  core_->Close();
}

void Loader::Close() {
  if (!core_->Forked()) core_->Close();
}

const LoaderOptions& Loader::options() const { return core_->options; }
uint64_t Loader::num_samples() const { return core_->reader->dataset().size(); }
bool Loader::preprocessed() const { return core_->reader->preprocessed(); }
const std::array<double, 3>& Loader::image_mean() const {
  return core_->reader->preset().image_mean();
}
const std::array<double, 3>& Loader::image_std() const {
  return core_->reader->preset().image_std();
}
size_t Loader::batch_pixel_bytes() const { return core_->pool->batch_pixel_bytes(); }
uint64_t Loader::num_batches() const { return core_->scheduler->num_batches(); }
LoaderState Loader::state() const { return core_->scheduler->state(); }

Status Loader::StartEpoch(uint64_t epoch, uint64_t position) {
  if (core_->Forked()) return core_->ForkedError();
  return core_->scheduler->StartEpoch(epoch, position);
}

Status Loader::Restore(const LoaderState& state, std::optional<ElasticMode> elastic) {
  if (core_->Forked()) return core_->ForkedError();
  if (state.seed != core_->options.seed) {
    return InvalidArgumentError("the saved loader state has seed " + std::to_string(state.seed) +
                                ", this loader seed " + std::to_string(core_->options.seed) +
                                "; resuming would change the order");
  }
  if (state.position > num_samples()) {
    return InvalidArgumentError("the saved loader state is at position " +
                                std::to_string(state.position) + ", past the " +
                                std::to_string(num_samples()) + " samples of this dataset");
  }
  DOCFEED_ASSIGN_OR_RETURN(
      const ElasticMode mode,
      ResolveElasticMode(state, core_->options.world_size, core_->options.batch_size, elastic));
  return core_->scheduler->StartEpoch(state.epoch, state.position, mode);
}

Result<Batch> Loader::Next() {
  LoaderCore& c = *core_;
  if (c.Forked()) return c.ForkedError();
  constexpr uint64_t kNotWaited = ~uint64_t{0};
  uint64_t waited = kNotWaited;
  Result<Delivery> d = c.scheduler->Next(&waited);
  if (waited != kNotWaited) c.stats.consumer_wait.Add(waited);
  if (!d.ok()) return d.status();
  if (d->end) return Batch();
  c.stats.batches.fetch_add(1, std::memory_order_relaxed);
  BufferPool::Buffer& m = c.pool->buffer(d->buffer);
  const bool labels = c.reader->has_labels();
  Batch batch;
  batch.core_ = core_;
  batch.buffer_ = d->buffer;
  batch.size_ = d->size;
  batch.epoch_ = d->epoch;
  batch.index_ = d->k;
  batch.pixels_ = m.pixels;
  batch.pixel_bytes_ = m.pixel_bytes;
  batch.labels_ = labels ? m.labels.data() : nullptr;
  batch.label_length_ = labels ? m.label_length : 0;
  batch.num_token_columns_ = c.pool->token_columns();
  batch.tokens_ = batch.num_token_columns_ > 0 ? m.tokens.data() : nullptr;
  batch.token_block_ = size_t{c.options.batch_size} * c.pool->token_capacity();
  batch.token_length_ = batch.num_token_columns_ > 0 ? m.token_length : 0;
  batch.sample_ids_ = m.sample_ids.data();
  batch.pad_offsets_ = m.pad_offsets.data();
  batch.content_sizes_ = m.content_sizes.data();
  batch.resume_state_ = d->resume_state;
  if (c.options.on_error == BadSamplePolicy::kSkip) {
    DOCFEED_RETURN_IF_ERROR(CountSkipped(c, m, batch));  // an error drops (releases) the batch
  }
  return batch;
}

LoaderStats Loader::stats() const {
  const LoaderCore& c = *core_;
  LoaderStats s = c.stats.Snapshot();
  s.ready_depth_sum = c.scheduler->ready_depth_sum();
  s.pool_buffers = c.pool->size();
  s.pool_bytes = c.pool->size() * c.pool->batch_pixel_bytes();
  if (c.prefetcher != nullptr) {
    const internal::RangePrefetchCounters& p = c.prefetcher->counters();
    s.remote.prefetching = true;
    s.remote.requests = p.requests.load(std::memory_order_relaxed);
    s.remote.bytes_fetched = p.bytes_fetched.load(std::memory_order_relaxed);
    s.remote.bytes_used = p.bytes_used.load(std::memory_order_relaxed);
    s.remote.coalesced = p.coalesced.load(std::memory_order_relaxed);
    s.remote.refetches = p.refetches.load(std::memory_order_relaxed);
    s.remote.fetch_wait = p.wait.Load();
    s.remote.peak_bytes = p.peak_bytes.load(std::memory_order_relaxed);
    s.remote.cache_reads = p.held_locally.load(std::memory_order_relaxed);
    const RemoteStats now = GetRemoteStats();
    s.remote.retries = now.retries - c.remote_at_start.retries;
    s.remote.throttled = now.throttled - c.remote_at_start.throttled;
    s.remote.throttle_waits = now.throttle_waits - c.remote_at_start.throttle_waits;
  }
  if (c.cache != nullptr) {
    const internal::DiskCacheCounters& k = c.cache->counters();
    s.remote.cached = true;
    s.remote.cache_hit_bytes = k.hit_bytes.load(std::memory_order_relaxed);
    s.remote.cache_fetched_bytes = k.fetched_bytes.load(std::memory_order_relaxed);
    s.remote.cache_stored_bytes = k.stored_bytes.load(std::memory_order_relaxed);
    s.remote.cache_bad_blocks = k.bad_blocks.load(std::memory_order_relaxed);
    s.remote.cache_invalidated = k.invalidated.load(std::memory_order_relaxed);
    s.remote.cache_io_errors = k.io_errors.load(std::memory_order_relaxed);
    s.remote.cache_evicted_bytes = k.evicted_bytes.load(std::memory_order_relaxed);
  }
  s.remote.direct_reads = c.stats.direct_reads.load(std::memory_order_relaxed);
  s.remote.rereads = c.stats.reread_samples.load(std::memory_order_relaxed);
  return s;
}

}  // namespace docfeed
