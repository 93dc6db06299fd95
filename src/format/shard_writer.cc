#include "format/shard_writer.h"

#include <cstdio>
#include <optional>

#include "base/file.h"
#include "base/hash.h"
#include "base/json.h"
#include "format/arrow/builder.h"
#include "format/arrow/writer.h"
#include "format/arrow_cell.h"
#include "format/dataset.h"
#include "format/verify.h"

namespace docfeed::internal {
namespace {

// IPC buffer order of the image column struct<bytes: binary, path: string>: struct validity,
// bytes validity, bytes offsets, bytes values, ... (Arrow IPC: pre-order, buffers per layout).
constexpr size_t kImageValuesBuffer = 3;

std::string DataFileName(size_t i, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "data-%05zu-of-%05zu.arrow", i, n);
  return buf;
}

Result<arrow::Compression> ParseCompression(const std::string& name) {
  if (name == "none") return arrow::Compression::kNone;
  if (name == "zstd") return arrow::Compression::kZstd;
  if (name == "lz4_frame") return arrow::Compression::kLz4Frame;
  return InvalidArgumentError("unknown compression " + name);
}

Status AppendValue(arrow::ArrayBuilder& b, const Value& v, ColumnType type) {
  if (std::holds_alternative<std::monostate>(v)) return b.AppendNull();
  switch (type) {
    case ColumnType::kString:
      return b.AppendString(std::get<std::string>(v));
    case ColumnType::kInt64:
      return b.AppendInt(std::get<int64_t>(v));
    case ColumnType::kFloat64:
      return b.AppendDouble(std::get<double>(v));
    case ColumnType::kBool:
      return b.AppendBool(std::get<bool>(v));
    case ColumnType::kInt64List:
      for (int64_t x : std::get<std::vector<int64_t>>(v))
        DOCFEED_RETURN_IF_ERROR(b.child(0).AppendInt(x));
      return b.FinishList();
    case ColumnType::kFloat64List:
      for (double x : std::get<std::vector<double>>(v))
        DOCFEED_RETURN_IF_ERROR(b.child(0).AppendDouble(x));
      return b.FinishList();
    case ColumnType::kStringList:
      for (const std::string& x : std::get<std::vector<std::string>>(v)) {
        DOCFEED_RETURN_IF_ERROR(b.child(0).AppendString(x));
      }
      return b.FinishList();
    case ColumnType::kArrow:
      return AppendEncodedCell(b, std::get<std::string>(v));
  }
  return InternalError("unknown column type");
}

// Hashes the regions of a closed Arrow file: schema, each batch, end-of-stream marker. The file
// read back must hold exactly the `written` bytes the writer appended; anything else (a file
// truncated or replaced meanwhile, a short read) is an IOError, never a read past its end.
Status HashRegions(Env* env, const std::string& path, uint64_t written, FileEntry* entry) {
  DOCFEED_ASSIGN_OR_RETURN(MappedFile file, env->MapFile(path));
  std::span<const uint8_t> bytes = file.bytes();
  if (bytes.size() != written) {
    return IOError(path + ": " + std::to_string(bytes.size()) + " bytes read back after writing " +
                   std::to_string(written) + " (the file changed while it was written)");
  }
  entry->size_bytes = bytes.size();
  entry->xxh3 = Hash64(bytes);
  uint64_t schema_end = entry->regions.size() > 1 ? entry->regions[1].offset : bytes.size() - 8;
  entry->regions[0].length = schema_end;
  Region eos;
  eos.kind = Region::Kind::kEndOfStream;
  eos.offset = entry->regions.size() > 1
                   ? entry->regions.back().offset + entry->regions.back().length
                   : schema_end;
  eos.length = bytes.size() - eos.offset;
  entry->regions.push_back(eos);
  for (Region& r : entry->regions) r.xxh3 = Hash64(bytes.subspan(r.offset, r.length));
  return Status::Ok();
}

class ArrowShardWriter final : public ShardWriter {
 public:
  ArrowShardWriter(ShardWriterOptions options, arrow::Compression compression)
      : options_(std::move(options)),
        env_(EnvOrDefault(options_.env)),
        compression_(compression),
        schema_(DatasetSchema(options_.columns, options_.keep_original)),
        builders_(arrow::ArrayBuilder::ForSchema(schema_)) {
    for (size_t i = 0; i < options_.columns.size(); ++i) {
      if (options_.columns[i].name == options_.label_column) label_index_ = i;
    }
  }

  Status Add(const SampleToWrite& s) override {
    if (!writer_) DOCFEED_RETURN_IF_ERROR(OpenFile());
    IndexRecord r;
    r.codec = static_cast<uint8_t>(s.codec);
    r.channels = s.channels;
    r.flags = static_cast<uint16_t>(s.orientation & 0xF);
    r.width = s.width;
    r.height = s.height;
    r.image_length = static_cast<uint32_t>(s.image.size());
    r.image_hash = Hash64(s.image);
    r.label_hash = HashLabels(options_.columns, s.values);
    if (label_index_) r.label_length = LabelLength(s.values[*label_index_]);
    pending_starts_.push_back(static_cast<uint64_t>(builders_[0].child(0).values_bytes()));
    DOCFEED_RETURN_IF_ERROR(builders_[0].child(0).AppendBinary(s.image));
    DOCFEED_RETURN_IF_ERROR(builders_[0].child(1).AppendString(s.path));
    DOCFEED_RETURN_IF_ERROR(builders_[0].AppendStruct());
    for (size_t i = 0; i < options_.columns.size(); ++i) {
      DOCFEED_RETURN_IF_ERROR(AppendValue(builders_[i + 1], s.values[i], options_.columns[i].type));
    }
    if (options_.keep_original) {
      arrow::ArrayBuilder& original = builders_.back();
      DOCFEED_RETURN_IF_ERROR(original.child(0).AppendBinary(s.original));
      DOCFEED_RETURN_IF_ERROR(original.child(1).AppendString(s.path));
      DOCFEED_RETURN_IF_ERROR(original.AppendStruct());
    }
    pending_.push_back(r);
    auto batch_bytes = static_cast<uint64_t>(builders_[0].child(0).values_bytes());
    if (options_.keep_original) {
      batch_bytes += static_cast<uint64_t>(builders_.back().child(0).values_bytes());
    }
    if (pending_.size() >= options_.max_batch_rows || batch_bytes >= options_.max_batch_bytes ||
        writer_->size_bytes() + batch_bytes >= options_.max_file_bytes) {
      DOCFEED_RETURN_IF_ERROR(FlushBatch());
    }
    return Status::Ok();
  }

  Result<Manifest> Finish(Manifest manifest) override {
    if (!pending_.empty()) DOCFEED_RETURN_IF_ERROR(FlushBatch());
    if (writer_) DOCFEED_RETURN_IF_ERROR(CloseFile());
    if (options_.sink != nullptr) DOCFEED_RETURN_IF_ERROR(options_.sink->Flush());
    for (size_t i = 0; i < files_.size(); ++i) {
      std::string name = DataFileName(i, files_.size());
      if (options_.sink == nullptr) {
        DOCFEED_RETURN_IF_ERROR(env_->Rename(Path(files_[i].name), Path(name)));
      }
      files_[i].name = name;
    }
    manifest.created_by = "docfeed 0.1.0";
    manifest.num_samples = records_.size();
    manifest.columns = options_.columns;
    manifest.label_column = options_.label_column;
    manifest.chat_labels = options_.chat_labels;
    manifest.compression = options_.compression;
    if (options_.keep_original) manifest.original_column = kOriginalColumn;
    manifest.data_files = files_;
    for (const IndexRecord& r : records_) {
      manifest.stored_image_bytes += r.image_length;
      ++manifest.stored_codecs[std::string(StoredCodecName(static_cast<StoredCodec>(r.codec)))];
    }
    std::vector<uint8_t> index = EncodeIndex(records_);
    DOCFEED_RETURN_IF_ERROR(WriteOther(kIndexFileName, index, &manifest));
    DOCFEED_RETURN_IF_ERROR(WriteOther("dataset_info.json", Text(DatasetInfoJson()), &manifest));
    // state.json is listed here but written last, after the manifest: it is what makes
    // datasets.load_from_disk accept the directory, so a run killed before the manifest leaves
    // nothing any reader opens.
    const std::string state = StateJson(Hash64(index));
    manifest.other_files.push_back({"state.json", state.size(), Hash64(Text(state)), 0, {}});
    for (const std::string& name : options_.extra_files) {
      DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, env_->ReadFile(Path(name)));
      manifest.other_files.push_back({name, bytes.size(), Hash64(bytes), 0, {}});
    }
    std::string rejects = Path(kRejectsFileName);
    if (env_->PathExists(rejects)) {
      DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, env_->ReadFile(rejects));
      manifest.other_files.push_back({kRejectsFileName, bytes.size(), Hash64(bytes), 0, {}});
    }
    DOCFEED_RETURN_IF_ERROR(env_->WriteTextFile(Path(kManifestFileName), EncodeManifest(manifest)));
    DOCFEED_RETURN_IF_ERROR(env_->WriteTextFile(Path("state.json"), state));
    return manifest;
  }

 private:
  static std::span<const uint8_t> Text(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
  }
  std::string Path(const std::string& name) const { return JoinPath(options_.directory, name); }

  Status WriteOther(const std::string& name, std::span<const uint8_t> bytes, Manifest* m) {
    DOCFEED_RETURN_IF_ERROR(env_->WriteFile(Path(name), bytes));
    m->other_files.push_back({name, bytes.size(), Hash64(bytes), 0, {}});
    return Status::Ok();
  }

  std::string DatasetInfoJson() const {
    Json info;
    info["citation"] = "";
    info["description"] = "";
    info["features"] = Json::parse(FeaturesJson(options_.columns, options_.keep_original));
    info["homepage"] = "";
    info["license"] = "";
    return info.dump(2) + "\n";
  }

  std::string StateJson(uint64_t fingerprint) const {
    return DatasetStateJson(files_, fingerprint);
  }

  Status OpenFile() {
    char name[32];
    std::snprintf(name, sizeof(name), "data-%05zu.arrow.partial", files_.size());
    DOCFEED_ASSIGN_OR_RETURN(arrow::StreamWriter w,
                             arrow::StreamWriter::Create(Path(name), schema_, compression_, env_));
    writer_.emplace(std::move(w));
    FileEntry entry;
    entry.name = name;
    entry.regions.push_back({Region::Kind::kSchema, 0, 0, 0, 0, 0});
    files_.push_back(std::move(entry));
    batches_in_file_ = 0;
    return Status::Ok();
  }

  Status FlushBatch() {
    DOCFEED_ASSIGN_OR_RETURN(arrow::BatchLocation loc, writer_->WriteBatch(builders_));
    FileEntry& file = files_.back();
    uint64_t first = records_.size();
    for (size_t row = 0; row < pending_.size(); ++row) {
      IndexRecord r = pending_[row];
      r.file_index = static_cast<uint32_t>(files_.size() - 1);
      r.batch_index = batches_in_file_;
      r.row = static_cast<uint32_t>(row);
      r.batch_offset = loc.message_offset;
      r.image_offset = compression_ == arrow::Compression::kNone
                           ? loc.buffers[kImageValuesBuffer].offset + pending_starts_[row]
                           : 0;
      records_.push_back(r);
    }
    uint64_t end = loc.body_offset + loc.body_length;
    file.regions.push_back({Region::Kind::kBatch, loc.message_offset, end - loc.message_offset, 0,
                            first, pending_.size()});
    file.num_rows += pending_.size();
    ++batches_in_file_;
    pending_.clear();
    pending_starts_.clear();
    if (end >= options_.max_file_bytes) DOCFEED_RETURN_IF_ERROR(CloseFile());
    return Status::Ok();
  }

  Status CloseFile() {
    DOCFEED_RETURN_IF_ERROR(writer_->Close());
    const uint64_t written = writer_->size_bytes();
    writer_.reset();
    const std::string path = Path(files_.back().name);
    DOCFEED_RETURN_IF_ERROR(HashRegions(env_, path, written, &files_.back()));
    if (options_.sink == nullptr) return Status::Ok();
    // The file leaves the directory: checked now, as the dataset's verify would check it.
    Manifest so_far;
    so_far.columns = options_.columns;
    so_far.label_column = options_.label_column;
    if (options_.keep_original) so_far.original_column = kOriginalColumn;
    so_far.preprocess = options_.preprocess;
    so_far.data_files = files_;
    DOCFEED_RETURN_IF_ERROR(VerifyDataFile(so_far, files_.size() - 1, path, records_, env_)
                                .WithContext("checking a data file before it is sent"));
    return options_.sink->Take(files_.back(), path);
  }

  ShardWriterOptions options_;
  Env* env_;
  arrow::Compression compression_;
  arrow::Schema schema_;
  std::vector<arrow::ArrayBuilder> builders_;
  std::optional<size_t> label_index_;
  std::optional<arrow::StreamWriter> writer_;
  uint32_t batches_in_file_ = 0;
  std::vector<FileEntry> files_;
  std::vector<IndexRecord> pending_;      // rows of the batch being built
  std::vector<uint64_t> pending_starts_;  // their image offsets within the values buffer
  std::vector<IndexRecord> records_;      // every written sample, by id
};

}  // namespace

Result<std::unique_ptr<ShardWriter>> ShardWriter::Create(ShardWriterOptions options) {
  DOCFEED_ASSIGN_OR_RETURN(arrow::Compression compression, ParseCompression(options.compression));
  if (!EnvOrDefault(options.env)->IsDirectory(options.directory)) {
    return NotFoundError("output directory " + options.directory + " does not exist");
  }
  return std::unique_ptr<ShardWriter>(new ArrowShardWriter(std::move(options), compression));
}

std::string DatasetStateJson(const std::vector<FileEntry>& files, uint64_t fingerprint) {
  Json state;
  Json list = Json::array();
  for (const FileEntry& f : files) list.push_back({{"filename", f.name}});
  state["_data_files"] = list;
  state["_fingerprint"] = Hex64(fingerprint);
  state["_format_columns"] = nullptr;
  state["_format_kwargs"] = Json::object();
  state["_format_type"] = nullptr;
  state["_output_all_columns"] = false;
  state["_split"] = nullptr;
  return state.dump(2) + "\n";
}

}  // namespace docfeed::internal
