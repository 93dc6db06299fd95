// Arrow IPC streaming-format reader: parses the schema message and record batches of a stream
// held in memory (typically a MappedFile), validating every byte it relies on.
//
// Stream layout (Arrow IPC "Streaming Format"; see src/format/arrow/README.md):
//   <schema message> <record batch message>* <EOS>
// Each message is [0xFFFFFFFF][int32 metadata size][flatbuffer Message, padded][body]; the
// pre-0.15 legacy framing omits the 0xFFFFFFFF. EOS is 0xFFFFFFFF 0x00000000 (or a legacy
// 0x00000000); a stream that ends exactly at a message boundary also ends cleanly.
//
// Trust model: every byte of the input may be corrupt. Open() and each batch read validate the
// flatbuffers, the message framing, every buffer range, array length, null count and offset
// buffer, so the accessors of ArrayView below can index without further checks. Errors are
// CorruptionError (or UnsupportedError for valid Arrow that docfeed does not handle), prefixed
// with the stream name and naming the batch index, file offset and column.
//
// Not validated: UTF-8 validity of string values (GetString returns the raw bytes), float
// contents, and the undefined bytes behind null slots.
#ifndef DOCFEED_FORMAT_ARROW_READER_H_
#define DOCFEED_FORMAT_ARROW_READER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "docfeed/status.h"
#include "format/arrow/schema.h"

namespace docfeed::internal::arrow {

// One column (or child array) of one record batch. Spans point into the stream bytes or into
// decompressed memory owned by the RecordBatch; `field` points into the schema, which the
// RecordBatch keeps alive. Valid as long as the RecordBatch and the stream bytes are.
//
// After a successful read, for i in [0, length):
//   - validity is empty (no nulls) or holds at least length bits, with null_count zero bits;
//   - fixed-width values hold length * width bytes (bits for bool);
//   - binary/list offsets hold length + 1 non-decreasing entries, the first >= 0 and the last
//     <= the values size (binary) or child length (list);
//   - fixed_size_list children hold length * list_size values, struct children >= length.
// Accessors abort on an out-of-range index (a caller bug) and assume the type matches
// (DCHECKed).
struct ArrayView {
  const Field* field = nullptr;
  int64_t length = 0;
  int64_t null_count = 0;
  int64_t offset = 0;                 // always 0: IPC arrays are not sliced
  std::span<const uint8_t> validity;  // empty when null_count == 0
  std::span<const uint8_t> offsets;   // binary-like and list types
  std::span<const uint8_t> values;    // fixed-width values, bool bits, or binary data
  std::vector<ArrayView> children;

  TypeId type() const { return field->type; }
  bool IsValid(int64_t i) const;
  bool IsNull(int64_t i) const { return !IsValid(i); }

  // binary, string, large_binary, large_string, fixed_size_binary. Empty for null slots.
  std::span<const uint8_t> GetBinary(int64_t i) const;
  std::string_view GetString(int64_t i) const;
  // Any integer type, date32/date64, timestamp (sign- or zero-extended; uint64 values above
  // INT64_MAX wrap, use GetUInt64).
  int64_t GetInt64(int64_t i) const;
  uint64_t GetUInt64(int64_t i) const;
  // halffloat, float, double.
  double GetDouble(int64_t i) const;
  bool GetBool(int64_t i) const;
  // The child index range [first, second) of slot i of a list, large_list or fixed_size_list.
  std::pair<int64_t, int64_t> GetListRange(int64_t i) const;
};

// One record batch. Move-only in practice (owns decompressed buffers that the views reference;
// moving keeps the views valid, copying would not, so copying is disabled).
struct RecordBatch {
  RecordBatch() = default;
  RecordBatch(RecordBatch&&) = default;
  RecordBatch& operator=(RecordBatch&&) = default;
  RecordBatch(const RecordBatch&) = delete;
  RecordBatch& operator=(const RecordBatch&) = delete;

  int64_t num_rows = 0;
  std::vector<ArrayView> columns;  // one per schema field
  int64_t batch_index = -1;        // 0-based record batch index in the stream (-1: unknown)
  // Offset of this batch's message in the stream: its 0xFFFFFFFF marker, or the length prefix
  // of legacy framing.
  uint64_t message_offset = 0;
  uint64_t body_offset = 0;  // offset of the message body in the stream
  uint64_t body_length = 0;
  // True when the body buffers were compressed: the views then point into owned memory, and
  // value positions do not correspond to stream offsets.
  bool compressed = false;

  std::shared_ptr<const Schema> schema;  // keeps ArrayView::field alive
  // Decompressed buffers. Each is at least as long as the views into it (a buffer reused by
  // ReadBatchAt(offset, batch) keeps its larger size), and after a reuse there may be more
  // buffers than views.
  std::vector<std::vector<uint8_t>> owned_buffers;
};

// Where the body buffers of one uncompressed record batch lie, from its message's metadata alone
// (StreamReader::ReadLayout): enough to find one value without reading the body.
struct BatchLayout {
  struct Range {
    uint64_t offset = 0;  // in the stream
    uint64_t length = 0;
  };
  int64_t num_rows = 0;
  std::vector<int64_t> array_lengths;  // per array of the flattened field tree (FieldNodes)
  std::vector<Range> buffers;          // per body buffer, each inside the body
};

// Reads an Arrow IPC stream. Does not own the bytes: they must outlive the reader and every
// RecordBatch it returns. Movable; Next() mutates the cursor, so one thread at a time; the const
// ReadBatchAt() may run concurrently with itself.
class StreamReader {
 public:
  // Parses and validates the schema message at the start of `stream_bytes`. `name` (e.g. the
  // file name) prefixes every error message. Corruption for malformed input, Unsupported for a
  // valid stream using features outside schema.h (dictionaries, other types, V1-V3 metadata).
  static Result<StreamReader> Open(std::span<const uint8_t> stream_bytes, std::string name);

  const Schema& schema() const { return *schema_; }
  const std::shared_ptr<const Schema>& shared_schema() const { return schema_; }
  const std::string& name() const { return name_; }

  // Reads and validates the next record batch into *batch. Returns false at the end of the
  // stream (EOS marker, or the bytes end exactly at a message boundary); later calls return
  // false again. A DictionaryBatch message yields Unsupported.
  Result<bool> Next(RecordBatch* batch);

  // Reads the record batch whose message starts at `message_offset` (a RecordBatch's
  // message_offset, or BatchLocation::message_offset from the writer). Does not move the cursor.
  // batch_index of the result is -1.
  Result<RecordBatch> ReadBatchAt(uint64_t message_offset) const;
  // The same into *batch, reusing the decompressed buffers it owns from an earlier read: a worker
  // that reads batch after batch into one RecordBatch allocates (and zero-fills) nothing once its
  // buffers are as large as the largest batch's. Views from the earlier read become invalid. On
  // error *batch holds no valid views but stays reusable.
  Status ReadBatchAt(uint64_t message_offset, RecordBatch* batch) const;
  // The same for a record batch message held on its own: `message_bytes` are the stream's bytes
  // from `message_offset` on (at least the whole message), e.g. one record batch read from a file
  // with a positioned read, parsed with this reader's schema. The views point into
  // `message_bytes` (which must outlive them) or into *batch's owned buffers; message_offset
  // and body_offset of the result are stream offsets.
  Status ReadBatchFrom(std::span<const uint8_t> message_bytes, uint64_t message_offset,
                       RecordBatch* batch) const;

  // The bytes a record batch message's framing and metadata take, from its first 8 bytes (the
  // marker and the metadata length): how much of it ReadLayout needs.
  static Result<uint64_t> MetadataEnd(std::span<const uint8_t> first_bytes);
  // Where the body of the message whose first MetadataEnd() bytes are `head` lies: what a reader
  // that fetches a stream message by message with positioned reads needs before it reads the
  // body (migrate reads its sources so, never through a mapping). Corruption for malformed
  // metadata.
  struct MessageExtent {
    uint64_t body_offset = 0;  // from the start of the message
    uint64_t body_length = 0;
    bool compressed = false;  // a record batch with compressed body buffers
  };
  static Result<MessageExtent> ReadExtent(std::span<const uint8_t> head);
  // The layout of the record batch message at stream offset `message_offset` whose first
  // MetadataEnd() bytes are `head`, with `body_limit` bytes available after them (the body must
  // fit). Corruption for malformed metadata or buffers outside the body; Unsupported for a
  // compressed body (its buffers are not at fixed stream offsets).
  Result<BatchLayout> ReadLayout(std::span<const uint8_t> head, uint64_t message_offset,
                                 uint64_t body_limit) const;

 private:
  StreamReader(std::span<const uint8_t> bytes, std::string name)
      : bytes_(bytes), name_(std::move(name)) {}

  // Reads one batch message at `offset` of `bytes`, which start at stream offset `base`;
  // *next_offset receives the stream offset after it. Sets *end_of_stream instead when an EOS
  // marker or the end of the bytes is found there.
  Status ReadBatchMessage(std::span<const uint8_t> bytes, uint64_t base, uint64_t offset,
                          int64_t batch_index, RecordBatch* batch, uint64_t* next_offset,
                          bool* end_of_stream) const;
  // ReadBatchAt / ReadBatchFrom: the batch at `offset` of `bytes` (stream offset base + offset).
  Status ReadBatchIn(std::span<const uint8_t> bytes, uint64_t base, uint64_t offset,
                     RecordBatch* batch) const;
  std::string Where(uint64_t offset, int64_t batch_index) const;

  std::span<const uint8_t> bytes_;
  std::string name_;
  std::shared_ptr<const Schema> schema_;
  uint64_t cursor_ = 0;
  int64_t next_batch_index_ = 0;
  bool done_ = false;
};

}  // namespace docfeed::internal::arrow

#endif  // DOCFEED_FORMAT_ARROW_READER_H_
