#include "format/dataset.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "format/arrow/reader.h"
#include "format/row_values.h"

namespace docfeed::internal {
namespace {

using Json = nlohmann::ordered_json;

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
  }
  return nullptr;
}

Json Features(const std::vector<ColumnSpec>& columns, bool keep_original) {
  Json features;
  features[kImageColumn] = {{"_type", "Image"}};
  for (const ColumnSpec& c : columns) features[c.name] = ColumnFeature(c.type);
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
  env = EnvOrDefault(env);
  std::unique_ptr<Dataset> ds(new Dataset());
  ds->dir_ = dir;
  std::string manifest_path = JoinPath(dir, kManifestFileName);
  if (!env->PathExists(manifest_path)) {
    return NotFoundError(dir + " is not a docfeed dataset (no " + kManifestFileName + ")");
  }
  DOCFEED_ASSIGN_OR_RETURN(std::string text, env->ReadTextFile(manifest_path));
  DOCFEED_ASSIGN_OR_RETURN(ds->manifest_, DecodeManifest(text, manifest_path));
  std::string index_path = JoinPath(dir, kIndexFileName);
  DOCFEED_ASSIGN_OR_RETURN(ds->index_file_, env->MapFile(index_path));
  DOCFEED_ASSIGN_OR_RETURN(ds->index_, IndexView::Open(ds->index_file_.bytes(), index_path));
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
  for (const FileEntry& f : ds->manifest_.data_files) {
    std::string path = JoinPath(dir, f.name);
    DOCFEED_ASSIGN_OR_RETURN(MappedFile file, env->MapFile(path));
    if (file.bytes().size() != f.size_bytes) {
      return CorruptionError(path + ": " + std::to_string(file.bytes().size()) +
                             " bytes, the manifest says " + std::to_string(f.size_bytes));
    }
    DOCFEED_ASSIGN_OR_RETURN(arrow::StreamReader reader,
                             arrow::StreamReader::Open(file.bytes(), path));
    DOCFEED_RETURN_IF_ERROR(CheckSchema(reader.schema(), ds->schema_, path));
    // The reader views the mapping, which stays put when the MappedFile moves.
    ds->data_files_.push_back(std::move(file));
    ds->readers_.push_back(std::move(reader));
  }
  return ds;
}

Status Dataset::CheckRecord(uint64_t id, const IndexRecord& r) const {
  auto bad = [&](const std::string& what) {
    return CorruptionError(JoinPath(dir_, kIndexFileName) + ": sample " + std::to_string(id) +
                           ": " + what);
  };
  if (r.file_index >= data_files_.size())
    return bad("names data file " + std::to_string(r.file_index));
  uint64_t size = data_files_[r.file_index].bytes().size();
  if (r.batch_offset >= size) return bad("record batch offset past the end of the file");
  if (manifest_.compression == "none" &&
      (r.image_offset > size || r.image_length > size - r.image_offset)) {
    return bad("image byte range past the end of the file");
  }
  return Status::Ok();
}

Result<std::vector<uint8_t>> Dataset::ReadImage(uint64_t id) const {
  if (id >= size()) return InvalidArgumentError("sample " + std::to_string(id) + " out of range");
  IndexRecord r = index_.Get(id);
  DOCFEED_RETURN_IF_ERROR(CheckRecord(id, r));
  const MappedFile& file = data_files_[r.file_index];
  std::span<const uint8_t> bytes;
  arrow::RecordBatch batch;
  if (manifest_.compression == "none") {
    bytes = file.bytes().subspan(r.image_offset, r.image_length);
  } else {
    DOCFEED_ASSIGN_OR_RETURN(batch, readers_[r.file_index].ReadBatchAt(r.batch_offset));
    if (r.row >= static_cast<uint64_t>(batch.num_rows)) {
      return CorruptionError(file.path() + ": sample " + std::to_string(id) + ": row past batch");
    }
    DOCFEED_ASSIGN_OR_RETURN(bytes, RowImage(batch, r.row));
  }
  if (bytes.size() != r.image_length || Hash64(bytes) != r.image_hash) {
    return CorruptionError(file.path() + ": sample " + std::to_string(id) +
                           ": image bytes do not match their checksum");
  }
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

Result<SampleBytes> Dataset::ReadSample(uint64_t id, bool with_labels, ReadScratch* scratch) const {
  if (id >= size()) return InvalidArgumentError("sample " + std::to_string(id) + " out of range");
  const IndexRecord r = index_.Get(id);
  DOCFEED_RETURN_IF_ERROR(CheckRecord(id, r));
  const MappedFile& file = data_files_[r.file_index];
  const bool compressed = manifest_.compression != "none";
  SampleBytes out;
  arrow::RecordBatch local;
  arrow::RecordBatch& batch = scratch != nullptr ? scratch->batch : local;
  if (compressed || with_labels) {
    DOCFEED_RETURN_IF_ERROR(readers_[r.file_index].ReadBatchAt(r.batch_offset, &batch));
    if (r.row >= static_cast<uint64_t>(batch.num_rows)) {
      return CorruptionError(file.path() + ": sample " + std::to_string(id) + ": row past batch");
    }
  }
  if (compressed) {
    DOCFEED_ASSIGN_OR_RETURN(out.image, RowImage(batch, r.row));
    // Without a scratch, keep the decompressed buffer the image lives in (moving a vector keeps
    // its heap block); with one, the image stays in the scratch's buffer.
    for (std::vector<uint8_t>& buffer : local.owned_buffers) {
      const uint8_t* begin = buffer.data();
      if (!out.image.empty() && out.image.data() >= begin &&
          out.image.data() + out.image.size() <= begin + buffer.size()) {
        out.owned = std::move(buffer);
        break;
      }
    }
  } else {
    out.image = file.bytes().subspan(r.image_offset, r.image_length);
  }
  if (out.image.size() != r.image_length || Hash64(out.image) != r.image_hash) {
    return CorruptionError(file.path() + ": sample " + std::to_string(id) +
                           ": image bytes do not match their checksum");
  }
  if (with_labels) {
    Result<std::vector<Value>> values =
        RowValues(batch, r.row, manifest_.columns, TrailingColumns());
    if (!values.ok()) return values.status().WithContext(file.path());
    if (HashLabels(manifest_.columns, *values) != r.label_hash) {
      return CorruptionError(file.path() + ": sample " + std::to_string(id) +
                             ": labels do not match their checksum");
    }
    out.labels = std::move(values).value();
  }
  return out;
}

void Dataset::DropPages(uint64_t id) const {
  if (id >= size()) return;
  const IndexRecord r = index_.Get(id);
  if (r.file_index >= data_files_.size()) return;
  const MappedFile& file = data_files_[r.file_index];
  if (manifest_.compression == "none") {
    file.DropPages(r.image_offset, r.image_length);
    return;
  }
  // The batch ends where the next sample's batch starts in the same file, else at the file's end.
  uint64_t end = file.bytes().size();
  if (id + 1 < size()) {
    const IndexRecord next = index_.Get(id + 1);
    if (next.file_index == r.file_index && next.batch_offset > r.batch_offset) {
      end = next.batch_offset;
    }
  }
  if (end > r.batch_offset) file.DropPages(r.batch_offset, end - r.batch_offset);
}

Result<std::vector<Value>> Dataset::ReadLabels(uint64_t id) const {
  if (id >= size()) return InvalidArgumentError("sample " + std::to_string(id) + " out of range");
  IndexRecord r = index_.Get(id);
  DOCFEED_RETURN_IF_ERROR(CheckRecord(id, r));
  const MappedFile& file = data_files_[r.file_index];
  DOCFEED_ASSIGN_OR_RETURN(arrow::RecordBatch batch,
                           readers_[r.file_index].ReadBatchAt(r.batch_offset));
  if (r.row >= static_cast<uint64_t>(batch.num_rows)) {
    return CorruptionError(file.path() + ": sample " + std::to_string(id) + ": row past batch");
  }
  Result<std::vector<Value>> values = RowValues(batch, r.row, manifest_.columns, TrailingColumns());
  if (!values.ok()) return values.status().WithContext(file.path());
  if (HashLabels(manifest_.columns, *values) != r.label_hash) {
    return CorruptionError(file.path() + ": sample " + std::to_string(id) +
                           ": labels do not match their checksum");
  }
  return values;
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
