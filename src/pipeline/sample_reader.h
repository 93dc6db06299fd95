// The loader's per-sample work: read a sample's stored bytes -> the preset (Prepare unless the
// dataset stores prepared pages, then Finish into the batch slot) -> its labels.
//
// Thread safety: Load() may run on any number of worker threads at once, each with its own
// WorkerScratch and a slot no other thread writes (buffer_pool.h). The reader itself is
// immutable after Create(); the dataset's reads are thread-safe (format/dataset.h).
#ifndef DOCFEED_PIPELINE_SAMPLE_READER_H_
#define DOCFEED_PIPELINE_SAMPLE_READER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "docfeed/status.h"
#include "format/dataset.h"
#include "imaging/normalize.h"
#include "pipeline/buffer_pool.h"
#include "pipeline/loader_stats.h"
#include "pipeline/range_prefetcher.h"
#include "preset/preset.h"

namespace docfeed::internal {

// Per-worker memory kept across samples: the prepared page of original-image datasets and the
// decompressed stored bytes (reused when large enough, so steady state allocates nothing).
struct WorkerScratch {
  Image prepared;
  ReadScratch read;
  std::vector<uint8_t> batch_bytes;  // a whole record batch, when a remote read is redone
};

struct SampleReaderOptions {
  uint64_t seed = 0;
  DType dtype = DType::kFloat32;
  OutputLayout layout = OutputLayout::kChw;
  // "" = the dataset's own label column when it holds token ids, "-" = none; else a column that
  // must be list<int64>.
  std::string label_column;
  uint32_t label_length = 0;  // 0: the longest row of the dataset (from its index)
  // list<int64> columns copied whole into SlotView::tokens (docfeed/loader.h TokenColumn), each
  // row at most token_capacity long.
  std::vector<std::string> token_columns;
  uint32_t token_capacity = 0;
  // Remote datasets (read through the prefetcher or a local cache): a sample whose read fails
  // with Corruption or IOError is read once more from its whole record batch, dropped from the
  // cache first, before it counts as bad.
  bool reread_damaged = false;
};

class SampleReader {
 public:
  // Takes the opened dataset and the preset. Checks a preprocessed dataset against the preset
  // (FailedPrecondition) and finds the label column (InvalidArgument naming it).
  static Result<std::unique_ptr<SampleReader>> Create(std::unique_ptr<Dataset> dataset,
                                                      std::unique_ptr<const Preset> preset,
                                                      const SampleReaderOptions& options,
                                                      StatsRecorder* stats);

  const Dataset& dataset() const { return *dataset_; }
  const Preset& preset() const { return *preset_; }
  bool preprocessed() const { return preprocessed_; }
  bool has_labels() const { return label_column_ >= 0; }
  // Whether a sample's column values are read (labels or token columns).
  bool reads_values() const { return has_labels() || !token_columns_.empty(); }
  // The longest label row a slot holds.
  uint32_t label_capacity() const { return label_capacity_; }
  // Bytes of one slot: the preset's output; for a variable-size preset the largest any sample of
  // this dataset can give (its index says each stored image's size), at most SampleBytes.
  size_t sample_pixel_bytes() const { return slot_bytes_; }
  // A variable-size preset's output for sample `id` as its index record predicts it (exact for
  // pages the preset stored, and for originals whose decode agrees with the index), at most
  // sample_pixel_bytes(): what the loader reserves for it in a batch.
  size_t PredictedBytes(uint64_t id) const;

  // Writes sample `id` (of `epoch`, for the per-epoch randomness) into `slot`. A variable-size
  // output larger than slot.pixel_capacity (a replacement, a missed prediction) goes to
  // slot.spill instead; slot.placement records its size and where it went. Errors name the
  // dataset and the sample. With a `prefetcher`, the sample's bytes come from it when it planned
  // them (its fetch's or checksum's error is the sample's), else from the file.
  Status Load(uint64_t id, uint64_t epoch, const SlotView& slot, WorkerScratch& scratch,
              RangePrefetcher* prefetcher = nullptr) const;

 private:
  SampleReader() = default;
  Status SetUpLabels();
  Status SetUpTokenColumns();
  // The index of the manifest column `name`; InvalidArgument naming the dataset otherwise.
  Result<size_t> FindColumn(const std::string& name) const;
  Status CopyTokens(uint64_t id, const std::vector<Value>& values, const SlotView& slot) const;
  Result<ImageView> Prepared(uint64_t id, const SampleBytes& sample, WorkerScratch& scratch) const;
  // A stored output (PreprocessInfo::patches_form) written to `out` by the preset.
  Result<Placement> FinishStoredOutput(uint64_t id, const SampleBytes& sample, void* out) const;
  // The slot's id, placement, labels and tokens, once its pixels are written.
  Status FillSlot(uint64_t id, const Placement& placed, const SampleBytes& sample,
                  const SlotView& slot) const;
  Status CopyLabels(uint64_t id, const std::vector<Value>& values, const SlotView& slot) const;
  std::string SampleName(uint64_t id) const;
  // Sample `id` read again from its whole record batch, fetched and checked against the
  // manifest's region checksum (read twice at most) before anything in it is parsed.
  Result<SampleBytes> RereadFromBatch(uint64_t id, WorkerScratch& scratch) const;

  std::unique_ptr<Dataset> dataset_;
  std::unique_ptr<const Preset> preset_;
  SampleReaderOptions options_;
  StatsRecorder* stats_ = nullptr;
  bool preprocessed_ = false;
  bool stored_output_ = false;  // the samples are the preset's output (Pix2Struct patches form)
  int label_column_ = -1;       // index into the manifest's columns; -1: no labels
  uint32_t label_capacity_ = 0;
  std::vector<size_t> token_columns_;  // indices into the manifest's columns
  size_t slot_bytes_ = 0;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_PIPELINE_SAMPLE_READER_H_
