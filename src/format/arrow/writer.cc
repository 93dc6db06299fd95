#include "format/arrow/writer.h"

#include <cstring>

#include "format/arrow/compression.h"
#include "format/arrow/ipc_metadata.h"

namespace docfeed::internal::arrow {
namespace {

constexpr uint64_t kAlignment = 8;
constexpr uint32_t kContinuation = 0xFFFFFFFF;

uint64_t PaddedSize(uint64_t size) { return (size + kAlignment - 1) / kAlignment * kAlignment; }

// The bytes each buffer is stored as: the raw builder memory, or a compressed copy.
struct StoredBuffers {
  std::vector<std::span<const uint8_t>> spans;
  std::vector<std::vector<uint8_t>> compressed;  // backing memory when compressing
};

Result<StoredBuffers> StoreBuffers(std::vector<std::span<const uint8_t>> raw,
                                   Compression compression) {
  StoredBuffers stored;
  if (compression == Compression::kNone) {
    stored.spans = std::move(raw);
    return stored;
  }
  const CompressionCodec codec =
      compression == Compression::kZstd ? CompressionCodec::kZstd : CompressionCodec::kLz4Frame;
  stored.compressed.resize(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    DOCFEED_RETURN_IF_ERROR(CompressBuffer(codec, raw[i], &stored.compressed[i]));
  }
  for (const auto& buffer : stored.compressed) stored.spans.emplace_back(buffer);
  return stored;
}

}  // namespace

Result<StreamWriter> StreamWriter::Create(const std::string& path, Schema schema,
                                          Compression compression, Env* env) {
  const Status valid = ValidateSchema(schema);
  if (!valid.ok()) return valid.WithContext(path);
  DOCFEED_ASSIGN_OR_RETURN(SequentialFile file, SequentialFile::Create(path, env));
  StreamWriter writer(std::move(file), std::move(schema), compression);
  const std::vector<uint8_t> metadata = EncodeSchemaMessage(writer.schema_);
  DOCFEED_RETURN_IF_ERROR(writer.WriteMessageHeader(metadata));
  return writer;
}

Status StreamWriter::WriteMessageHeader(std::span<const uint8_t> metadata) {
  uint8_t prefix[8];
  const auto size = static_cast<uint32_t>(metadata.size());
  std::memcpy(prefix, &kContinuation, 4);
  std::memcpy(prefix + 4, &size, 4);
  DOCFEED_RETURN_IF_ERROR(file_.Append(std::span<const uint8_t>(prefix, sizeof(prefix))));
  return file_.Append(metadata);
}

Status StreamWriter::WritePadded(std::span<const uint8_t> bytes) {
  static constexpr uint8_t kZeros[kAlignment] = {};
  DOCFEED_RETURN_IF_ERROR(file_.Append(bytes));
  const uint64_t padding = PaddedSize(bytes.size()) - bytes.size();
  return file_.Append(std::span<const uint8_t>(kZeros, padding));
}

Status StreamWriter::CheckColumns(std::span<ArrayBuilder> columns) const {
  if (closed_ || failed_) {
    return InvalidArgumentError("stream writer is " +
                                std::string(closed_ ? "closed" : "in a failed state"));
  }
  if (columns.size() != schema_.fields.size()) {
    return InvalidArgumentError("got " + std::to_string(columns.size()) + " columns, schema has " +
                                std::to_string(schema_.fields.size()));
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    const Field& expected = schema_.fields[i];
    const Field& got = columns[i].field();
    if (got.name != expected.name || !SameType(got, expected)) {
      return InvalidArgumentError("column " + std::to_string(i) + " is '" + got.name + "' (" +
                                  TypeToString(got) + "), schema has '" + expected.name + "' (" +
                                  TypeToString(expected) + ")");
    }
    if (columns[i].length() != columns[0].length()) {
      return InvalidArgumentError("column '" + got.name + "' has " +
                                  std::to_string(columns[i].length()) + " rows, column '" +
                                  columns[0].field().name + "' has " +
                                  std::to_string(columns[0].length()));
    }
    DOCFEED_RETURN_IF_ERROR(columns[i].CheckConsistent());
  }
  return Status::Ok();
}

Result<BatchLocation> StreamWriter::WriteBatch(std::span<ArrayBuilder> columns) {
  DOCFEED_RETURN_IF_ERROR(CheckColumns(columns));
  RecordBatchMeta meta;
  meta.length = columns.empty() ? 0 : columns[0].length();
  std::vector<std::span<const uint8_t>> raw;
  for (const ArrayBuilder& column : columns) column.CollectBuffers(&meta.nodes, &raw);
  DOCFEED_ASSIGN_OR_RETURN(StoredBuffers stored, StoreBuffers(std::move(raw), compression_));
  if (compression_ != Compression::kNone) {
    meta.codec =
        compression_ == Compression::kZstd ? CompressionCodec::kZstd : CompressionCodec::kLz4Frame;
  }
  uint64_t body_length = 0;
  for (const auto& span : stored.spans) {
    meta.buffers.push_back({static_cast<int64_t>(body_length), static_cast<int64_t>(span.size())});
    body_length += PaddedSize(span.size());
  }
  const std::vector<uint8_t> metadata =
      EncodeRecordBatchMessage(meta, static_cast<int64_t>(body_length));

  BatchLocation location;
  location.message_offset = file_.size_bytes();
  location.body_offset = location.message_offset + 8 + metadata.size();
  location.body_length = body_length;
  failed_ = true;  // until every byte is written
  DOCFEED_RETURN_IF_ERROR(WriteMessageHeader(metadata));
  for (const auto& span : stored.spans) DOCFEED_RETURN_IF_ERROR(WritePadded(span));
  failed_ = false;
  for (const BufferSpec& spec : meta.buffers) {
    location.buffers.push_back({location.body_offset + static_cast<uint64_t>(spec.offset),
                                static_cast<uint64_t>(spec.length)});
  }
  for (ArrayBuilder& column : columns) column.Reset();
  return location;
}

Status StreamWriter::Close() {
  if (closed_) return InvalidArgumentError("stream writer closed twice");
  closed_ = true;
  if (failed_) {
    file_.Close().IgnoreError();
    return IOError("stream writer: an earlier write failed; the file is incomplete");
  }
  const uint8_t eos[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0};
  DOCFEED_RETURN_IF_ERROR(file_.Append(std::span<const uint8_t>(eos, sizeof(eos))));
  return file_.Close();
}

}  // namespace docfeed::internal::arrow
