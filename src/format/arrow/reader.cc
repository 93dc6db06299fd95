#include "format/arrow/reader.h"

#include <cmath>
#include <cstring>

#include "base/check.h"
#include "format/arrow/array_loader.h"
#include "format/arrow/flatbuf.h"
#include "format/arrow/ipc_metadata.h"

namespace docfeed::internal::arrow {
namespace {

constexpr uint32_t kContinuation = 0xFFFFFFFF;

// One encapsulated message located in the stream (IPC format, "Encapsulated message format").
struct Frame {
  bool end_of_stream = false;
  std::span<const uint8_t> metadata;  // the flatbuffer Message (with its padding)
  uint64_t body_offset = 0;
};

Result<Frame> ReadFrame(std::span<const uint8_t> bytes, uint64_t offset) {
  Frame frame;
  if (offset == bytes.size()) {
    frame.end_of_stream = true;
    return frame;
  }
  if (offset > bytes.size() || bytes.size() - offset < 4) {
    return CorruptionError("truncated message length prefix");
  }
  uint64_t pos = offset;
  uint32_t prefix = flatbuf::LoadLE<uint32_t>(bytes, pos);
  pos += 4;
  if (prefix == kContinuation) {
    if (bytes.size() - pos < 4) return CorruptionError("truncated message length after marker");
    prefix = flatbuf::LoadLE<uint32_t>(bytes, pos);
    pos += 4;
  }
  const auto metadata_size = static_cast<int32_t>(prefix);
  if (metadata_size == 0) {
    frame.end_of_stream = true;
    return frame;
  }
  if (metadata_size < 0) {
    return CorruptionError("negative metadata length " + std::to_string(metadata_size));
  }
  if (static_cast<uint64_t>(metadata_size) > bytes.size() - pos) {
    return CorruptionError("metadata of " + std::to_string(metadata_size) +
                           " bytes runs past the end of the " + std::to_string(bytes.size()) +
                           "-byte stream");
  }
  frame.metadata = bytes.subspan(pos, static_cast<size_t>(metadata_size));
  frame.body_offset = pos + static_cast<uint64_t>(metadata_size);
  return frame;
}

// Half-precision (IEEE 754 binary16) to double.
double HalfToDouble(uint16_t half) {
  const int sign = (half >> 15) & 1;
  const int exponent = (half >> 10) & 0x1f;
  const int mantissa = half & 0x3ff;
  double value;
  if (exponent == 0) {
    value = std::ldexp(mantissa, -24);
  } else if (exponent == 31) {
    value = mantissa == 0 ? INFINITY : NAN;
  } else {
    value = std::ldexp(mantissa + 1024, exponent - 25);
  }
  return sign ? -value : value;
}

template <typename T>
T Load(std::span<const uint8_t> bytes, int64_t index) {
  return flatbuf::LoadLE<T>(bytes, static_cast<size_t>(index) * sizeof(T));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ArrayView

bool ArrayView::IsValid(int64_t i) const {
  DOCFEED_CHECK(i >= 0 && i < length);
  if (field->type == TypeId::kNull) return false;
  if (validity.empty()) return true;
  return (validity[static_cast<size_t>(i / 8)] >> (i % 8)) & 1;
}

std::span<const uint8_t> ArrayView::GetBinary(int64_t i) const {
  DOCFEED_CHECK(i >= 0 && i < length);
  if (field->type == TypeId::kFixedSizeBinary) {
    const auto width = static_cast<size_t>(field->fixed_size);
    return values.subspan(static_cast<size_t>(i) * width, width);
  }
  DOCFEED_DCHECK(IsBinaryLike(field->type));
  int64_t begin;
  int64_t end;
  if (HasLargeOffsets(field->type)) {
    begin = Load<int64_t>(offsets, i);
    end = Load<int64_t>(offsets, i + 1);
  } else {
    begin = Load<int32_t>(offsets, i);
    end = Load<int32_t>(offsets, i + 1);
  }
  return values.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
}

std::string_view ArrayView::GetString(int64_t i) const {
  const std::span<const uint8_t> bytes = GetBinary(i);
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

int64_t ArrayView::GetInt64(int64_t i) const {
  DOCFEED_CHECK(i >= 0 && i < length);
  switch (field->type) {
    case TypeId::kInt8:
      return Load<int8_t>(values, i);
    case TypeId::kInt16:
      return Load<int16_t>(values, i);
    case TypeId::kInt32:
    case TypeId::kDate32:
      return Load<int32_t>(values, i);
    case TypeId::kUInt8:
      return Load<uint8_t>(values, i);
    case TypeId::kUInt16:
      return Load<uint16_t>(values, i);
    case TypeId::kUInt32:
      return Load<uint32_t>(values, i);
    default:
      DOCFEED_DCHECK(FixedWidthBytes(*field) == 8);
      return Load<int64_t>(values, i);
  }
}

uint64_t ArrayView::GetUInt64(int64_t i) const {
  if (field->type == TypeId::kUInt64) {
    DOCFEED_CHECK(i >= 0 && i < length);
    return Load<uint64_t>(values, i);
  }
  return static_cast<uint64_t>(GetInt64(i));
}

double ArrayView::GetDouble(int64_t i) const {
  DOCFEED_CHECK(i >= 0 && i < length);
  switch (field->type) {
    case TypeId::kFloat16:
      return HalfToDouble(Load<uint16_t>(values, i));
    case TypeId::kFloat32:
      return Load<float>(values, i);
    default:
      DOCFEED_DCHECK(field->type == TypeId::kFloat64);
      return Load<double>(values, i);
  }
}

bool ArrayView::GetBool(int64_t i) const {
  DOCFEED_CHECK(i >= 0 && i < length);
  DOCFEED_DCHECK(field->type == TypeId::kBool);
  return (values[static_cast<size_t>(i / 8)] >> (i % 8)) & 1;
}

std::pair<int64_t, int64_t> ArrayView::GetListRange(int64_t i) const {
  DOCFEED_CHECK(i >= 0 && i < length);
  switch (field->type) {
    case TypeId::kFixedSizeList:
      return {i * field->fixed_size, (i + 1) * field->fixed_size};
    case TypeId::kLargeList:
      return {Load<int64_t>(offsets, i), Load<int64_t>(offsets, i + 1)};
    default:
      DOCFEED_DCHECK(field->type == TypeId::kList);
      return {Load<int32_t>(offsets, i), Load<int32_t>(offsets, i + 1)};
  }
}

// ---------------------------------------------------------------------------------------------
// StreamReader

Result<StreamReader> StreamReader::Open(std::span<const uint8_t> stream_bytes, std::string name) {
  StreamReader reader(stream_bytes, std::move(name));
  const std::string where = reader.name_ + ": schema message at offset 0";
  Result<Frame> frame = ReadFrame(stream_bytes, 0);
  if (!frame.ok()) return frame.status().WithContext(where);
  if (frame->end_of_stream) {
    return CorruptionError(where + ": stream is empty (no schema message)");
  }
  Result<DecodedMessage> message = DecodeMessage(frame->metadata);
  if (!message.ok()) return message.status().WithContext(where);
  if (message->type != MessageType::kSchema) {
    return CorruptionError(where + ": first message is not a Schema (header type " +
                           std::to_string(static_cast<int>(message->type)) + ")");
  }
  Result<Schema> schema = DecodeSchema(message->header);
  if (!schema.ok()) return schema.status().WithContext(where);
  const uint64_t body_end = frame->body_offset;
  if (static_cast<uint64_t>(message->body_length) > stream_bytes.size() - body_end) {
    return CorruptionError(where + ": schema body runs past the end of the stream");
  }
  reader.schema_ = std::make_shared<const Schema>(std::move(schema).value());
  reader.cursor_ = body_end + static_cast<uint64_t>(message->body_length);
  return reader;
}

std::string StreamReader::Where(uint64_t offset, int64_t batch_index) const {
  std::string where = name_ + ": ";
  if (batch_index >= 0) where += "record batch " + std::to_string(batch_index) + " ";
  return where + "message at offset " + std::to_string(offset);
}

Status StreamReader::ReadBatchMessage(std::span<const uint8_t> bytes, uint64_t base,
                                      uint64_t offset, int64_t batch_index, RecordBatch* batch,
                                      uint64_t* next_offset, bool* end_of_stream) const {
  *end_of_stream = false;
  DOCFEED_ASSIGN_OR_RETURN(Frame frame, ReadFrame(bytes, offset));
  if (frame.end_of_stream) {
    *end_of_stream = true;
    return Status::Ok();
  }
  DOCFEED_ASSIGN_OR_RETURN(DecodedMessage message, DecodeMessage(frame.metadata));
  if (static_cast<uint64_t>(message.body_length) > bytes.size() - frame.body_offset) {
    return CorruptionError("body of " + std::to_string(message.body_length) +
                           " bytes runs past the end of the " + std::to_string(bytes.size()) +
                           (base == 0 ? "-byte stream" : "-byte message"));
  }
  switch (message.type) {
    case MessageType::kRecordBatch:
      break;
    case MessageType::kDictionaryBatch:
      return UnsupportedError(
          "DictionaryBatch message: dictionary-encoded columns are not supported");
    case MessageType::kSchema:
      return CorruptionError("unexpected second Schema message");
    default:
      return UnsupportedError("message type " + std::to_string(static_cast<int>(message.type)) +
                              " (tensors) in a record batch stream");
  }
  DOCFEED_ASSIGN_OR_RETURN(RecordBatchMeta meta, DecodeRecordBatch(message.header));
  const auto body = bytes.subspan(frame.body_offset, static_cast<size_t>(message.body_length));
  batch->schema = schema_;
  batch->batch_index = batch_index;
  batch->message_offset = base + offset;
  batch->body_offset = base + frame.body_offset;
  batch->body_length = static_cast<uint64_t>(message.body_length);
  DOCFEED_RETURN_IF_ERROR(LoadRecordBatch(meta, body, batch));
  *next_offset = base + frame.body_offset + static_cast<uint64_t>(message.body_length);
  return Status::Ok();
}

Result<bool> StreamReader::Next(RecordBatch* batch) {
  if (done_) return false;
  uint64_t next_offset = 0;
  bool end_of_stream = false;
  const Status status =
      ReadBatchMessage(bytes_, 0, cursor_, next_batch_index_, batch, &next_offset, &end_of_stream);
  if (!status.ok()) {
    done_ = true;  // a corrupt stream has no reliable next message boundary
    return status.WithContext(Where(cursor_, next_batch_index_));
  }
  if (end_of_stream) {
    done_ = true;
    return false;
  }
  cursor_ = next_offset;
  ++next_batch_index_;
  return true;
}

Result<RecordBatch> StreamReader::ReadBatchAt(uint64_t message_offset) const {
  RecordBatch batch;
  DOCFEED_RETURN_IF_ERROR(ReadBatchAt(message_offset, &batch));
  return batch;
}

Status StreamReader::ReadBatchAt(uint64_t message_offset, RecordBatch* batch) const {
  return ReadBatchIn(bytes_, 0, message_offset, batch);
}

Status StreamReader::ReadBatchFrom(std::span<const uint8_t> message_bytes, uint64_t message_offset,
                                   RecordBatch* batch) const {
  return ReadBatchIn(message_bytes, message_offset, 0, batch);
}

Result<uint64_t> StreamReader::MetadataEnd(std::span<const uint8_t> first_bytes) {
  if (first_bytes.size() < 8) return CorruptionError("truncated message length prefix");
  uint32_t prefix = flatbuf::LoadLE<uint32_t>(first_bytes, 0);
  uint64_t framing = 4;
  if (prefix == kContinuation) {
    prefix = flatbuf::LoadLE<uint32_t>(first_bytes, 4);
    framing = 8;
  }
  const auto metadata_size = static_cast<int32_t>(prefix);
  if (metadata_size <= 0) {
    return CorruptionError("no record batch message here (metadata length " +
                           std::to_string(metadata_size) + ")");
  }
  return framing + static_cast<uint64_t>(metadata_size);
}

Result<StreamReader::MessageExtent> StreamReader::ReadExtent(std::span<const uint8_t> head) {
  DOCFEED_ASSIGN_OR_RETURN(Frame frame, ReadFrame(head, 0));
  if (frame.end_of_stream) return CorruptionError("an end-of-stream marker, not a message");
  DOCFEED_ASSIGN_OR_RETURN(DecodedMessage message, DecodeMessage(frame.metadata));
  if (message.body_length < 0) return CorruptionError("negative message body length");
  MessageExtent extent;
  extent.body_offset = frame.body_offset;
  extent.body_length = static_cast<uint64_t>(message.body_length);
  if (message.type == MessageType::kRecordBatch) {
    DOCFEED_ASSIGN_OR_RETURN(RecordBatchMeta meta, DecodeRecordBatch(message.header));
    extent.compressed = meta.codec.has_value();
  }
  return extent;
}

Result<BatchLayout> StreamReader::ReadLayout(std::span<const uint8_t> head, uint64_t message_offset,
                                             uint64_t body_limit) const {
  const std::string where = Where(message_offset, -1);
  Result<Frame> frame = ReadFrame(head, 0);
  if (!frame.ok()) return frame.status().WithContext(where);
  if (frame->end_of_stream) return CorruptionError(where + ": no record batch there");
  Result<DecodedMessage> message = DecodeMessage(frame->metadata);
  if (!message.ok()) return message.status().WithContext(where);
  if (message->type != MessageType::kRecordBatch) {
    return CorruptionError(where + ": not a record batch message");
  }
  Result<RecordBatchMeta> meta = DecodeRecordBatch(message->header);
  if (!meta.ok()) return meta.status().WithContext(where);
  if (meta->codec) return UnsupportedError(where + ": compressed body");
  const auto body_length = static_cast<uint64_t>(message->body_length);
  if (body_length > body_limit) return CorruptionError(where + ": body runs past its bytes");
  BatchLayout layout;
  layout.num_rows = meta->length;
  for (const FieldNode& node : meta->nodes) layout.array_lengths.push_back(node.length);
  const uint64_t body = message_offset + frame->body_offset;
  for (const BufferSpec& b : meta->buffers) {
    const auto offset = static_cast<uint64_t>(b.offset);
    const auto length = static_cast<uint64_t>(b.length);
    if (b.offset < 0 || b.length < 0 || offset > body_length || length > body_length - offset) {
      return CorruptionError(where + ": buffer outside the body");
    }
    layout.buffers.push_back({body + offset, length});
  }
  return layout;
}

Status StreamReader::ReadBatchIn(std::span<const uint8_t> bytes, uint64_t base, uint64_t offset,
                                 RecordBatch* batch) const {
  const uint64_t message_offset = base + offset;
  uint64_t next_offset = 0;
  bool end_of_stream = false;
  const Status status =
      ReadBatchMessage(bytes, base, offset, -1, batch, &next_offset, &end_of_stream);
  if (!status.ok()) {
    batch->columns.clear();
    return status.WithContext(Where(message_offset, -1));
  }
  if (end_of_stream) {
    batch->columns.clear();
    return InvalidArgumentError(Where(message_offset, -1) +
                                ": no record batch there (end-of-stream marker or end of bytes)");
  }
  return Status::Ok();
}

}  // namespace docfeed::internal::arrow
