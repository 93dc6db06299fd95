// An Arrow IPC stream file of a migration's source, read message by message with positioned reads
// (Env::RandomAccessFile), never through a mapping: a source truncated or rewritten while it is
// read gives an error naming the file, never SIGBUS.
//
// Memory stays bounded whatever the batch size: each record batch message is read into an
// anonymous, lazily committed mapping laid out as the message is, so the Arrow reader's views
// work unchanged. Every buffer is read at once except one (`deferred_buffer`, the pixel
// tensor's float values, which are most of the bytes): its pages are never touched, so never
// committed. The caller reads it row by row with Fetch(), into one row buffer the stream reuses
// (its pages stay resident, so a row costs one copy and no page faults). A compressed batch is
// read whole (Arrow decompresses whole buffers anyway).
#ifndef DOCFEED_MIGRATE_SOURCE_STREAM_H_
#define DOCFEED_MIGRATE_SOURCE_STREAM_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/env.h"
#include "docfeed/status.h"
#include "format/arrow/reader.h"

namespace docfeed::internal::migrate {

// Anonymous memory reserved without being committed: pages cost nothing until written, and
// Release() gives written ones back. Move-only.
class SparseBuffer {
 public:
  SparseBuffer() = default;
  SparseBuffer(SparseBuffer&& other) noexcept;
  SparseBuffer& operator=(SparseBuffer&& other) noexcept;
  ~SparseBuffer();

  // Makes the buffer `size` bytes long. Keeps the mapping when it is large enough (its whole
  // pages then read as zero, the partly used ones keep their bytes: a reader overwrites what it
  // uses).
  Status Resize(uint64_t size);
  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  // Hands the whole pages inside [offset, offset + length) back to the kernel (they read as zero).
  void Release(uint64_t offset, uint64_t length);

 private:
  void Unmap();
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;      // bytes in use
  uint64_t capacity_ = 0;  // bytes mapped
};

class SourceStream {
 public:
  // Opens `path` and reads its schema message. `label` prefixes every error (the source's name
  // in the migration, e.g. "train/data-00000-of-00001.arrow").
  static Result<SourceStream> Open(Env* env, const std::string& path, std::string label);

  const arrow::Schema& schema() const { return reader_->schema(); }
  uint64_t size_bytes() const { return file_->size_bytes(); }

  // The buffer (in the pre-order of the schema's arrays, see arrow::BufferCount) that Next()
  // leaves unread in uncompressed batches; none by default.
  void set_deferred_buffer(std::optional<size_t> index) { deferred_ = index; }

  // Reads the next record batch into *batch; false at the end of the stream. The views stay
  // valid until the next call. The deferred buffer's bytes are undefined until fetched.
  Result<bool> Next(arrow::RecordBatch* batch);
  // True when the current batch left its deferred buffer unread (an uncompressed batch).
  bool batch_deferred() const { return batch_deferred_; }
  // The file offset of `bytes`, a range of the current batch's message (e.g. of the deferred
  // buffer). Internal error for a range outside it.
  Result<uint64_t> FileOffset(std::span<const uint8_t> bytes) const;
  // The bytes of `bytes`, a range of the current batch's deferred buffer (e.g. one row's
  // tensor), read from the file into the row buffer; valid until the next Fetch() or Next().
  // `bytes` itself when nothing was deferred (they are already read).
  Result<std::span<const uint8_t>> Fetch(std::span<const uint8_t> bytes);

 private:
  SourceStream() = default;
  Status ReadAt(uint64_t offset, uint64_t length, uint8_t* out) const;
  // The offset of `bytes` in the current message, or an Internal error when they lie outside it.
  Result<uint64_t> OffsetInMessage(std::span<const uint8_t> bytes) const;

  std::string label_;
  std::unique_ptr<RandomAccessFile> file_;
  std::vector<uint8_t> schema_bytes_;  // viewed by reader_ (heap block stays put on move)
  std::optional<arrow::StreamReader> reader_;
  std::optional<size_t> deferred_;
  SparseBuffer message_;
  std::vector<uint8_t> row_;     // Fetch()'s, reused
  uint64_t message_offset_ = 0;  // in the file
  bool batch_deferred_ = false;  // the current batch left its deferred buffer unread
  uint64_t cursor_ = 0;
  int64_t next_batch_index_ = 0;
  bool done_ = false;
};

// The index of the float values buffer of the tensor column `column` (a list<list<list<float>>>,
// see source.h) among the buffers of a record batch of `schema`.
size_t TensorValuesBuffer(const arrow::Schema& schema, size_t column);

// The index of the data buffer of child `child` (binary-like, e.g. an Image column's `bytes`)
// of the struct column `column`, among the buffers of a record batch of `schema`.
size_t StructChildDataBuffer(const arrow::Schema& schema, size_t column, size_t child);
// The same for child `child` of the struct items of the list column `column` (a List(Image)
// column's image bytes).
size_t ListStructChildDataBuffer(const arrow::Schema& schema, size_t column, size_t child);

}  // namespace docfeed::internal::migrate

#endif  // DOCFEED_MIGRATE_SOURCE_STREAM_H_
