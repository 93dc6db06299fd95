#include "format/dataset.h"

#include <algorithm>
#include <cstring>

#include "base/hash.h"
#include "base/json.h"
#include "docfeed/remote.h"
#include "format/arrow/reader.h"
#include "format/row_values.h"

namespace docfeed::internal {
namespace {

Json ValueFeature(const char* dtype) { return {{"dtype", dtype}, {"_type", "Value"}}; }

Json ColumnFeature(ColumnType type) {
  switch (type) {
    case ColumnType::kString:
      return ValueFeature("string");
    case ColumnType::kInt64:
      return ValueFeature("int64");
    case ColumnType::kFloat64:
      return ValueFeature("float64");
    case ColumnType::kBool:
      return ValueFeature("bool");
    case ColumnType::kInt64List:
      return {{"feature", ValueFeature("int64")}, {"_type", "List"}};
    case ColumnType::kFloat64List:
      return {{"feature", ValueFeature("float64")}, {"_type", "List"}};
    case ColumnType::kStringList:
      return {{"feature", ValueFeature("string")}, {"_type", "List"}};
    case ColumnType::kArrow:
      break;  // the column's own feature (Features below)
  }
  return nullptr;
}

Json Features(const std::vector<ColumnSpec>& columns, bool keep_original) {
  Json features;
  features[kImageColumn] = {{"_type", "Image"}};
  for (const ColumnSpec& c : columns) {
    features[c.name] =
        c.type == ColumnType::kArrow ? Json::parse(c.feature) : ColumnFeature(c.type);
  }
  if (keep_original) features[kOriginalColumn] = {{"_type", "Image"}};
  return features;
}

arrow::Field ImageField(const char* name) {
  return arrow::MakeStruct(name, {arrow::MakeField("bytes", arrow::TypeId::kBinary),
                                  arrow::MakeField("path", arrow::TypeId::kString)});
}

// The schema the data files must have: same names and types as DatasetSchema().
Status CheckSchema(const arrow::Schema& actual, const arrow::Schema& expected,
                   const std::string& file) {
  if (actual.fields.size() != expected.fields.size()) {
    return CorruptionError(file + ": schema has " + std::to_string(actual.fields.size()) +
                           " columns, the manifest implies " +
                           std::to_string(expected.fields.size()));
  }
  for (size_t i = 0; i < actual.fields.size(); ++i) {
    const arrow::Field& a = actual.fields[i];
    const arrow::Field& e = expected.fields[i];
    if (a.name != e.name || !arrow::SameType(a, e)) {
      return CorruptionError(file + ": column " + std::to_string(i) + " is " + a.name + ": " +
                             arrow::TypeToString(a) + ", expected " + e.name + ": " +
                             arrow::TypeToString(e));
    }
  }
  return Status::Ok();
}

}  // namespace

arrow::Schema DatasetSchema(const std::vector<ColumnSpec>& columns, bool keep_original) {
  arrow::Schema schema;
  schema.fields.push_back(ImageField(kImageColumn));
  for (const ColumnSpec& c : columns) schema.fields.push_back(ColumnField(c));
  if (keep_original) schema.fields.push_back(ImageField(kOriginalColumn));
  Json hf = {{"info", {{"features", Features(columns, keep_original)}}}};
  schema.metadata.emplace_back("huggingface", hf.dump());
  return schema;
}

std::string FeaturesJson(const std::vector<ColumnSpec>& columns, bool keep_original) {
  return Features(columns, keep_original).dump();
}

Dataset::~Dataset() = default;

Result<std::unique_ptr<Dataset>> Dataset::Open(const std::string& dir, Env* env) {
  // A URL is read through the remote Env, a local path through Env::Default().
  if (env == nullptr) env = EnvForPath(dir);
  std::unique_ptr<Dataset> ds(new Dataset());
  ds->dir_ = dir;
  std::string manifest_path = JoinPath(dir, kManifestFileName);
  if (!env->PathExists(manifest_path)) {
    return NotFoundError(dir + " is not a docfeed dataset (no " + kManifestFileName + ")");
  }
  DOCFEED_ASSIGN_OR_RETURN(std::string text, env->ReadTextFile(manifest_path));
  DOCFEED_ASSIGN_OR_RETURN(ds->manifest_, DecodeManifest(text, manifest_path));
  // Read, not mapped: the index is hashed whole below anyway, and a copy cannot be taken away
  // by a truncation under the reader.
  std::string index_path = JoinPath(dir, kIndexFileName);
  DOCFEED_ASSIGN_OR_RETURN(ds->index_bytes_, env->ReadFile(index_path));
  DOCFEED_ASSIGN_OR_RETURN(ds->index_, IndexView::Open(ds->index_bytes_, index_path));
  if (ds->index_.size() != ds->manifest_.num_samples) {
    return CorruptionError(index_path + ": holds " + std::to_string(ds->index_.size()) +
                           " samples, the manifest says " +
                           std::to_string(ds->manifest_.num_samples));
  }
  if (!ds->manifest_.original_column.empty() && ds->manifest_.original_column != kOriginalColumn) {
    return CorruptionError(manifest_path + ": field original_column is \"" +
                           ds->manifest_.original_column + "\", expected \"" + kOriginalColumn +
                           "\"");
  }
  ds->schema_ = DatasetSchema(ds->manifest_.columns, !ds->manifest_.original_column.empty());
  uint64_t next_sample = 0;
  for (const FileEntry& f : ds->manifest_.data_files) {
    DOCFEED_RETURN_IF_ERROR(ds->OpenDataFile(env, f, &next_sample));
  }
  if (next_sample != ds->manifest_.num_samples) {
    return CorruptionError(manifest_path + ": the data files' record batches hold " +
                           std::to_string(next_sample) + " samples, num_samples says " +
                           std::to_string(ds->manifest_.num_samples));
  }
  return ds;
}

// The manifest's regions of `entry` must partition the file (schema first, then batches, then
// the end-of-stream marker) with sample ids running on from *next_sample; the reads rely on it.
Status Dataset::OpenDataFile(Env* env, const FileEntry& entry, uint64_t* next_sample) {
  const std::string path = JoinPath(dir_, entry.name);
  auto bad = [&](const std::string& what) {
    return CorruptionError(JoinPath(dir_, kManifestFileName) + ": data file " + entry.name + ": " +
                           what);
  };
  DataFile data;
  DOCFEED_ASSIGN_OR_RETURN(data.file, env->NewRandomAccessFile(path));
  if (data.file->size_bytes() != entry.size_bytes) {
    return CorruptionError(path + ": " + std::to_string(data.file->size_bytes()) +
                           " bytes, the manifest says " + std::to_string(entry.size_bytes));
  }
  if (entry.regions.empty() || entry.regions.front().kind != Region::Kind::kSchema) {
    return bad("regions do not start with the schema message");
  }
  uint64_t at = 0;
  uint64_t rows = 0;
  for (const Region& r : entry.regions) {
    if (r.offset != at || r.length > entry.size_bytes - at) {
      return bad("region at offset " + std::to_string(r.offset) + " does not follow on at " +
                 std::to_string(at) + " inside the file");
    }
    at += r.length;
    if (r.kind != Region::Kind::kBatch) continue;
    if (r.first_sample != *next_sample + rows || r.num_rows == 0) {
      return bad("record batch at offset " + std::to_string(r.offset) + " starts at sample " +
                 std::to_string(r.first_sample) + ", expected " +
                 std::to_string(*next_sample + rows));
    }
    data.batches.push_back({r.offset, r.length, r.first_sample, r.num_rows, r.xxh3});
    rows += r.num_rows;
  }
  if (at != entry.size_bytes || rows != entry.num_rows) {
    return bad("regions cover " + std::to_string(at) + " bytes and " + std::to_string(rows) +
               " rows, the file has " + std::to_string(entry.size_bytes) + " and " +
               std::to_string(entry.num_rows));
  }
  *next_sample += rows;
  // The schema message against the manifest's checksum, like every batch (a remote read may
  // come damaged, or from a cache that kept it so: read once more, dropped from any cache).
  const Region& schema = entry.regions.front();
  data.schema_bytes.resize(schema.length);
  for (int attempt = 0;; ++attempt) {
    DOCFEED_RETURN_IF_ERROR(data.file->ReadAt(0, data.schema_bytes));
    if (Hash64(data.schema_bytes) == schema.xxh3) break;
    if (attempt == 1) {
      return CorruptionError(path + " (bytes 0-" + std::to_string(schema.length - 1) +
                             "): the schema message read twice does not match the manifest's "
                             "checksum");
    }
    data.file->Invalidate(0, schema.length);
  }
  DOCFEED_ASSIGN_OR_RETURN(arrow::StreamReader reader,
                           arrow::StreamReader::Open(data.schema_bytes, path));
  DOCFEED_RETURN_IF_ERROR(CheckSchema(reader.schema(), schema_, path));
  // The reader views schema_bytes, whose heap block stays put when the vector moves.
  data_files_.push_back(std::move(data));
  readers_.push_back(std::move(reader));
  return Status::Ok();
}

Result<const Dataset::BatchSpan*> Dataset::CheckRecord(uint64_t id, const IndexRecord& r) const {
  auto bad = [&](const std::string& what) {
    return CorruptionError(JoinPath(dir_, kIndexFileName) + ": sample " + std::to_string(id) +
                           ": " + what);
  };
  if (r.file_index >= data_files_.size())
    return bad("names data file " + std::to_string(r.file_index));
  const std::vector<BatchSpan>& batches = data_files_[r.file_index].batches;
  const std::string& file = manifest_.data_files[r.file_index].name;
  auto it = std::lower_bound(batches.begin(), batches.end(), r.batch_offset,
                             [](const BatchSpan& b, uint64_t offset) { return b.offset < offset; });
  if (it == batches.end() || it->offset != r.batch_offset ||
      r.batch_index != static_cast<uint64_t>(it - batches.begin())) {
    return bad("record batch " + std::to_string(r.batch_index) + " at offset " +
               std::to_string(r.batch_offset) + " is not a record batch of " + file);
  }
  if (r.row >= it->num_rows || it->first_sample + r.row != id) {
    return bad("row " + std::to_string(r.row) + " of the batch at offset " +
               std::to_string(r.batch_offset) + " of " + file + " is not this sample (the batch " +
               "holds samples " + std::to_string(it->first_sample) + "-" +
               std::to_string(it->first_sample + it->num_rows - 1) + ")");
  }
  if (manifest_.compression == "none" &&
      (r.image_offset < it->offset || r.image_offset - it->offset > it->length ||
       r.image_length > it->length - (r.image_offset - it->offset))) {
    return bad("image byte range " + std::to_string(r.image_offset) + "+" +
               std::to_string(r.image_length) + " lies outside its record batch in " + file);
  }
  return &*it;
}

Status Dataset::SampleError(uint64_t id, const Status& cause) const {
  return cause.WithContext(dir_ + ": sample " + std::to_string(id));
}

namespace {

// Bytes [offset, offset + length) of data file `file` when `fetched` holds all of them, else an
// empty span with a null data().
std::span<const uint8_t> InFetched(const FetchedRange* fetched, uint32_t file, uint64_t offset,
                                   uint64_t length) {
  if (fetched == nullptr || fetched->file != file || offset < fetched->offset ||
      offset - fetched->offset > fetched->bytes.size() ||
      length > fetched->bytes.size() - (offset - fetched->offset)) {
    return {};
  }
  return fetched->bytes.subspan(offset - fetched->offset, length);
}

// Whether bytes [offset, offset + length) of data file `file` lie inside the part of `fetched`
// its caller checked. That part lies in `fetched->bytes`, so such bytes are read from there.
bool InCheckedPart(const FetchedRange* fetched, uint32_t file, uint64_t offset, uint64_t length) {
  return fetched != nullptr && fetched->file == file && fetched->checked_length != 0 &&
         offset >= fetched->checked_offset && length <= fetched->checked_length &&
         offset - fetched->checked_offset <= fetched->checked_length - length;
}

}  // namespace

Status Dataset::ReadAt(uint32_t file_index, uint64_t offset, std::span<uint8_t> out,
                       const FetchedRange* fetched) const {
  const std::span<const uint8_t> held = InFetched(fetched, file_index, offset, out.size());
  if (held.data() != nullptr) {
    std::memcpy(out.data(), held.data(), out.size());
    return Status::Ok();
  }
  return data_files_[file_index].file->ReadAt(offset, out);
}

Result<SamplePlan> Dataset::PlanBatch(uint64_t id) const {
  if (id >= size()) return InvalidArgumentError("sample " + std::to_string(id) + " out of range");
  const IndexRecord r = index_.Get(id);
  DOCFEED_ASSIGN_OR_RETURN(const BatchSpan* span, CheckRecord(id, r));
  return SamplePlan{{r.file_index, span->offset, span->length}, span->xxh3, true};
}

Result<SamplePlan> Dataset::PlanSample(uint64_t id, bool with_labels) const {
  if (id >= size()) return InvalidArgumentError("sample " + std::to_string(id) + " out of range");
  const IndexRecord r = index_.Get(id);
  DOCFEED_ASSIGN_OR_RETURN(const BatchSpan* span, CheckRecord(id, r));
  SamplePlan plan;
  plan.range.file = r.file_index;
  if (manifest_.compression != "none" || with_labels || span->num_rows == 1) {
    plan.range.offset = span->offset;
    plan.range.length = span->length;
    plan.xxh3 = span->xxh3;
    plan.whole_batch = true;
  } else {
    plan.range.offset = r.image_offset;
    plan.range.length = r.image_length;
    plan.xxh3 = r.image_hash;
  }
  return plan;
}

Status Dataset::ReadBatch(uint32_t file_index, const BatchSpan& batch, ReadScratch* scratch,
                          const FetchedRange* fetched) const {
  // In memory already (a remote dataset's prefetched range): parsed where it lies, saving a copy
  // of every sample's bytes.
  scratch->message = InFetched(fetched, file_index, batch.offset, batch.length);
  if (scratch->message.data() == nullptr) {
    scratch->bytes.resize(batch.length);
    DOCFEED_RETURN_IF_ERROR(ReadAt(file_index, batch.offset, scratch->bytes, fetched));
    scratch->message = scratch->bytes;
  }
  return readers_[file_index].ReadBatchFrom(scratch->message, batch.offset, &scratch->batch);
}

// The layout of the record batch `span` from its metadata, once its image column is known to
// hold row r.row.
Result<arrow::BatchLayout> Dataset::ReadBatchLayout(uint64_t id, const IndexRecord& r,
                                                    const BatchSpan& span, ReadScratch* scratch,
                                                    const FetchedRange* fetched) const {
  const RandomAccessFile& file = *data_files_[r.file_index].file;
  auto corrupt = [&](const std::string& what) {
    return CorruptionError(file.path() + ": sample " + std::to_string(id) + ": " + what);
  };
  uint8_t first[8];
  if (span.length < sizeof(first)) return corrupt("record batch message too short");
  DOCFEED_RETURN_IF_ERROR(ReadAt(r.file_index, span.offset, first, fetched));
  Result<uint64_t> head_bytes = arrow::StreamReader::MetadataEnd(first);
  if (!head_bytes.ok()) return corrupt(std::string(head_bytes.status().message()));
  if (*head_bytes > span.length) return corrupt("record batch metadata runs past the batch");
  scratch->bytes.resize(*head_bytes);
  DOCFEED_RETURN_IF_ERROR(ReadAt(r.file_index, span.offset, scratch->bytes, fetched));
  Result<arrow::BatchLayout> layout =
      readers_[r.file_index].ReadLayout(scratch->bytes, span.offset, span.length - *head_bytes);
  if (!layout.ok()) return corrupt(std::string(layout.status().message()));
  const std::vector<arrow::BatchLayout::Range>& buffers = layout->buffers;
  if (buffers.size() < 4 || layout->array_lengths.size() < 2 ||
      static_cast<int64_t>(r.row) >= layout->array_lengths[1] ||
      (uint64_t{r.row} + 2) * 4 > buffers[2].length) {
    return corrupt("row " + std::to_string(r.row) + " is not in the batch's image column");
  }
  return layout;
}

// The image column is struct<bytes: binary, path: string> (CheckSchema): its arrays come first
// in the flattened tree (struct, bytes, path) and its first buffers are the struct's validity,
// then the bytes' validity, offsets and values.
Status Dataset::CheckImageLocation(uint64_t id, const IndexRecord& r, const BatchSpan& span,
                                   ReadScratch* scratch, const FetchedRange* fetched) const {
  const RandomAccessFile& file = *data_files_[r.file_index].file;
  auto corrupt = [&](const std::string& what) {
    return CorruptionError(file.path() + ": sample " + std::to_string(id) + ": " + what);
  };
  int32_t begin = 0;
  int32_t end = 0;
  uint64_t values_offset = 0;
  uint64_t values_length = 0;
  if (fetched != nullptr && span.num_rows > 1) {
    // Read ahead by ranges (a remote dataset): a multi-row batch's metadata and image offsets
    // are read once per batch and kept, instead of three small requests per sample. (A 1-row
    // batch is fetched whole: its reads below come from `fetched`, and nothing is kept.) Kept
    // offsets that disagree with the index are read once more (they may have been damaged on the
    // way).
    for (int attempt = 0; attempt < 2; ++attempt) {
      DOCFEED_ASSIGN_OR_RETURN(std::shared_ptr<const ImageOffsets> offsets,
                               BatchImageOffsets(id, r, span, scratch, fetched));
      if (uint64_t{r.row} + 1 >= offsets->offsets.size()) {
        return corrupt("row " + std::to_string(r.row) + " is not in the batch's image column");
      }
      begin = offsets->offsets[r.row];
      end = offsets->offsets[r.row + 1];
      values_offset = offsets->values_offset;
      values_length = offsets->values_length;
      if (begin >= 0 && end >= begin && static_cast<uint64_t>(end) <= values_length &&
          values_offset + static_cast<uint64_t>(begin) == r.image_offset &&
          static_cast<uint64_t>(end - begin) == r.image_length) {
        break;
      }
      MutexLock lock(&offsets_mu_);
      offsets_cache_.erase({r.file_index, span.offset});
    }
  } else {
    DOCFEED_ASSIGN_OR_RETURN(const arrow::BatchLayout layout,
                             ReadBatchLayout(id, r, span, scratch, fetched));
    const std::vector<arrow::BatchLayout::Range>& buffers = layout.buffers;
    uint8_t pair[8];
    DOCFEED_RETURN_IF_ERROR(
        ReadAt(r.file_index, buffers[2].offset + uint64_t{r.row} * 4, pair, fetched));
    std::memcpy(&begin, pair, 4);  // little-endian host, see format/value.cc
    std::memcpy(&end, pair + 4, 4);
    values_offset = buffers[3].offset;
    values_length = buffers[3].length;
  }
  if (begin < 0 || end < begin || static_cast<uint64_t>(end) > values_length) {
    return corrupt("the image column's offsets are out of range");
  }
  const uint64_t at = values_offset + static_cast<uint64_t>(begin);
  const auto length = static_cast<uint64_t>(end - begin);
  if (at != r.image_offset || length != r.image_length) {
    return corrupt("index image range " + std::to_string(r.image_offset) + "+" +
                   std::to_string(r.image_length) + " is not the row's image (at " +
                   std::to_string(at) + "+" + std::to_string(length) + ")");
  }
  return Status::Ok();
}

Result<std::shared_ptr<const Dataset::ImageOffsets>> Dataset::BatchImageOffsets(
    uint64_t id, const IndexRecord& r, const BatchSpan& span, ReadScratch* scratch,
    const FetchedRange* fetched) const {
  const std::pair<uint32_t, uint64_t> key(r.file_index, span.offset);
  {
    MutexLock lock(&offsets_mu_);
    auto it = offsets_cache_.find(key);
    if (it != offsets_cache_.end()) return it->second;
  }
  DOCFEED_ASSIGN_OR_RETURN(const arrow::BatchLayout layout,
                           ReadBatchLayout(id, r, span, scratch, fetched));
  const arrow::BatchLayout::Range& offsets_buffer = layout.buffers[2];
  const uint64_t rows = static_cast<uint64_t>(layout.array_lengths[1]);
  if ((rows + 1) * 4 > offsets_buffer.length || rows != span.num_rows) {
    return CorruptionError(data_files_[r.file_index].file->path() + ": sample " +
                           std::to_string(id) + ": the batch's image offsets do not cover its " +
                           std::to_string(span.num_rows) + " rows");
  }
  auto out = std::make_shared<ImageOffsets>();
  out->values_offset = layout.buffers[3].offset;
  out->values_length = layout.buffers[3].length;
  std::vector<uint8_t> raw((rows + 1) * 4);
  DOCFEED_RETURN_IF_ERROR(ReadAt(r.file_index, offsets_buffer.offset, raw, fetched));
  out->offsets.resize(rows + 1);
  std::memcpy(out->offsets.data(), raw.data(), raw.size());  // little-endian host
  MutexLock lock(&offsets_mu_);
  return offsets_cache_.emplace(key, std::move(out)).first->second;
}

Result<std::vector<uint8_t>> Dataset::ReadImage(uint64_t id) const {
  ReadScratch scratch;
  DOCFEED_ASSIGN_OR_RETURN(SampleBytes sample, ReadSample(id, false, &scratch));
  return std::vector<uint8_t>(sample.image.begin(), sample.image.end());
}

Result<std::vector<Value>> Dataset::ReadLabels(uint64_t id) const {
  ReadScratch scratch;
  DOCFEED_ASSIGN_OR_RETURN(SampleBytes sample, ReadSample(id, true, &scratch));
  return std::move(sample.labels);
}

Result<SampleBytes> Dataset::ReadSample(uint64_t id, bool with_labels, ReadScratch* scratch,
                                        const FetchedRange* fetched) const {
  if (id >= size()) return InvalidArgumentError("sample " + std::to_string(id) + " out of range");
  const IndexRecord r = index_.Get(id);
  DOCFEED_ASSIGN_OR_RETURN(const BatchSpan* span, CheckRecord(id, r));
  const std::string& path = data_files_[r.file_index].file->path();
  auto corrupt = [&](const std::string& what) {
    return CorruptionError(path + ": sample " + std::to_string(id) + ": " + what);
  };
  ReadScratch local;
  ReadScratch& s = scratch != nullptr ? *scratch : local;
  SampleBytes out;
  const bool compressed = manifest_.compression != "none";
  // The image's bytes, or the batch they are decompressed from, inside the part of `fetched`
  // checked against its stored checksum: not hashed again (FetchedRange says why that holds).
  bool checked = false;
  if (compressed || with_labels) {
    const Status read = ReadBatch(r.file_index, *span, &s, fetched);
    if (!read.ok()) return SampleError(id, read);
    checked = InCheckedPart(fetched, r.file_index, span->offset, span->length);
    if (r.row >= static_cast<uint64_t>(s.batch.num_rows)) return corrupt("row past batch");
    DOCFEED_ASSIGN_OR_RETURN(out.image, RowImage(s.batch, r.row));
    // An uncompressed row's image lies in the message just read: it must be where the index
    // says, or the index points this sample at another row's bytes.
    if (!s.batch.compressed) {
      const uint64_t at = span->offset + static_cast<uint64_t>(out.image.data() - s.message.data());
      if (at != r.image_offset || out.image.size() != r.image_length) {
        return corrupt("index image range " + std::to_string(r.image_offset) + "+" +
                       std::to_string(r.image_length) + " is not the row's image (at " +
                       std::to_string(at) + "+" + std::to_string(out.image.size()) + ")");
      }
    }
  } else {
    if (const Status at = CheckImageLocation(id, r, *span, &s, fetched); !at.ok()) {
      return at.code() == StatusCode::kCorruption ? at : SampleError(id, at);
    }
    out.image = InFetched(fetched, r.file_index, r.image_offset, r.image_length);
    if (out.image.data() == nullptr) {
      s.bytes.resize(r.image_length);
      const Status read = ReadAt(r.file_index, r.image_offset, s.bytes, fetched);
      if (!read.ok()) return SampleError(id, read);
      out.image = s.bytes;
    }
    checked = InCheckedPart(fetched, r.file_index, r.image_offset, r.image_length);
  }
  if (out.image.size() != r.image_length || (!checked && Hash64(out.image) != r.image_hash)) {
    return corrupt("image bytes do not match their checksum");
  }
  // The signature costs nothing and catches an index whose codec byte was changed.
  if (Status codec = CheckStoredCodec(r.codec, out.image); !codec.ok()) {
    return corrupt(std::string(codec.message()));
  }
  if (with_labels) {
    Result<std::vector<Value>> values =
        RowValues(s.batch, r.row, manifest_.columns, TrailingColumns());
    if (!values.ok()) return values.status().WithContext(path);
    if (HashLabels(manifest_.columns, *values) != r.label_hash) {
      return corrupt("labels do not match their checksum");
    }
    out.labels = std::move(values).value();
  }
  if (scratch == nullptr) {
    out.owned.assign(out.image.begin(), out.image.end());
    out.image = out.owned;
  }
  return out;
}

namespace {

Status NotReplaceable(const std::string& path, const std::string& what) {
  return FailedPreconditionError("refusing to replace " + path + ": " + what +
                                 "; --overwrite replaces only a docfeed dataset or an empty " +
                                 "directory (remove it yourself or choose another output)");
}

// OK when `dir` holds a manifest that decodes; the error says why not (naming `entry`, one of
// the directory's entries, when there is no manifest).
Status CheckIsDataset(Env* env, const std::string& dir, const std::string& entry) {
  const std::string manifest_path = JoinPath(dir, kManifestFileName);
  if (env->GetFileType(manifest_path) != FileType::kRegular) {
    return NotReplaceable(dir, std::string("it is not a docfeed dataset (no ") + kManifestFileName +
                                   (entry.empty() ? "" : "; it holds " + entry) + ")");
  }
  Result<std::string> text = env->ReadTextFile(manifest_path);
  Result<Manifest> manifest =
      text.ok() ? DecodeManifest(*text, manifest_path) : Result<Manifest>(text.status());
  if (!manifest.ok()) {
    return NotReplaceable(
        dir, "its manifest does not read as docfeed's (" + manifest.status().ToString() + ")");
  }
  return Status::Ok();
}

}  // namespace

Status CheckReplaceableOutput(const std::string& path, bool allow_dict, Env* env) {
  env = EnvOrDefault(env);
  const FileType type = env->GetFileType(path);
  if (type == FileType::kMissing) return Status::Ok();
  if (type != FileType::kDirectory) {
    return NotReplaceable(path, std::string("it is a ") + FileTypeName(type));
  }
  DOCFEED_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDirectory(path));
  if (names.empty()) return Status::Ok();
  std::sort(names.begin(), names.end());
  Status dataset = CheckIsDataset(env, path, names.front());
  if (dataset.ok() || !allow_dict ||
      env->GetFileType(JoinPath(path, "dataset_dict.json")) != FileType::kRegular) {
    return dataset;
  }
  for (const std::string& name : names) {
    if (name == "dataset_dict.json") continue;
    const std::string child = JoinPath(path, name);
    if (env->GetFileType(child) != FileType::kDirectory) {
      return NotReplaceable(path, "it holds " + name + ", which is not a split of a dataset dict");
    }
    DOCFEED_RETURN_IF_ERROR(CheckIsDataset(env, child, ""));
  }
  return Status::Ok();
}

}  // namespace docfeed::internal
