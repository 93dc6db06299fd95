#include "pipeline/loader.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "base/check.h"
#include "codec/codec.h"
#include "format/dataset.h"
#include "format/manifest.h"
#include "format/value.h"
#include "imaging/jpeg_scaled.h"

namespace docfeed::internal {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kLabelPad = -100;
constexpr size_t kMaxRecordedErrors = 16;

uint64_t NanosSince(Clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
}

// A stage timer the workers update without a lock (relaxed: the counters are statistics).
struct AtomicStage {
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> nanos{0};
  void Add(uint64_t ns) {
    count.fetch_add(1, std::memory_order_relaxed);
    nanos.fetch_add(ns, std::memory_order_relaxed);
  }
  StageTime Load() const {
    return {count.load(std::memory_order_relaxed), nanos.load(std::memory_order_relaxed)};
  }
};

// One pool buffer. `pixels` comes from the allocator; the rest is small and owned here.
struct BufferMemory {
  void* pixels = nullptr;
  std::vector<int64_t> staged_labels;   // batch_size rows of label_capacity, filled per slot
  std::vector<uint32_t> label_lengths;  // per slot
  std::vector<int64_t> labels;          // the batch's rows compacted to its label length
  uint32_t label_length = 0;
  std::vector<int64_t> sample_ids;
  std::vector<int32_t> pad_offsets;
  std::vector<int32_t> content_sizes;
};

// A batch that workers are filling or that waits for the consumer.
struct InFlight {
  std::shared_ptr<const EpochOrder> order;  // the current epoch's, or the next one's (look-ahead)
  uint64_t k = 0;                           // batch number in that epoch
  int buffer = -1;
  uint32_t size = 0;
  uint32_t next_slot = 0;  // slots below it are claimed
  uint32_t remaining = 0;  // slots not yet finished
  uint32_t error_slot = 0;
  Status error;  // the lowest-numbered failed slot's error
};

// What one worker took on: slot j of batch k of `order`, in `generation`.
struct Claim {
  std::shared_ptr<const EpochOrder> order;
  uint64_t generation = 0;
  uint64_t k = 0;
  uint32_t j = 0;
  int buffer = -1;
};

// Per-worker memory kept across samples: the resized page of original-image datasets and the
// decompressed stored bytes (buffers reused when large enough, so steady state allocates nothing
// for them).
struct Scratch {
  Image resized;
  ReadScratch read;  // decompressed stored bytes (compressed bodies), reused sample after sample
};

std::string SampleName(const Dataset& ds, uint64_t id) {
  return ds.dir() + ": sample " + std::to_string(id);
}

}  // namespace

struct LoaderCore {
  LoaderOptions options;
  std::unique_ptr<Dataset> dataset;
  NormalizeTable table;
  std::array<double, 3> image_mean{};  // the normalization `table` was built with
  std::array<double, 3> image_std{};
  bool preprocessed = false;
  int label_column = -1;  // index into the manifest's columns; -1: no labels
  uint32_t label_capacity = 0;
  size_t sample_pixel_bytes = 0;
  size_t batch_pixel_bytes = 0;
  std::vector<BufferMemory> buffers;

  mutable std::mutex mu;
  std::condition_variable work_cv;   // workers: new work, a free buffer, stop
  std::condition_variable ready_cv;  // consumer: a batch completed
  std::condition_variable idle_cv;   // StartEpoch: the workers left the samples they held
  std::shared_ptr<const EpochOrder> order;
  // The epoch after this one, from its start: once every batch of `order` is started, idle workers
  // fill buffers from it, so the first batches of the next epoch are ready when it is asked for
  // (StartEpoch(epoch + 1) keeps them) instead of the consumer waiting at every epoch boundary.
  std::shared_ptr<const EpochOrder> ahead;
  uint64_t ahead_next_to_start = 0;
  uint64_t generation = 0;
  bool paused = false;
  bool stopping = false;
  int active = 0;  // workers processing a claimed slot outside the lock
  uint64_t next_to_start = 0;
  uint64_t next_to_deliver = 0;
  std::deque<InFlight> in_flight;  // front() is batch next_to_deliver once started
  std::vector<int> free_buffers;
  int held = 0;
  LoaderState last_state;
  bool delivered_any = false;

  AtomicStage read, decode, resize, decode_resize, pad_normalize, buffer_wait, consumer_wait;
  std::atomic<uint64_t> samples{0}, batches{0}, stored_bytes{0}, bad_samples{0};
  uint64_t ready_depth_sum = 0;
  std::vector<std::string> bad_errors;  // guarded by mu

  std::vector<std::thread> workers;

  ~LoaderCore() {
    for (BufferMemory& b : buffers) {
      if (b.pixels == nullptr) continue;
      if (options.allocator.release) {
        options.allocator.release(b.pixels, batch_pixel_bytes);
      } else {
        std::free(b.pixels);
      }
    }
  }

  // Worker side, under `mu`: claims the next unclaimed slot, starting a new batch when a buffer
  // is free and the prefetch window allows. Sets *no_buffer when only a buffer is missing.
  bool TryClaim(Claim* claim, bool* no_buffer) {
    *no_buffer = false;
    if (paused || order == nullptr) return false;
    // Unclaimed slots of started batches first: the current epoch's come before the look-ahead's.
    for (InFlight& b : in_flight) {
      if (b.next_slot < b.size) {
        *claim = {b.order, generation, b.k, b.next_slot++, b.buffer};
        return true;
      }
    }
    std::shared_ptr<const EpochOrder> from;
    uint64_t* counter = nullptr;
    if (next_to_start < order->num_batches()) {
      from = order;
      counter = &next_to_start;
    } else if (ahead != nullptr && ahead_next_to_start < ahead->num_batches()) {
      from = ahead;
      counter = &ahead_next_to_start;
    } else {
      return false;
    }
    if (free_buffers.empty() || in_flight.size() >= static_cast<size_t>(options.prefetch)) {
      *no_buffer = true;
      return false;
    }
    InFlight b;
    b.order = from;
    b.k = (*counter)++;
    b.buffer = free_buffers.back();
    free_buffers.pop_back();
    b.size = from->BatchSize(b.k);
    b.remaining = b.size;
    b.next_slot = 1;
    in_flight.push_back(std::move(b));
    *claim = {from, generation, in_flight.back().k, 0, in_flight.back().buffer};
    return true;
  }

  // Worker side, under `mu`: records a finished slot; completes the batch when it was the last.
  void Finish(const Claim& c, Status status) {
    if (c.generation != generation) return;  // the epoch was restarted; the batch is gone
    InFlight* b = nullptr;
    for (InFlight& f : in_flight) {
      if (f.k == c.k && f.order == c.order) b = &f;
    }
    DOCFEED_CHECK(b != nullptr);
    if (!status.ok() && (b->error.ok() || c.j < b->error_slot)) {
      b->error = std::move(status);
      b->error_slot = c.j;
    }
    if (--b->remaining == 0) {
      CompactLabels(buffers[static_cast<size_t>(b->buffer)], b->size);
      ready_cv.notify_all();
    }
  }

  // Turns the staged label rows (label_capacity apart) into a dense size x L block, L being the
  // batch's longest row or the fixed label_length.
  void CompactLabels(BufferMemory& m, uint32_t size) const {
    if (label_column < 0) return;
    uint32_t length = options.label_length;
    if (length == 0) {
      for (uint32_t j = 0; j < size; ++j) length = std::max(length, m.label_lengths[j]);
    }
    m.label_length = length;
    for (uint32_t j = 0; j < size; ++j) {
      const int64_t* src = m.staged_labels.data() + size_t{j} * label_capacity;
      int64_t* dst = m.labels.data() + size_t{j} * length;
      std::copy_n(src, m.label_lengths[j], dst);
      std::fill(dst + m.label_lengths[j], dst + length, kLabelPad);
    }
  }

  Status FillSlot(const Claim& c, Scratch& scratch);
  Status LoadSample(uint64_t id, uint64_t epoch, BufferMemory& m, uint32_t j, Scratch& scratch);
  Result<ImageView> DecodeOriginal(uint64_t id, const IndexRecord& record,
                                   std::span<const uint8_t> bytes, Scratch& scratch);
  Status CopyLabels(uint64_t id, const std::vector<Value>& values, BufferMemory& m, uint32_t j);
  void RecordBad(uint64_t id, const Status& status);
};

namespace {

void WorkerLoop(LoaderCore* core) {
  Scratch scratch;
  std::unique_lock<std::mutex> lock(core->mu);
  while (true) {
    Claim claim;
    bool no_buffer = false;
    bool waited_for_buffer = false;
    Clock::time_point wait_start;
    while (!core->stopping && !core->TryClaim(&claim, &no_buffer)) {
      if (no_buffer && !waited_for_buffer) {
        waited_for_buffer = true;
        wait_start = Clock::now();
      }
      core->work_cv.wait(lock);
    }
    if (waited_for_buffer) core->buffer_wait.Add(NanosSince(wait_start));
    if (core->stopping) return;
    ++core->active;
    lock.unlock();
    Status status = core->FillSlot(claim, scratch);
    lock.lock();
    --core->active;
    core->Finish(claim, std::move(status));
    if (core->active == 0) core->idle_cv.notify_all();
  }
}

}  // namespace

void LoaderCore::RecordBad(uint64_t id, const Status& status) {
  bad_samples.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu);
  if (bad_errors.size() < kMaxRecordedErrors) {
    bad_errors.push_back("sample " + std::to_string(id) + ": " + status.ToString());
  }
}

Status LoaderCore::FillSlot(const Claim& c, Scratch& scratch) {
  const EpochOrder& o = *c.order;
  BufferMemory& m = buffers[static_cast<size_t>(c.buffer)];
  uint64_t position = o.Position(c.k, c.j);
  // A failed sample is replaced (under kSkip) by the next positions of the same epoch order,
  // so the replacement is the same whichever thread meets it.
  for (uint64_t tries = 0;; ++tries, ++position) {
    const uint64_t id = o.SampleAt(position);
    Status status = LoadSample(id, o.options().epoch, m, c.j, scratch);
    if (status.ok()) return status;
    if (options.on_error == BadSamplePolicy::kError) return status;
    RecordBad(id, status);
    const uint64_t bad = bad_samples.load(std::memory_order_relaxed);
    if (bad > options.max_bad_samples || tries + 1 >= o.options().num_samples) {
      return ResourceExhaustedError(std::to_string(bad) +
                                    " samples failed to load, more than the budget of " +
                                    std::to_string(options.max_bad_samples) +
                                    " (max_bad_samples); the last: " + status.ToString());
    }
  }
}

// The whole deterministic preset from the stored original: EXIF orientation (as `datasets`
// applies it when it decodes), convert("RGB") rules, resize and thumbnail. A page that needs no
// rotation goes through the streamed decode + resize (imaging/jpeg_scaled.h), which for JPEGs
// never materializes the full-size image; same bytes either way.
Result<ImageView> LoaderCore::DecodeOriginal(uint64_t id, const IndexRecord& record,
                                             std::span<const uint8_t> bytes, Scratch& scratch) {
  const int32_t orientation = record.flags & 0xF;
  Clock::time_point start = Clock::now();
  if (orientation <= 1) {
    const Status st =
        DecodeAndResizeForDonut(bytes, options.donut, DonutDecodeMode::kExact, &scratch.resized);
    if (!st.ok()) return st.WithContext(SampleName(*dataset, id));
    decode_resize.Add(NanosSince(start));
    return ViewOf(scratch.resized);
  }
  Result<Image> d = DecodeImage(bytes);
  if (!d.ok()) return d.status().WithContext(SampleName(*dataset, id));
  Image oriented = ApplyOrientation(*d, orientation);
  decode.Add(NanosSince(start));
  start = Clock::now();
  Result<Image> rgb = ToDonutInput(std::move(oriented));
  if (!rgb.ok()) return rgb.status().WithContext(SampleName(*dataset, id));
  Result<Image> resized = DonutResize(*rgb, options.donut);
  if (!resized.ok()) return resized.status().WithContext(SampleName(*dataset, id));
  scratch.resized = std::move(*resized);
  resize.Add(NanosSince(start));
  return ViewOf(scratch.resized);
}

Status LoaderCore::LoadSample(uint64_t id, uint64_t epoch, BufferMemory& m, uint32_t j,
                              Scratch& scratch) {
  const DonutConfig& cfg = options.donut;
  Clock::time_point start = Clock::now();
  // `sample` views scratch.read's buffers (compressed bodies) until this worker's next read.
  Result<SampleBytes> stored = dataset->ReadSample(id, label_column >= 0, &scratch.read);
  if (!stored.ok()) return stored.status();
  const SampleBytes& sample = *stored;
  read.Add(NanosSince(start));
  stored_bytes.fetch_add(sample.image.size(), std::memory_order_relaxed);

  const IndexRecord record = dataset->record(id);
  ImageView view;
  if (preprocessed) {
    start = Clock::now();
    if (record.codec == static_cast<uint8_t>(StoredCodec::kPpm)) {
      Result<ImageView> v = ViewPpm(sample.image);
      if (!v.ok()) return v.status().WithContext(SampleName(*dataset, id));
      view = *v;
    } else {  // a preprocessed page in another container (docfeed writes PPM/PGM)
      Result<Image> d = DecodeImage(sample.image);
      if (!d.ok()) return d.status().WithContext(SampleName(*dataset, id));
      scratch.resized = std::move(*d);
      view = ViewOf(scratch.resized);
    }
    decode.Add(NanosSince(start));
  } else {
    DOCFEED_ASSIGN_OR_RETURN(view, DecodeOriginal(id, record, sample.image, scratch));
  }
  if (view.channels != 1 && view.channels != 3) {
    return CorruptionError(SampleName(*dataset, id) + ": stored page has " +
                           std::to_string(view.channels) + " channels, expected 1 or 3");
  }
  if (view.height > cfg.height || view.width > cfg.width) {
    return CorruptionError(SampleName(*dataset, id) + ": page is " + std::to_string(view.width) +
                           "x" + std::to_string(view.height) + ", larger than the " +
                           std::to_string(cfg.width) + "x" + std::to_string(cfg.height) +
                           " output");
  }

  start = Clock::now();
  PadOffsets offsets;
  if (options.pad == PadMode::kCenter) {
    offsets = CenterPad(view.height, view.width, cfg);
  } else {
    PadRng rng = PadRng::ForSample(options.seed, epoch, id);
    offsets = DrawPad(view.height, view.width, cfg, rng);
  }
  uint8_t* out = static_cast<uint8_t*>(m.pixels) + sample_pixel_bytes * j;
  if (options.dtype == DType::kUint8 && options.layout == OutputLayout::kHwc) {
    // The padded stage itself: row copies and fills.
    const MutableImageView slot{out, cfg.width, cfg.height, 3, ptrdiff_t{cfg.width} * 3};
    DOCFEED_RETURN_IF_ERROR(DonutPad(view, offsets, slot));
  } else {
    // One pass from the resized page to the batch slot: no intermediate padded canvas.
    DOCFEED_RETURN_IF_ERROR(NormalizePadded(view, offsets, cfg.height, cfg.width, table,
                                            options.layout, options.dtype, out));
  }
  pad_normalize.Add(NanosSince(start));
  // The stored bytes are consumed: keep the mapping out of the resident set, so memory stays at
  // the batch buffers whatever the dataset size.
  dataset->DropPages(id);

  m.sample_ids[j] = static_cast<int64_t>(id);
  m.pad_offsets[2 * size_t{j}] = offsets.top;
  m.pad_offsets[2 * size_t{j} + 1] = offsets.left;
  m.content_sizes[2 * size_t{j}] = view.height;
  m.content_sizes[2 * size_t{j} + 1] = view.width;
  if (label_column >= 0) DOCFEED_RETURN_IF_ERROR(CopyLabels(id, sample.labels, m, j));
  samples.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status LoaderCore::CopyLabels(uint64_t id, const std::vector<Value>& values, BufferMemory& m,
                              uint32_t j) {
  const auto* row = std::get_if<std::vector<int64_t>>(&values[static_cast<size_t>(label_column)]);
  if (row == nullptr) {
    return CorruptionError(SampleName(*dataset, id) + ": column \"" +
                           dataset->manifest().columns[static_cast<size_t>(label_column)].name +
                           "\" is null");
  }
  const uint32_t length = LabelLength(values[static_cast<size_t>(label_column)]);
  if (length > label_capacity) {
    return InvalidArgumentError(SampleName(*dataset, id) + ": " + std::to_string(length) +
                                " labels, more than label_length " +
                                std::to_string(label_capacity));
  }
  std::copy_n(row->data(), length, m.staged_labels.data() + size_t{j} * label_capacity);
  m.label_lengths[j] = length;
  return Status::Ok();
}

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
  sample_ids_ = other.sample_ids_;
  pad_offsets_ = other.pad_offsets_;
  content_sizes_ = other.content_sizes_;
  resume_state_ = other.resume_state_;
  return *this;
}

Batch::~Batch() { Release(); }

void Batch::Release() {
  if (core_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(core_->mu);
    core_->free_buffers.push_back(buffer_);
    --core_->held;
  }
  core_->work_cv.notify_all();
  core_.reset();
  buffer_ = -1;
}

// ---- Loader ----

namespace {

Status ValidateOptions(const LoaderOptions& o) {
  DOCFEED_RETURN_IF_ERROR(ValidateDonutConfig(o.donut));
  if (o.batch_size == 0) return InvalidArgumentError("batch_size must be at least 1");
  if (o.prefetch < 1) return InvalidArgumentError("prefetch must be at least 1");
  if (o.max_held < 1) return InvalidArgumentError("max_held must be at least 1");
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

// Checks that a preprocessed dataset holds the stage `donut` asks for.
Status CheckPreprocessing(const Manifest& m, const DonutConfig& donut, const std::string& dir) {
  const PreprocessInfo& p = m.preprocess;
  if (p.preset.empty()) return Status::Ok();
  if (p.preset != kPreprocessDonut) {
    return FailedPreconditionError(dir + " holds pages preprocessed by \"" + p.preset +
                                   "\", which this loader does not know");
  }
  if (p.height != donut.height || p.width != donut.width ||
      p.align_long_axis != donut.align_long_axis) {
    auto describe = [](int32_t h, int32_t w, bool align) {
      return std::to_string(h) + "x" + std::to_string(w) + (align ? " with" : " without") +
             " align_long_axis";
    };
    return FailedPreconditionError(
        dir + " holds pages resized at pack time for " +
        describe(p.height, p.width, p.align_long_axis) + ", but the loader was asked for " +
        describe(donut.height, donut.width, donut.align_long_axis) +
        "; resizing them again would not give the processor's pixels. Re-pack with "
        "--preprocess donut --size " +
        std::to_string(donut.height) + "x" + std::to_string(donut.width) +
        " (from the originals, or from --keep-original), or load at the packed size");
  }
  return Status::Ok();
}

// Finds the label column and the longest row the buffers must hold.
Status SetUpLabels(LoaderCore& core) {
  const Manifest& m = core.dataset->manifest();
  const LoaderOptions& o = core.options;
  if (o.label_column == "-") return Status::Ok();
  const std::string name = o.label_column.empty() ? m.label_column : o.label_column;
  if (name.empty()) return Status::Ok();
  for (size_t i = 0; i < m.columns.size(); ++i) {
    if (m.columns[i].name == name) core.label_column = static_cast<int>(i);
  }
  if (core.label_column < 0) {
    return InvalidArgumentError(core.dataset->dir() + " has no column \"" + name + "\"");
  }
  if (m.columns[static_cast<size_t>(core.label_column)].type != ColumnType::kInt64List) {
    // The dataset's own label column may be text (ground truth packed without a tokenizer):
    // then there are no token labels to batch. A column the caller named must be token ids.
    if (o.label_column.empty()) {
      core.label_column = -1;
      return Status::Ok();
    }
    return InvalidArgumentError(core.dataset->dir() + ": label column \"" + name +
                                "\" is not a list of int64 (token ids)");
  }
  if (o.label_length > 0) {
    core.label_capacity = o.label_length;
    return Status::Ok();
  }
  if (name != m.label_column) {
    return InvalidArgumentError("label column \"" + name +
                                "\" has no lengths in the index; give label_length");
  }
  // The index records every row's length, so the longest is known without reading a sample.
  for (uint64_t id = 0; id < core.dataset->size(); ++id) {
    core.label_capacity = std::max(core.label_capacity, core.dataset->record(id).label_length);
  }
  return Status::Ok();
}

Status AllocateBuffers(LoaderCore& core) {
  const LoaderOptions& o = core.options;
  const size_t count = static_cast<size_t>(o.prefetch) + static_cast<size_t>(o.max_held);
  core.buffers.resize(count);
  for (size_t i = 0; i < count; ++i) {
    BufferMemory& b = core.buffers[i];
    if (o.allocator.allocate) {
      b.pixels = o.allocator.allocate(core.batch_pixel_bytes);
    } else {
      // aligned_alloc wants a size that is a multiple of the alignment.
      const size_t bytes = (core.batch_pixel_bytes + 63) / 64 * 64;
      b.pixels = std::aligned_alloc(64, bytes);
    }
    if (b.pixels == nullptr) {
      return ResourceExhaustedError("cannot allocate batch buffer " + std::to_string(i) + " (" +
                                    std::to_string(core.batch_pixel_bytes) + " bytes)");
    }
    const size_t bs = o.batch_size;
    b.staged_labels.resize(bs * core.label_capacity);
    b.label_lengths.resize(bs);
    b.labels.resize(bs * core.label_capacity);
    b.sample_ids.resize(bs);
    b.pad_offsets.resize(2 * bs);
    b.content_sizes.resize(2 * bs);
    core.free_buffers.push_back(static_cast<int>(count - 1 - i));
  }
  return Status::Ok();
}

// The normalization table of the float outputs: each of mean/std from the options if set, else
// from the manifest if it records one (migrated datasets), else the preset's (0.5 / 0.5).
Status SetUpNormalization(LoaderCore& core) {
  const LoaderOptions& o = core.options;
  const std::optional<NormalizationInfo>& stored = core.dataset->manifest().normalization;
  DonutConfig config = o.donut;
  if (stored) {
    config.mean = stored->mean;
    config.std = stored->std;
  }
  if (o.image_mean) config.mean = *o.image_mean;
  if (o.image_std) config.std = *o.image_std;
  DOCFEED_ASSIGN_OR_RETURN(core.table, MakeNormalizeTable(config));
  core.image_mean = config.mean;
  core.image_std = config.std;
  return Status::Ok();
}

Result<std::shared_ptr<const EpochOrder>> MakeOrder(const LoaderCore& core, uint64_t epoch,
                                                    uint64_t position) {
  const LoaderOptions& o = core.options;
  EpochOrderOptions eo;
  eo.num_samples = core.dataset->size();
  eo.seed = o.seed;
  eo.epoch = epoch;
  eo.shuffle = o.shuffle;
  eo.batch_size = o.batch_size;
  eo.rank = o.rank;
  eo.world_size = o.world_size;
  eo.remainder = o.remainder;
  eo.start = position;
  DOCFEED_ASSIGN_OR_RETURN(EpochOrder order, EpochOrder::Create(eo));
  return std::make_shared<const EpochOrder>(std::move(order));
}

}  // namespace

Loader::Loader(std::shared_ptr<LoaderCore> core) : core_(std::move(core)) {}

Result<std::unique_ptr<Loader>> Loader::Create(const LoaderOptions& options) {
  DOCFEED_RETURN_IF_ERROR(ValidateOptions(options));
  auto core = std::make_shared<LoaderCore>();
  core->options = options;
  DOCFEED_ASSIGN_OR_RETURN(core->dataset, Dataset::Open(options.path, options.env));
  const Manifest& manifest = core->dataset->manifest();
  DOCFEED_RETURN_IF_ERROR(CheckPreprocessing(manifest, options.donut, options.path));
  core->preprocessed = !manifest.preprocess.preset.empty();
  DOCFEED_RETURN_IF_ERROR(SetUpNormalization(*core));
  DOCFEED_RETURN_IF_ERROR(SetUpLabels(*core));
  core->sample_pixel_bytes = static_cast<size_t>(options.donut.height) *
                             static_cast<size_t>(options.donut.width) * 3 *
                             DTypeSize(options.dtype);
  core->batch_pixel_bytes = core->sample_pixel_bytes * options.batch_size;
  DOCFEED_RETURN_IF_ERROR(AllocateBuffers(*core));
  DOCFEED_ASSIGN_OR_RETURN(core->order, MakeOrder(*core, 0, 0));
  DOCFEED_ASSIGN_OR_RETURN(core->ahead, MakeOrder(*core, 1, 0));
  core->last_state = {options.seed, 0, 0};
  int threads = options.num_threads;
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 0; i < threads; ++i) core->workers.emplace_back(WorkerLoop, core.get());
  return std::unique_ptr<Loader>(new Loader(std::move(core)));
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(core_->mu);
    core_->stopping = true;
  }
  core_->work_cv.notify_all();
  for (std::thread& t : core_->workers) t.join();
}

const LoaderOptions& Loader::options() const { return core_->options; }
uint64_t Loader::num_samples() const { return core_->dataset->size(); }
bool Loader::preprocessed() const { return core_->preprocessed; }
const std::array<double, 3>& Loader::image_mean() const { return core_->image_mean; }
const std::array<double, 3>& Loader::image_std() const { return core_->image_std; }
size_t Loader::batch_pixel_bytes() const { return core_->batch_pixel_bytes; }

uint64_t Loader::num_batches() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return core_->order->num_batches();
}

LoaderState Loader::state() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return core_->last_state;
}

Status Loader::StartEpoch(uint64_t epoch, uint64_t position) {
  LoaderCore& c = *core_;
  std::shared_ptr<const EpochOrder> order;
  {
    // Nothing handed out yet and the same start: keep what the workers prefetched.
    std::lock_guard<std::mutex> lock(c.mu);
    const EpochOrderOptions& cur = c.order->options();
    if (!c.delivered_any && cur.epoch == epoch && cur.start == position) return Status::Ok();
    // The epoch the workers looked ahead into: keep its prefetched batches.
    const EpochOrderOptions& next = c.ahead->options();
    if (next.epoch == epoch && next.start == position) order = c.ahead;
  }
  if (order == nullptr) {
    DOCFEED_ASSIGN_OR_RETURN(order, MakeOrder(c, epoch, position));
  }
  DOCFEED_ASSIGN_OR_RETURN(std::shared_ptr<const EpochOrder> ahead, MakeOrder(c, epoch + 1, 0));
  std::unique_lock<std::mutex> lock(c.mu);
  // Stop new claims and wait for the workers to leave the slots they are writing, so no buffer
  // goes back to the pool while a worker still writes into it.
  c.paused = true;
  c.idle_cv.wait(lock, [&] { return c.active == 0; });
  std::deque<InFlight> kept;
  for (InFlight& b : c.in_flight) {
    if (b.order == order) {
      kept.push_back(std::move(b));
    } else {
      c.free_buffers.push_back(b.buffer);
    }
  }
  c.next_to_start = order == c.ahead ? c.ahead_next_to_start : 0;
  c.in_flight = std::move(kept);
  c.order = std::move(order);
  c.ahead = std::move(ahead);
  c.ahead_next_to_start = 0;
  ++c.generation;
  c.next_to_deliver = 0;
  c.delivered_any = false;
  c.last_state = {c.options.seed, epoch, position};
  c.paused = false;
  lock.unlock();
  c.work_cv.notify_all();
  return Status::Ok();
}

Status Loader::Restore(const LoaderState& state) {
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
  return StartEpoch(state.epoch, state.position);
}

Result<Batch> Loader::Next() {
  LoaderCore& c = *core_;
  std::unique_lock<std::mutex> lock(c.mu);
  if (c.next_to_deliver >= c.order->num_batches()) return Batch();
  for (const InFlight& b : c.in_flight) c.ready_depth_sum += b.remaining == 0 ? 1 : 0;
  const Clock::time_point start = Clock::now();
  auto front_ready = [&] {
    return !c.in_flight.empty() && c.in_flight.front().order == c.order &&
           c.in_flight.front().k == c.next_to_deliver && c.in_flight.front().remaining == 0;
  };
  while (!front_ready()) {
    if (c.in_flight.empty() && c.held == static_cast<int>(c.buffers.size())) {
      return ResourceExhaustedError(
          "every batch buffer (" + std::to_string(c.buffers.size()) +
          ") is held by the consumer; release a batch before asking for the next, or raise "
          "max_held");
    }
    c.ready_cv.wait(lock);
  }
  c.consumer_wait.Add(NanosSince(start));
  InFlight done = std::move(c.in_flight.front());
  c.in_flight.pop_front();
  ++c.next_to_deliver;
  c.delivered_any = true;
  c.last_state = {c.options.seed, c.order->options().epoch, c.order->PositionAfter(done.k)};
  if (!done.error.ok()) {
    c.free_buffers.push_back(done.buffer);
    lock.unlock();
    c.work_cv.notify_all();
    return done.error;
  }
  ++c.held;
  c.batches.fetch_add(1, std::memory_order_relaxed);
  BufferMemory& m = c.buffers[static_cast<size_t>(done.buffer)];
  Batch batch;
  batch.core_ = core_;
  batch.buffer_ = done.buffer;
  batch.size_ = done.size;
  batch.epoch_ = c.order->options().epoch;
  batch.index_ = done.k;
  batch.pixels_ = m.pixels;
  batch.pixel_bytes_ = c.sample_pixel_bytes * done.size;
  batch.labels_ = c.label_column >= 0 ? m.labels.data() : nullptr;
  batch.label_length_ = c.label_column >= 0 ? m.label_length : 0;
  batch.sample_ids_ = m.sample_ids.data();
  batch.pad_offsets_ = m.pad_offsets.data();
  batch.content_sizes_ = m.content_sizes.data();
  batch.resume_state_ = c.last_state;
  lock.unlock();
  c.work_cv.notify_all();
  return batch;
}

LoaderStats Loader::stats() const {
  const LoaderCore& c = *core_;
  LoaderStats s;
  s.read = c.read.Load();
  s.decode = c.decode.Load();
  s.resize = c.resize.Load();
  s.decode_resize = c.decode_resize.Load();
  s.pad_normalize = c.pad_normalize.Load();
  s.buffer_wait = c.buffer_wait.Load();
  s.consumer_wait = c.consumer_wait.Load();
  s.batches = c.batches.load(std::memory_order_relaxed);
  s.samples = c.samples.load(std::memory_order_relaxed);
  s.stored_bytes = c.stored_bytes.load(std::memory_order_relaxed);
  s.bad_samples = c.bad_samples.load(std::memory_order_relaxed);
  s.pool_buffers = c.buffers.size();
  s.pool_bytes = c.buffers.size() * c.batch_pixel_bytes;
  std::lock_guard<std::mutex> lock(c.mu);
  s.bad_sample_errors = c.bad_errors;
  s.ready_depth_sum = c.ready_depth_sum;
  return s;
}

}  // namespace docfeed::internal
