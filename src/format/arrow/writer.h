// Arrow IPC streaming-format writer: writes a schema message, record batches built with
// ArrayBuilder, and the end-of-stream marker, in the structure pyarrow itself produces, so the
// output opens with pyarrow.ipc.open_stream and (inside a save_to_disk directory) with Hugging
// Face datasets.load_from_disk.
//
// Output layout (Arrow IPC "Streaming Format"):
//   - metadata version V5, every message framed as 0xFFFFFFFF, int32 metadata size, flatbuffer
//     Message padded to 8 bytes, body;
//   - messages and body buffers start at 8-byte aligned file offsets (the IPC minimum, and what
//     pyarrow writes by default); each buffer is padded with zeros to a multiple of 8;
//   - a validity buffer is written with length 0 when its array has no nulls;
//   - schema and field custom_metadata are written as given;
//   - Close() appends the EOS marker 0xFFFFFFFF 0x00000000.
// With Compression::kZstd or kLz4Frame, every non-empty buffer is stored as an int64
// uncompressed length + compressed bytes (or -1 + raw bytes when compression does not help),
// and the RecordBatch carries BodyCompression so readers decompress transparently.
#ifndef DOCFEED_FORMAT_ARROW_WRITER_H_
#define DOCFEED_FORMAT_ARROW_WRITER_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/file.h"
#include "docfeed/status.h"
#include "format/arrow/builder.h"
#include "format/arrow/schema.h"

namespace docfeed::internal::arrow {

enum class Compression { kNone, kZstd, kLz4Frame };

// Absolute file range of one written body buffer. With compression it covers the stored bytes
// (length prefix + compressed data), not the values; the length excludes alignment padding.
struct BufferLocation {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Where a record batch landed in the file.
struct BatchLocation {
  uint64_t message_offset = 0;  // the batch's 0xFFFFFFFF marker; pass to ReadBatchAt()
  uint64_t body_offset = 0;
  uint64_t body_length = 0;
  // One per IPC buffer, in IPC order: the pre-order walk of the schema's fields, each array
  // contributing validity, then offsets and/or values as its type requires (see BufferCount()).
  std::vector<BufferLocation> buffers;
};

// Writes one stream file. Move-only. Not thread-safe. After any error the writer refuses
// further writes (the file is incomplete and should be discarded).
class StreamWriter {
 public:
  // Creates (truncates) `path` and writes the schema message. InvalidArgument for an invalid
  // schema (see ValidateSchema), IOError when the file cannot be written.
  // Writes through `env` (Env::Default() when null).
  static Result<StreamWriter> Create(const std::string& path, Schema schema,
                                     Compression compression = Compression::kNone,
                                     Env* env = nullptr);

  StreamWriter(StreamWriter&&) = default;
  StreamWriter& operator=(StreamWriter&&) = default;
  StreamWriter(const StreamWriter&) = delete;
  StreamWriter& operator=(const StreamWriter&) = delete;

  const Schema& schema() const { return schema_; }

  // Writes one record batch from `columns` (one builder per schema field, in order, with the
  // field's type and name and equal lengths) and Reset()s the builders. Returns where each
  // buffer landed. InvalidArgument (builders untouched) if the builders do not match the schema
  // or are inconsistent; IOError on write failure. A batch may have zero rows.
  Result<BatchLocation> WriteBatch(std::span<ArrayBuilder> columns);

  // Writes the EOS marker, flushes and fsyncs. Must be called once; the file is a valid stream
  // only afterwards.
  Status Close();

  // Bytes written so far (the offset the next message will start at).
  uint64_t size_bytes() const { return file_.size_bytes(); }

 private:
  StreamWriter(SequentialFile file, Schema schema, Compression compression)
      : file_(std::move(file)), schema_(std::move(schema)), compression_(compression) {}

  Status CheckColumns(std::span<ArrayBuilder> columns) const;
  // Appends the 0xFFFFFFFF marker, the metadata size and `metadata` (a multiple of 8 bytes).
  Status WriteMessageHeader(std::span<const uint8_t> metadata);
  // Appends `bytes` followed by zero padding to a multiple of 8.
  Status WritePadded(std::span<const uint8_t> bytes);

  SequentialFile file_;
  Schema schema_;
  Compression compression_ = Compression::kNone;
  bool failed_ = false;
  bool closed_ = false;
};

}  // namespace docfeed::internal::arrow

#endif  // DOCFEED_FORMAT_ARROW_WRITER_H_
