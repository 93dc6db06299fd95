// docfeed's loader: batches of model inputs (Donut pixel_values) and labels from a docfeed
// dataset, for a training loop.
//
// Batches are produced by a pool of C++ worker threads into a fixed set of reusable batch
// buffers and handed out in sampler order.
//
// Two sources, one output. A dataset packed with `--preprocess donut` stores the resized stage
// (the preset's Prepare, docfeed/preprocess.h), so a sample costs a read, a decode of the stored
// container, the padding and the optional normalization. A dataset of original images runs the
// whole preset (decode, EXIF orientation, RGB conversion, resize, thumbnail) on the fly. Both give
// the same bytes for the same seed, and both equal what transformers' DonutImageProcessor gives
// with the same padding offsets.
//
// Order and randomness are functions of (seed, epoch, position) only (the epoch order and the
// preset's SampleKey), never of thread timing: batch k of an epoch is the same for any
// num_threads, and random padding is fresh each epoch yet reproducible.
//
// Memory: (prefetch + max_held) batch buffers allocated at Create() and reused; no allocation per
// batch in steady state beyond the decoded bytes of original images (each worker decompresses
// stored bytes into its own reused buffers). A Batch holds its buffer until it is destroyed or
// Release()d; buffers (and the pool) outlive the Loader if batches do, so dropping the loader
// while holding batches is safe. Next() fails with ResourceExhausted when the consumer holds
// all prefetch + max_held buffers (not before: holding up to max_held batches leaves the
// workers `prefetch` buffers to fill ahead, holding more eats into them).
//
// Threads: every method may be called from any number of threads at once, except that the
// destructor must not overlap any other call. Concurrent Next() callers share one sequence:
// each batch goes to exactly one of them, in order, and once the last batch of the epoch is
// taken every Next() (waiting or new) returns the end-of-epoch Batch; nobody waits for a batch
// another caller took. StartEpoch()/Restore() concurrent with Next() switch the sequence a
// waiting Next() continues with. Close() from any thread wakes every blocked call: Next(),
// StartEpoch() and Restore() waiting or called later return Cancelled ("loader was closed"),
// and Close() returns once the workers are joined (each finishes its current sample first).
// A Batch may be released from any thread, also after Close() or the loader's destruction.
// Destroying the loader is Close() and then freeing it.
//
// fork(): the workers do not exist in a child process. There Next(), StartEpoch() and Restore()
// fail with FailedPrecondition (saying to create a new Loader in the child); destroying the
// loader or a Batch does not touch the parent's threads or locks (their memory is left
// allocated in the child). Other calls are not safe in the child.
//
// Errors are Status values (docfeed/status.h) whose messages name the dataset, file and sample.
#ifndef DOCFEED_LOADER_H_
#define DOCFEED_LOADER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "docfeed/env.h"
#include "docfeed/image.h"
#include "docfeed/preprocess.h"
#include "docfeed/status.h"

namespace docfeed {

// How the last, incomplete step of an epoch is handled.
enum class Remainder {
  kDrop,     // dropped: every batch is full and every rank has the same count
  kWrap,     // the last step is completed from the start of the permutation
  kPartial,  // the last batch is short (world_size 1 only, like DataLoader's drop_last=False)
};

// Parses "drop", "wrap", "partial" (InvalidArgument naming them otherwise), and back.
Result<Remainder> ParseRemainder(std::string_view name);
std::string_view RemainderName(Remainder remainder);

// Optional hook for where batch pixels live (e.g. page-locked memory for asynchronous copies to
// a GPU). Called only from Loader::Create() and from the destruction of the last owner of the
// pool (the loader or a batch), on any thread.
struct BufferAllocator {
  std::function<void*(size_t bytes)> allocate;  // returns 64-byte aligned memory or nullptr
  std::function<void(void* data, size_t bytes)> release;
};

// How a state saved by a run of W ranks with per-rank batch b is resumed by a loader of W' ranks
// with per-rank batch b' (an elastic resume; src/pipeline/README.md, "Elastic resume"). Positions
// are global, so every mode continues the same global order exactly where the saving run
// stopped; the mode says what the resuming run keeps.
enum class ElasticMode {
  kSame,         // W' = W and b' = b: nothing changed
  kGlobalBatch,  // W' x b' = W x b: the per-rank batch is rescaled, a step is as large as before
  kRankBatch,    // b' = b, W' != W: a step is now W' x b positions instead of W x b
};

// Parses "same", "global_batch", "rank_batch" (InvalidArgument naming them otherwise), and back.
Result<ElasticMode> ParseElasticMode(std::string_view name);
std::string_view ElasticModeName(ElasticMode mode);

// Everything needed to continue exactly where a run stopped. `position` counts positions of the
// epoch's global order already consumed by all ranks together; `position == num_samples` is an
// epoch that is over (also under kDrop: the dropped tail is gone for good).
struct LoaderState {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t position = 0;
  // The shape of the loader that reported the state: its world size and per-rank batch size.
  // 0 (a state written by hand, with only the three fields above) means unknown: Restore()
  // then takes it as this loader's own shape.
  uint32_t world_size = 0;
  uint32_t batch_size = 0;
  // How that loader resumed from the state it was last Restore()d from (kSame if never): the
  // record of the last elastic resume, kept for the loader's life. Not read by Restore().
  ElasticMode elastic = ElasticMode::kSame;
};

// The mode in which a loader of `world_size` ranks with per-rank `batch_size` resumes `saved`:
// `required` when it holds, or (nullopt) whichever of kSame / kGlobalBatch / kRankBatch holds.
// InvalidArgument naming world_size and batch_size (saved and new, and the batch_size that
// would work) when the required mode does not hold, or none does (W' x b' != W x b and
// b' != b), or a mode other than kSame is required of a state of unknown shape.
Result<ElasticMode> ResolveElasticMode(const LoaderState& saved, uint32_t world_size,
                                       uint32_t batch_size,
                                       std::optional<ElasticMode> required = std::nullopt);

struct StageTime {
  uint64_t count = 0;
  uint64_t nanos = 0;
};

// LoaderStats::remote: what reading a dataset by byte ranges ahead of the workers cost.
struct RemoteReadStats {
  bool prefetching = false;
  uint64_t requests = 0;       // range reads sent by the prefetcher (refetches included)
  uint64_t bytes_fetched = 0;  // bytes they returned
  uint64_t bytes_used = 0;     // bytes of the planned ranges the workers read samples from
  uint64_t coalesced = 0;      // samples whose range joined another sample's request
  uint64_t refetches = 0;      // ranges fetched again after a checksum mismatch
  // Samples read without the prefetcher: not in its plan, or held by the local cache.
  uint64_t direct_reads = 0;
  // Samples read once more, from their whole record batch checked against the manifest, after
  // reading them (the prefetched range and the small unchecked reads beside it) failed with
  // Corruption or IOError.
  uint64_t rereads = 0;
  // HTTP attempts repeated after transient failures, by the process-wide remote Env (all of
  // its users) since this loader was created.
  uint64_t retries = 0;
  // Of those attempts, the ones a server throttled (503 or 429), and the attempts that waited
  // for a slot under the lowered concurrency limit (src/remote/concurrency_limiter.h); the
  // same process-wide scope as `retries`.
  uint64_t throttled = 0;
  uint64_t throttle_waits = 0;
  StageTime fetch_wait;  // workers waiting for a sample's bytes to arrive
  // The most memory the prefetcher held at once: ranges fetched or in flight and buffers kept
  // for reuse (prefetch_bytes plus a sample per waiting worker at most).
  uint64_t peak_bytes = 0;
  // The local cache (LoaderOptions::cache_dir); all 0 without it.
  bool cached = false;
  uint64_t cache_reads = 0;          // samples the cache held when planned (read from it)
  uint64_t cache_hit_bytes = 0;      // bytes read from the cache
  uint64_t cache_fetched_bytes = 0;  // bytes read from the objects (whole blocks)
  uint64_t cache_stored_bytes = 0;   // of those, bytes stored in the cache
  uint64_t cache_bad_blocks = 0;     // cached blocks that failed their hash (fetched again)
  uint64_t cache_invalidated = 0;    // blocks dropped after a sample failed its checksum
  uint64_t cache_io_errors = 0;      // reads or writes of the cache's files that failed
  uint64_t cache_evicted_bytes = 0;  // removed to stay within cache_limit_bytes
};

// Sums over the loader's life, over all workers.
struct LoaderStats {
  StageTime read;           // reading the stored bytes (and decompressing Arrow bodies)
  StageTime decode;         // decoding the stored image
  StageTime resize;         // the preset's resize + thumbnail (original-image datasets only)
  StageTime decode_resize;  // decode and resize fused, band by band (originals needing no rotation)
  StageTime pad_normalize;  // padding, normalization and layout into the batch buffer
  StageTime buffer_wait;    // workers idle because every buffer was full or held
  StageTime consumer_wait;  // Next() waiting for its batch
  uint64_t batches = 0;
  uint64_t samples = 0;
  uint64_t stored_bytes = 0;  // stored image bytes read
  // Samples replaced under kSkip in the batches handed out, each (epoch, sample) once however
  // often it was read (look-ahead, restarts, two slots trying it as a replacement).
  uint64_t bad_samples = 0;
  std::vector<std::string> bad_sample_errors;  // the first few, with sample ids
  uint64_t ready_depth_sum = 0;                // batches already complete at each Next(), summed
  uint64_t pool_buffers = 0;
  uint64_t pool_bytes = 0;  // pixels of every buffer
  // Reading by the index ahead of the workers (remote datasets, LoaderOptions::range_prefetch);
  // all 0 without it.
  RemoteReadStats remote;
};

// Every field of `stats` as one JSON object (each stage as {"count": N, "nanos": N}); the one
// rendering `docfeed bench --json`, the Python module and `docfeed doctor` read.
std::string LoaderStatsJson(const LoaderStats& stats);

enum class BadSamplePolicy { kError, kSkip };

enum class RangePrefetch { kAuto, kOn, kOff };

// A list<int64> column batched beside the pixels, each row padded with `pad` (a chat dataset's
// input_ids with the tokenizer's pad id, attention_mask with 0, labels with -100).
struct TokenColumn {
  std::string name;
  int64_t pad = 0;
};

struct LoaderOptions {
  std::string path;  // a docfeed dataset directory, or its URL (s3://, http(s)://)
  // Opens and reads the dataset's files; null: EnvForPath(path) (docfeed/remote.h), the remote
  // Env for a URL, else Env::Default(). Must outlive the Loader.
  Env* env = nullptr;
  // The model preset and its parameters (docfeed/preprocess.h): for Donut the output
  // height/width, align_long_axis, rescale/normalize settings and the padding (random or
  // centred). For a preprocessed dataset the stored part must equal what it was packed with.
  PresetOptions preset;
  uint32_t batch_size = 8;
  bool shuffle = true;
  uint64_t seed = 0;
  // Pixels: kUint8 (raw padded pixels, for normalization on the GPU) or normalized floats.
  DType dtype = DType::kFloat32;
  // Per-channel (R, G, B) mean and std of the float outputs' normalization, as
  // DonutImageProcessor's image_mean / image_std: out = (float32(v * rescale_factor) - mean) / std.
  // Each unset one is the dataset's (the manifest's "normalization", which a migrated float
  // dataset records so that the loader gives its original tensors back), else the preset's
  // (Donut's 0.5 / 0.5, Nougat's ImageNet values). Loader::image_mean()/image_std() report the
  // values in use; a kUint8 consumer normalizing elsewhere (the GPU stage) should use those.
  std::optional<std::array<double, 3>> image_mean;
  std::optional<std::array<double, 3>> image_std;
  OutputLayout layout = OutputLayout::kChw;
  uint32_t rank = 0;
  uint32_t world_size = 1;
  Remainder remainder = Remainder::kDrop;
  int num_threads = 0;  // 0: one per hardware thread
  int prefetch = 4;     // batches the workers may fill ahead of the consumer
  // Batches the consumer is expected to hold at once. The pool has prefetch + max_held buffers;
  // Next() fails (ResourceExhausted) only when the consumer holds all of them, that is when it
  // asks for a batch while holding prefetch + max_held.
  int max_held = 2;
  // Labels: `label_column` ("" = the dataset's own label column when it holds token ids, "-" =
  // none) must be a list of int64. Each row is copied without its trailing -100s and padded with
  // -100 to the batch's longest (label_length 0) or to label_length; a longer row is an error
  // naming the sample.
  std::string label_column;
  uint32_t label_length = 0;
  // Token columns (docfeed.pack(processor=...)'s input_ids, attention_mask and labels), batched
  // as Batch::tokens(k): each must be list<int64>; each row is copied whole (trailing -100s
  // included) and padded with its column's `pad` to the batch's longest row over all token
  // columns. token_capacity (> 0 with token columns) is the longest row a sample may have; a
  // longer row is an error naming the sample. Independent of the label column above.
  std::vector<TokenColumn> token_columns;
  uint32_t token_capacity = 0;
  BadSamplePolicy on_error = BadSamplePolicy::kError;
  // With kSkip: how many replaced samples (LoaderStats::bad_samples) the loader tolerates in
  // its lifetime; Next() fails with ResourceExhausted on the batch that exceeds it.
  uint64_t max_bad_samples = 100;
  BufferAllocator allocator;  // empty: the loader allocates
  // Reading by the index ahead of the workers (src/pipeline/range_prefetcher.h): byte-range
  // reads of the samples in the order the workers will need them, neighbours coalesced, each
  // range checked against its XXH3 on arrival. kAuto: for URLs (s3://, http(s)://) only; local
  // datasets are read where they lie.
  RangePrefetch range_prefetch = RangePrefetch::kAuto;
  uint64_t prefetch_bytes = 32ull << 20;  // fetched (or in flight) and not yet used, at most
  int prefetch_requests = 8;              // range requests in flight, at most
  // A local copy of a remote dataset's data files (src/remote/disk_cache.h): what is read is
  // kept in cache_dir, shared by every process that names the same directory (the ranks of a
  // node, the next run), each block checked against its hash when first read. "": none.
  // Ignored for a local dataset and when `env` is given. cache_limit_bytes: the disk it may take
  // (0: no limit); past it, objects no process has open are removed, least recently opened
  // first, and when only open ones remain, what does not fit is read remotely each time.
  std::string cache_dir;
  uint64_t cache_limit_bytes = 0;
};

class Loader;
namespace internal {
struct LoaderCore;
}  // namespace internal

// One batch, viewing a pool buffer. Movable; the buffer returns to the pool on Release() or
// destruction. An invalid (default) Batch marks the end of the epoch.
class Batch {
 public:
  Batch() = default;
  Batch(Batch&& other) noexcept;
  Batch& operator=(Batch&& other) noexcept;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch();

  bool valid() const { return core_ != nullptr; }
  void Release();

  uint32_t size() const { return size_; }  // samples in this batch
  uint64_t epoch() const { return epoch_; }
  uint64_t index() const { return index_; }  // this rank's batch number in the epoch
  // size x 3 x height x width (kChw) or size x height x width x 3 (kHwc) elements of dtype;
  // for Qwen2-VL the pages' outputs one after the other (sum of their patches x patch values),
  // for Idefics3 each page's tiles then zero tiles up to the batch's most (size x most tiles x
  // 3 x S x S, as the processor's pixel_values); each page's size given by content_sizes().
  void* pixels() const { return pixels_; }
  size_t pixel_bytes() const { return pixel_bytes_; }
  // size x label_length() int64, -100 padded; label_length() is 0 without a label column.
  const int64_t* labels() const { return labels_; }
  uint32_t label_length() const { return label_length_; }
  // Token column k (LoaderOptions::token_columns' order, k < num_token_columns()): size x
  // token_length() int64, each row padded with the column's pad value.
  const int64_t* tokens(size_t k) const { return tokens_ + k * token_block_; }
  size_t num_token_columns() const { return num_token_columns_; }
  uint32_t token_length() const { return token_length_; }
  const int64_t* sample_ids() const { return sample_ids_; }        // size
  const int32_t* pad_offsets() const { return pad_offsets_; }      // size x (top, left)
  const int32_t* content_sizes() const { return content_sizes_; }  // size x (height, width)
  // Restoring this state continues with the batch after this one.
  const LoaderState& resume_state() const { return resume_state_; }
  // Index of the pool buffer (stable for the loader's life): lets a consumer keep per-buffer
  // resources such as a CUDA event.
  int buffer_index() const { return buffer_; }

 private:
  friend class Loader;
  std::shared_ptr<internal::LoaderCore> core_;
  int buffer_ = -1;
  uint32_t size_ = 0;
  uint64_t epoch_ = 0;
  uint64_t index_ = 0;
  void* pixels_ = nullptr;
  size_t pixel_bytes_ = 0;
  const int64_t* labels_ = nullptr;
  uint32_t label_length_ = 0;
  const int64_t* tokens_ = nullptr;
  size_t token_block_ = 0;  // elements between two token columns' blocks
  size_t num_token_columns_ = 0;
  uint32_t token_length_ = 0;
  const int64_t* sample_ids_ = nullptr;
  const int32_t* pad_offsets_ = nullptr;
  const int32_t* content_sizes_ = nullptr;
  LoaderState resume_state_;
};

class Loader {
 public:
  // Opens the dataset, checks the options against it, allocates the pool and starts epoch 0 at
  // position 0 (workers begin filling buffers at once).
  // Errors: NotFound / Corruption from opening the dataset; InvalidArgument for bad options;
  // FailedPrecondition when a preprocessed dataset's size or alignment differs from `donut`.
  static Result<std::unique_ptr<Loader>> Create(const LoaderOptions& options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  const LoaderOptions& options() const;
  uint64_t num_samples() const;
  // True when the dataset stores the resized stage (packed with --preprocess donut).
  bool preprocessed() const;
  // The normalization in use for float outputs (LoaderOptions::image_mean/image_std resolved).
  const std::array<double, 3>& image_mean() const;
  const std::array<double, 3>& image_std() const;
  // Batches this rank gets in the current epoch from the current start position.
  uint64_t num_batches() const;
  // Bytes of one batch's pixels (for a variable-size preset, the most a batch can take).
  size_t batch_pixel_bytes() const;

  // Drops prefetched work and starts `epoch` at global position `position`. Errors: Cancelled
  // after Close(), FailedPrecondition in a forked child.
  Status StartEpoch(uint64_t epoch, uint64_t position = 0);
  // StartEpoch(state.epoch, state.position) after checking state.seed, the position and the
  // shape (ResolveElasticMode(state, world_size, batch_size, elastic)); the mode found is
  // reported in state().elastic and every batch's resume_state() from then on. Errors:
  // InvalidArgument naming the field (seed, position, world_size / batch_size), plus those of
  // StartEpoch.
  Status Restore(const LoaderState& state, std::optional<ElasticMode> elastic = std::nullopt);
  // The state after the last batch Next() returned (or the start of the current epoch).
  LoaderState state() const;

  // The next batch in sampler order; an invalid Batch at the end of the epoch. Errors: the
  // first failed sample of this batch (kError) naming its id and file, the bad-sample budget
  // exhausted (kSkip), ResourceExhausted when every buffer is held by the consumer, Cancelled
  // after Close(), FailedPrecondition in a forked child.
  Result<Batch> Next();

  // Stops the loader: wakes and fails every blocked or later Next()/StartEpoch()/Restore()
  // (Cancelled), then joins the workers. Idempotent, any thread, concurrent with any call but
  // the destructor. Batches stay valid. In a forked child it does nothing.
  void Close();

  LoaderStats stats() const;

 private:
  explicit Loader(std::shared_ptr<internal::LoaderCore> core);
  std::shared_ptr<internal::LoaderCore> core_;
};

}  // namespace docfeed

#endif  // DOCFEED_LOADER_H_
