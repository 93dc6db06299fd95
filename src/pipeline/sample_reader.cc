#include "pipeline/sample_reader.h"

#include <algorithm>
#include <utility>

#include "base/clock.h"
#include "base/hash.h"
#include "codec/codec.h"
#include "format/manifest.h"
#include "format/value.h"

namespace docfeed::internal {

Result<std::unique_ptr<SampleReader>> SampleReader::Create(std::unique_ptr<Dataset> dataset,
                                                           std::unique_ptr<const Preset> preset,
                                                           const SampleReaderOptions& options,
                                                           StatsRecorder* stats) {
  std::unique_ptr<SampleReader> r(new SampleReader());
  r->dataset_ = std::move(dataset);
  r->preset_ = std::move(preset);
  r->options_ = options;
  r->stats_ = stats;
  const PreprocessInfo& stored = r->dataset_->manifest().preprocess;
  r->preprocessed_ = stored.preprocessed();
  if (r->preprocessed_) {
    DOCFEED_RETURN_IF_ERROR(r->preset_->CheckStored(stored, r->dataset_->dir()));
  }
  r->stored_output_ = stored.patches_form();
  DOCFEED_RETURN_IF_ERROR(r->SetUpLabels());
  DOCFEED_RETURN_IF_ERROR(r->SetUpTokenColumns());
  const Preset& p = *r->preset_;
  r->slot_bytes_ = p.SampleBytes(options.dtype);
  if (p.variable_size()) {
    // Sized for this dataset's largest page: with Qwen2-VL's default max_pixels the settings
    // allow 65,536 patches (308 MB in float32) where a scanned page needs a few thousand.
    size_t largest = 0;
    for (uint64_t id = 0; id < r->dataset_->size(); ++id) {
      largest = std::max(largest, r->PredictedBytes(id));
    }
    r->slot_bytes_ = std::max<size_t>(largest, 1);
  }
  return r;
}

size_t SampleReader::PredictedBytes(uint64_t id) const {
  const IndexRecord rec = dataset_->record(id);
  const size_t bytes =
      preset_->PredictOutputBytes(static_cast<int32_t>(rec.width), static_cast<int32_t>(rec.height),
                                  preprocessed_, options_.dtype);
  return std::min(bytes, slot_bytes_);
}

std::string SampleReader::SampleName(uint64_t id) const {
  return dataset_->dir() + ": sample " + std::to_string(id);
}

Result<size_t> SampleReader::FindColumn(const std::string& name) const {
  const std::vector<ColumnSpec>& columns = dataset_->manifest().columns;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == name) return i;
  }
  return InvalidArgumentError(dataset_->dir() + " has no column \"" + name + "\"");
}

// Finds the label column and the longest row the buffers must hold.
Status SampleReader::SetUpLabels() {
  const Manifest& m = dataset_->manifest();
  const SampleReaderOptions& o = options_;
  if (o.label_column == "-") return Status::Ok();
  const std::string name = o.label_column.empty() ? m.label_column : o.label_column;
  if (name.empty()) return Status::Ok();
  DOCFEED_ASSIGN_OR_RETURN(const size_t column, FindColumn(name));
  label_column_ = static_cast<int>(column);
  if (m.columns[static_cast<size_t>(label_column_)].type != ColumnType::kInt64List) {
    // The dataset's own label column may be text (ground truth packed without a tokenizer):
    // then there are no token labels to batch. A column the caller named must be token ids.
    if (o.label_column.empty()) {
      label_column_ = -1;
      return Status::Ok();
    }
    return InvalidArgumentError(dataset_->dir() + ": label column \"" + name +
                                "\" is not a list of int64 (token ids)");
  }
  if (o.label_length > 0) {
    label_capacity_ = o.label_length;
    return Status::Ok();
  }
  if (name != m.label_column) {
    return InvalidArgumentError("label column \"" + name +
                                "\" has no lengths in the index; give label_length");
  }
  // The index records every row's length, so the longest is known without reading a sample.
  for (uint64_t id = 0; id < dataset_->size(); ++id) {
    label_capacity_ = std::max(label_capacity_, dataset_->record(id).label_length);
  }
  return Status::Ok();
}

// Finds the token columns, each of which must be list<int64>.
Status SampleReader::SetUpTokenColumns() {
  const Manifest& m = dataset_->manifest();
  const SampleReaderOptions& o = options_;
  if (o.token_columns.empty()) return Status::Ok();
  if (o.token_capacity == 0) return InvalidArgumentError("token_capacity must be > 0");
  for (const std::string& name : o.token_columns) {
    DOCFEED_ASSIGN_OR_RETURN(const size_t i, FindColumn(name));
    if (m.columns[i].type != ColumnType::kInt64List) {
      return InvalidArgumentError(dataset_->dir() + ": token column \"" + name +
                                  "\" is not a list of int64");
    }
    token_columns_.push_back(i);
  }
  return Status::Ok();
}

// The prepared page of sample `id`: the stored one (preprocessed datasets; PPM pages are viewed
// in place), or the preset's Prepare of the stored original, with the EXIF orientation the
// packer recorded.
Result<ImageView> SampleReader::Prepared(uint64_t id, const SampleBytes& sample,
                                         WorkerScratch& scratch) const {
  const IndexRecord record = dataset_->record(id);
  if (preprocessed_) {
    const Clock::time_point start = Clock::now();
    // Preprocessing stores PGM/PPM pages (docs/format.md, section 10); a page in another format
    // in a dataset that claims preprocessing is an original that was never resized.
    if (record.codec != static_cast<uint8_t>(StoredCodec::kPpm)) {
      return CorruptionError(SampleName(id) +
                             ": the manifest says the pages were preprocessed, but this one is " +
                             std::string(StoredCodecName(static_cast<StoredCodec>(record.codec))) +
                             ", not the PPM/PGM that preprocessing stores");
    }
    Result<ImageView> v = ViewPpm(sample.image);
    if (!v.ok()) return v.status().WithContext(SampleName(id));
    const ImageView view = *v;
    stats_->decode.Add(NanosSince(start));
    // A Donut or Nougat page larger than the size the manifest says it was resized to was
    // never preprocessed (a false claim would be padded, or cropped, without the resize). A
    // Qwen2-VL page's size is checked by Finish (whole merged patches, at most the settings'
    // largest), an Idefics3 page's too (a tile grid and its global-image band, Idefics3GridOf).
    const PreprocessInfo& stored = dataset_->manifest().preprocess;
    if ((stored.preset == kPreprocessDonut || stored.preset == kPreprocessNougat) &&
        (view.width > stored.width || view.height > stored.height)) {
      return CorruptionError(SampleName(id) + ": stored page is " + std::to_string(view.width) +
                             "x" + std::to_string(view.height) + ", larger than the " +
                             std::to_string(stored.width) + "x" + std::to_string(stored.height) +
                             " the manifest says it was preprocessed to");
    }
    return view;
  }
  PrepareRequest request;
  request.orientation = record.flags & 0xF;
  PrepareTimes times;
  const Status st = preset_->Prepare(sample.image, request, &scratch.prepared, &times);
  if (!st.ok()) return st.WithContext(SampleName(id));
  if (times.decode_resize > 0) stats_->decode_resize.Add(times.decode_resize);
  if (times.decode > 0) stats_->decode.Add(times.decode);
  if (times.resize > 0) stats_->resize.Add(times.resize);
  return ViewOf(scratch.prepared);
}

Status SampleReader::Load(uint64_t id, uint64_t epoch, const SlotView& slot, WorkerScratch& scratch,
                          RangePrefetcher* prefetcher) const {
  Clock::time_point start = Clock::now();
  std::unique_ptr<PrefetchedSample> fetched;
  if (prefetcher != nullptr) {
    DOCFEED_ASSIGN_OR_RETURN(fetched, prefetcher->Take(id));
    if (fetched == nullptr) stats_->direct_reads.fetch_add(1, std::memory_order_relaxed);
  }
  // `sample` views scratch.read's buffers (compressed bodies) until this worker's next read, or
  // the fetched bytes, which ReadSample reads in place (not copied): so `fetched` is held,
  // and counted in the prefetcher's budget, until the sample is written.
  Result<SampleBytes> stored = dataset_->ReadSample(id, reads_values(), &scratch.read,
                                                    fetched ? &fetched->range() : nullptr);
  if ((prefetcher != nullptr || options_.reread_damaged) && !stored.ok() &&
      (stored.status().code() == StatusCode::kCorruption ||
       stored.status().code() == StatusCode::kIOError)) {
    // The prefetched range was checked on arrival, but the small reads beside it (a batch's
    // metadata and image offsets) were not: a remote read damaged or cut on the way (or kept so
    // in the cache). The sample is read once more from its whole record batch, checked against
    // the manifest's checksum first (twice at most), before it counts as bad.
    stats_->reread_samples.fetch_add(1, std::memory_order_relaxed);
    stored = RereadFromBatch(id, scratch);
  }
  if (!stored.ok()) return stored.status();
  const SampleBytes& sample = *stored;
  stats_->read.Add(NanosSince(start));
  stats_->stored_bytes.fetch_add(sample.image.size(), std::memory_order_relaxed);

  if (stored_output_) {
    // The stored form is the output itself (Pix2Struct's patches form; CheckStored matched its
    // settings): copied into the fixed-size slot, no Prepare and no Finish.
    start = Clock::now();
    DOCFEED_ASSIGN_OR_RETURN(const Placement placed, FinishStoredOutput(id, sample, slot.pixels));
    stats_->pad_normalize.Add(NanosSince(start));
    return FillSlot(id, placed, sample, slot);
  }
  DOCFEED_ASSIGN_OR_RETURN(const ImageView view, Prepared(id, sample, scratch));
  // A variable-size output must fit the slot sized from the index: a page larger than its
  // record says (a damaged or forged index) is an error, never a write past the slot. One larger
  // than its region in the batch (a replacement for a bad sample, a missed prediction) is
  // written to the slot's spill buffer, which PackPixels copies into place.
  void* out = slot.pixels;
  size_t out_bytes = 0;
  if (preset_->variable_size()) {
    out_bytes = preset_->OutputBytesFor(view.height, view.width, options_.dtype);
    if (out_bytes > slot_bytes_) {
      return CorruptionError(SampleName(id) + ": page is " + std::to_string(view.width) + "x" +
                             std::to_string(view.height) +
                             ", larger than the index's size for it allows");
    }
    if (out_bytes > slot.pixel_capacity) {
      slot.spill->resize(out_bytes);
      out = slot.spill->data();
    }
  }
  start = Clock::now();
  Result<Placement> placed =
      preset_->Finish(view, {options_.seed, epoch, id}, options_.dtype, options_.layout, out);
  if (!placed.ok()) return placed.status().WithContext(SampleName(id));
  stats_->pad_normalize.Add(NanosSince(start));
  if (preset_->variable_size()) {
    slot.placement->bytes = out_bytes;
    slot.placement->spilled = out != slot.pixels;
  }

  return FillSlot(id, *placed, sample, slot);
}

Result<Placement> SampleReader::FinishStoredOutput(uint64_t id, const SampleBytes& sample,
                                                   void* out) const {
  const IndexRecord record = dataset_->record(id);
  if (record.codec != static_cast<uint8_t>(StoredCodec::kPfm)) {
    return CorruptionError(SampleName(id) +
                           ": the manifest says the samples hold the preset's stored output "
                           "(float PFM), but this one is " +
                           std::string(StoredCodecName(static_cast<StoredCodec>(record.codec))));
  }
  Result<Placement> placed = preset_->FinishStoredOutput(sample.image, options_.dtype, out);
  if (!placed.ok()) return placed.status().WithContext(SampleName(id));
  return *placed;
}

Status SampleReader::FillSlot(uint64_t id, const Placement& placed, const SampleBytes& sample,
                              const SlotView& slot) const {
  *slot.sample_id = static_cast<int64_t>(id);
  slot.pad_offset[0] = placed.top;
  slot.pad_offset[1] = placed.left;
  slot.content_size[0] = placed.height;
  slot.content_size[1] = placed.width;
  if (has_labels()) DOCFEED_RETURN_IF_ERROR(CopyLabels(id, sample.labels, slot));
  if (!token_columns_.empty()) DOCFEED_RETURN_IF_ERROR(CopyTokens(id, sample.labels, slot));
  stats_->samples.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Result<SampleBytes> SampleReader::RereadFromBatch(uint64_t id, WorkerScratch& scratch) const {
  DOCFEED_ASSIGN_OR_RETURN(const SamplePlan plan, dataset_->PlanBatch(id));
  const RandomAccessFile& file = dataset_->data_file(plan.range.file);
  std::vector<uint8_t>& bytes = scratch.batch_bytes;
  bytes.resize(plan.range.length);
  Status read;
  for (int attempt = 0; attempt < 2; ++attempt) {
    // A cache's copy of the batch may be what failed: fetched again from the object.
    file.Invalidate(plan.range.offset, plan.range.length);
    read = file.ReadAt(plan.range.offset, bytes);
    if (read.ok() && Hash64(bytes) == plan.xxh3) {
      const FetchedRange fetched{plan.range.file, plan.range.offset, bytes, plan.range.offset,
                                 plan.range.length};
      return dataset_->ReadSample(id, reads_values(), &scratch.read, &fetched);
    }
  }
  if (!read.ok()) return read.WithContext(SampleName(id));
  return CorruptionError(SampleName(id) + ": " + file.path() + " (bytes " +
                         std::to_string(plan.range.offset) + "-" +
                         std::to_string(plan.range.end() - 1) +
                         "): the record batch read twice does not match the manifest's checksum");
}

Status SampleReader::CopyLabels(uint64_t id, const std::vector<Value>& values,
                                const SlotView& slot) const {
  const Value& value = values[static_cast<size_t>(label_column_)];
  const auto* row = std::get_if<std::vector<int64_t>>(&value);
  if (row == nullptr) {
    return CorruptionError(SampleName(id) + ": column \"" +
                           dataset_->manifest().columns[static_cast<size_t>(label_column_)].name +
                           "\" is null");
  }
  const uint32_t length = LabelLength(value);
  if (length > label_capacity_) {
    return InvalidArgumentError(SampleName(id) + ": " + std::to_string(length) +
                                " labels, more than label_length " +
                                std::to_string(label_capacity_));
  }
  std::copy_n(row->data(), length, slot.labels);
  *slot.label_length = length;
  return Status::Ok();
}

Status SampleReader::CopyTokens(uint64_t id, const std::vector<Value>& values,
                                const SlotView& slot) const {
  const uint32_t capacity = options_.token_capacity;
  for (size_t k = 0; k < token_columns_.size(); ++k) {
    const std::string& name = options_.token_columns[k];
    const auto* row = std::get_if<std::vector<int64_t>>(&values[token_columns_[k]]);
    if (row == nullptr)
      return CorruptionError(SampleName(id) + ": column \"" + name + "\" is null");
    if (row->size() > capacity) {
      return InvalidArgumentError(SampleName(id) + ": column \"" + name + "\" has " +
                                  std::to_string(row->size()) + " tokens, more than the " +
                                  std::to_string(capacity) + " the buffers hold (token_capacity)");
    }
    std::copy(row->begin(), row->end(), slot.tokens + k * capacity);
    slot.token_lengths[k] = static_cast<uint32_t>(row->size());
  }
  return Status::Ok();
}

}  // namespace docfeed::internal
