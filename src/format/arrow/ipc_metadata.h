// Arrow IPC metadata: the FlatBuffers tables of Arrow's Message.fbs and Schema.fbs that docfeed
// uses, decoded from untrusted bytes into plain structs and encoded back.
//
// Reference: "Arrow IPC format" (https://arrow.apache.org/docs/format/Columnar.html#serialization-
// and-interprocess-communication-ipc) and the schema files format/Message.fbs, format/Schema.fbs.
// Slot numbers below are the field ids of those tables (a union field takes two slots: the type
// tag, then the value).
//
// Internal to src/format/arrow; the public surface is reader.h and writer.h.
#ifndef DOCFEED_FORMAT_ARROW_IPC_METADATA_H_
#define DOCFEED_FORMAT_ARROW_IPC_METADATA_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "docfeed/status.h"
#include "format/arrow/flatbuf.h"
#include "format/arrow/schema.h"

namespace docfeed::internal::arrow {

// Message.fbs `MessageHeader` union tags.
enum class MessageType : uint8_t {
  kNone = 0,
  kSchema = 1,
  kDictionaryBatch = 2,
  kRecordBatch = 3,
  kTensor = 4,
  kSparseTensor = 5,
};

// Schema.fbs `MetadataVersion` (V1 = 0 ... V5 = 4). docfeed reads V4 and V5, writes V5.
inline constexpr int16_t kMetadataV4 = 3;
inline constexpr int16_t kMetadataV5 = 4;

// Message.fbs `CompressionType`.
enum class CompressionCodec : int8_t { kLz4Frame = 0, kZstd = 1 };

// Message.fbs `FieldNode` struct: one per array in the flattened (pre-order) field tree.
struct FieldNode {
  int64_t length = 0;
  int64_t null_count = 0;
};

// Message.fbs `Buffer` struct: a range of the message body.
struct BufferSpec {
  int64_t offset = 0;  // relative to the start of the body
  int64_t length = 0;
};

struct RecordBatchMeta {
  int64_t length = 0;  // rows
  std::vector<FieldNode> nodes;
  std::vector<BufferSpec> buffers;
  std::optional<CompressionCodec> codec;  // set when the body buffers are compressed
};

// The decoded `Message` table. `header` is the union value (a Schema, RecordBatch, ... table).
struct DecodedMessage {
  int16_t version = 0;
  MessageType type = MessageType::kNone;
  int64_t body_length = 0;
  flatbuf::Table header;
};

// Decodes a Message flatbuffer. Corruption on malformed bytes, a negative body length or a
// missing header; Unsupported for metadata versions before V4.
Result<DecodedMessage> DecodeMessage(std::span<const uint8_t> metadata);

// Decodes a Schema table. Unsupported (naming the field) for dictionary-encoded fields, types
// outside schema.h and big-endian schemas; Corruption for malformed tables.
Result<Schema> DecodeSchema(const flatbuf::Table& schema);

// Decodes a RecordBatch table. Corruption for negative lengths, unknown codecs or malformed
// tables. Vector sizes are bounded by the metadata size, so allocation is bounded too.
Result<RecordBatchMeta> DecodeRecordBatch(const flatbuf::Table& batch);

// Encodes a complete V5 Message holding `schema`. REQUIRES: ValidateSchema(schema).ok().
std::vector<uint8_t> EncodeSchemaMessage(const Schema& schema);
// Encodes a complete V5 Message holding `batch` with a body of `body_length` bytes.
std::vector<uint8_t> EncodeRecordBatchMessage(const RecordBatchMeta& batch, int64_t body_length);

}  // namespace docfeed::internal::arrow

#endif  // DOCFEED_FORMAT_ARROW_IPC_METADATA_H_
