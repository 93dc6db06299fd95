#include "migrate/source_stream.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "format/arrow/schema.h"

namespace docfeed::internal::migrate {
namespace {

uint64_t PageSize() {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

// Arrays of `field`'s tree in pre-order, counting their buffers into *buffers.
void CountBuffers(const arrow::Field& field, size_t* buffers) {
  *buffers += static_cast<size_t>(arrow::BufferCount(field.type));
  for (const arrow::Field& child : field.children) CountBuffers(child, buffers);
}

}  // namespace

// --- SparseBuffer ---

SparseBuffer::SparseBuffer(SparseBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

SparseBuffer& SparseBuffer::operator=(SparseBuffer&& other) noexcept {
  if (this != &other) {
    Unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

SparseBuffer::~SparseBuffer() { Unmap(); }

void SparseBuffer::Unmap() {
  if (data_ != nullptr) ::munmap(data_, capacity_);
  data_ = nullptr;
  size_ = capacity_ = 0;
}

Status SparseBuffer::Resize(uint64_t size) {
  if (size <= capacity_) {
    Release(0, size_);  // gives the last message's pages back
    size_ = size;
    return Status::Ok();
  }
  Unmap();
  const uint64_t capacity = (size + PageSize() - 1) / PageSize() * PageSize();
  // MAP_NORESERVE: a batch of many large tensors is only ever resident one tensor at a time, so
  // its size must not count against the commit limit.
  void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return ResourceExhaustedError("cannot reserve " + std::to_string(size) +
                                  " bytes for a record batch: " + std::strerror(errno));
  }
  data_ = static_cast<uint8_t*>(p);
  size_ = size;
  capacity_ = capacity;
  return Status::Ok();
}

void SparseBuffer::Release(uint64_t offset, uint64_t length) {
  const uint64_t page = PageSize();
  const uint64_t begin = (offset + page - 1) / page * page;
  const uint64_t end = std::min(offset + length, capacity_) / page * page;
  if (data_ != nullptr && begin < end) ::madvise(data_ + begin, end - begin, MADV_DONTNEED);
}

// --- SourceStream ---

Result<SourceStream> SourceStream::Open(Env* env, const std::string& path, std::string label) {
  SourceStream s;
  s.label_ = std::move(label);
  Result<std::unique_ptr<RandomAccessFile>> file = env->NewRandomAccessFile(path);
  if (!file.ok()) return file.status().WithContext(s.label_);
  s.file_ = std::move(file).value();
  // The schema message: its framing, then its metadata (a schema message has no body).
  std::array<uint8_t, 8> first{};
  if (s.size_bytes() < first.size()) {
    return CorruptionError(s.label_ + ": " + std::to_string(s.size_bytes()) +
                           " bytes, too short for an Arrow stream");
  }
  DOCFEED_RETURN_IF_ERROR(s.ReadAt(0, first.size(), first.data()));
  Result<uint64_t> head = arrow::StreamReader::MetadataEnd(first);
  if (!head.ok()) return head.status().WithContext(s.label_ + ": schema message at offset 0");
  if (*head > s.size_bytes()) {
    return CorruptionError(s.label_ + ": the schema message runs past the end of the " +
                           std::to_string(s.size_bytes()) + "-byte file");
  }
  s.schema_bytes_.resize(*head);
  DOCFEED_RETURN_IF_ERROR(s.ReadAt(0, *head, s.schema_bytes_.data()));
  DOCFEED_ASSIGN_OR_RETURN(arrow::StreamReader reader,
                           arrow::StreamReader::Open(s.schema_bytes_, s.label_));
  s.reader_.emplace(std::move(reader));
  s.cursor_ = *head;
  return s;
}

Status SourceStream::ReadAt(uint64_t offset, uint64_t length, uint8_t* out) const {
  return file_->ReadAt(offset, std::span<uint8_t>(out, length)).WithContext(label_);
}

Result<bool> SourceStream::Next(arrow::RecordBatch* batch) {
  if (done_) return false;
  const uint64_t size = size_bytes();
  const uint64_t left = size - cursor_;
  const std::string batch_name = "record batch " + std::to_string(next_batch_index_);
  const std::string where =
      label_ + ": " + batch_name + " message at offset " + std::to_string(cursor_);
  // Reads of this message name it: a short read means the file was cut under the reader.
  auto read = [&](uint64_t offset, uint64_t n, uint8_t* out) {
    return ReadAt(offset, n, out).WithContext(batch_name);
  };
  std::array<uint8_t, 8> first{};
  if (left >= 4) {
    DOCFEED_RETURN_IF_ERROR(read(cursor_, std::min<uint64_t>(left, 8), first.data()));
  }
  const uint32_t word0 = static_cast<uint32_t>(first[0]) | static_cast<uint32_t>(first[1]) << 8 |
                         static_cast<uint32_t>(first[2]) << 16 |
                         static_cast<uint32_t>(first[3]) << 24;
  const bool legacy_eos = left >= 4 && word0 == 0;
  const bool eos = left >= 8 && word0 == 0xFFFFFFFFu && first[4] == 0 && first[5] == 0 &&
                   first[6] == 0 && first[7] == 0;
  if (left == 0 || legacy_eos || eos) {
    done_ = true;
    return false;
  }
  done_ = true;  // until this message is read whole: a corrupt stream has no next boundary
  if (left < 8) return CorruptionError(where + ": truncated message length prefix");
  Result<uint64_t> head_end = arrow::StreamReader::MetadataEnd(first);
  if (!head_end.ok()) return head_end.status().WithContext(where);
  if (*head_end > left) return CorruptionError(where + ": metadata runs past the end of the file");
  DOCFEED_RETURN_IF_ERROR(message_.Resize(*head_end));
  DOCFEED_RETURN_IF_ERROR(read(cursor_, *head_end, message_.data()));
  Result<arrow::StreamReader::MessageExtent> extent = arrow::StreamReader::ReadExtent(
      std::span<const uint8_t>(message_.data(), static_cast<size_t>(*head_end)));
  if (!extent.ok()) return extent.status().WithContext(where);
  if (extent->body_length > left - extent->body_offset) {
    return CorruptionError(where + ": body of " + std::to_string(extent->body_length) +
                           " bytes runs past the end of the " + std::to_string(size) +
                           "-byte file");
  }
  std::vector<uint8_t> head(message_.data(), message_.data() + *head_end);
  const uint64_t length = extent->body_offset + extent->body_length;
  DOCFEED_RETURN_IF_ERROR(message_.Resize(length));
  std::memcpy(message_.data(), head.data(), head.size());
  message_offset_ = cursor_;
  // The body, all of it or all but the deferred buffer.
  uint64_t skip_begin = length;
  uint64_t skip_end = length;
  batch_deferred_ = false;
  if (deferred_ && !extent->compressed) {
    // Offsets from the message start. A message it cannot lay out is read whole, so that
    // ReadBatchFrom gives its own error (e.g. Unsupported for a DictionaryBatch).
    Result<arrow::BatchLayout> layout = reader_->ReadLayout(head, 0, extent->body_length);
    if (layout.ok() && *deferred_ < layout->buffers.size()) {
      skip_begin = layout->buffers[*deferred_].offset;
      skip_end = skip_begin + layout->buffers[*deferred_].length;
      batch_deferred_ = true;
    }
  }
  const uint64_t body = extent->body_offset;
  if (skip_begin > body) {
    DOCFEED_RETURN_IF_ERROR(read(cursor_ + body, skip_begin - body, message_.data() + body));
  }
  if (skip_end < length) {
    DOCFEED_RETURN_IF_ERROR(
        read(cursor_ + skip_end, length - skip_end, message_.data() + skip_end));
  }
  DOCFEED_RETURN_IF_ERROR(
      reader_
          ->ReadBatchFrom(std::span<const uint8_t>(message_.data(), static_cast<size_t>(length)),
                          cursor_, batch)
          .WithContext(batch_name));
  batch->batch_index = next_batch_index_++;
  cursor_ += length;
  done_ = false;
  return true;
}

Result<uint64_t> SourceStream::OffsetInMessage(std::span<const uint8_t> bytes) const {
  const uint8_t* base = message_.data();
  if (bytes.empty()) return 0;
  if (base == nullptr || bytes.data() < base ||
      bytes.data() + bytes.size() > base + message_.size()) {
    return InternalError(label_ + ": a range outside the current record batch message");
  }
  return static_cast<uint64_t>(bytes.data() - base);
}

Result<uint64_t> SourceStream::FileOffset(std::span<const uint8_t> bytes) const {
  DOCFEED_ASSIGN_OR_RETURN(uint64_t at, OffsetInMessage(bytes));
  return message_offset_ + at;
}

Result<std::span<const uint8_t>> SourceStream::Fetch(std::span<const uint8_t> bytes) {
  if (!batch_deferred_ || bytes.empty()) return bytes;
  DOCFEED_ASSIGN_OR_RETURN(uint64_t at, OffsetInMessage(bytes));
  if (row_.size() < bytes.size()) row_.resize(bytes.size());
  DOCFEED_RETURN_IF_ERROR(ReadAt(message_offset_ + at, bytes.size(), row_.data()));
  return std::span<const uint8_t>(row_.data(), bytes.size());
}

size_t TensorValuesBuffer(const arrow::Schema& schema, size_t column) {
  size_t buffers = 0;
  for (size_t i = 0; i < column; ++i) CountBuffers(schema.fields[i], &buffers);
  CountBuffers(schema.fields[column], &buffers);  // the leaf's values buffer is its last
  return buffers - 1;
}

size_t StructChildDataBuffer(const arrow::Schema& schema, size_t column, size_t child) {
  size_t buffers = 0;
  for (size_t i = 0; i < column; ++i) CountBuffers(schema.fields[i], &buffers);
  const arrow::Field& parent = schema.fields[column];
  buffers += static_cast<size_t>(arrow::BufferCount(parent.type));
  for (size_t i = 0; i < child; ++i) CountBuffers(parent.children[i], &buffers);
  CountBuffers(parent.children[child], &buffers);  // validity, offsets, data: data is last
  return buffers - 1;
}

size_t ListStructChildDataBuffer(const arrow::Schema& schema, size_t column, size_t child) {
  size_t buffers = 0;
  for (size_t i = 0; i < column; ++i) CountBuffers(schema.fields[i], &buffers);
  const arrow::Field& list = schema.fields[column];
  const arrow::Field& item = list.children[0];
  buffers += static_cast<size_t>(arrow::BufferCount(list.type));
  buffers += static_cast<size_t>(arrow::BufferCount(item.type));
  for (size_t i = 0; i < child; ++i) CountBuffers(item.children[i], &buffers);
  CountBuffers(item.children[child], &buffers);  // validity, offsets, data: data is last
  return buffers - 1;
}

}  // namespace docfeed::internal::migrate
