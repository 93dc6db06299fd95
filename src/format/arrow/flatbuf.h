// Minimal FlatBuffers support for Arrow IPC metadata: a bounds-checked reader for tables,
// vectors and strings in untrusted bytes, and a small builder for the tables docfeed writes.
//
// Binary format (FlatBuffers "Internals", https://flatbuffers.dev/internals/):
//   - A buffer starts with a uoffset_t (uint32, little-endian) to the root table.
//   - A table starts with a soffset_t (int32): vtable position = table position - soffset.
//   - A vtable is uint16 values: [vtable size in bytes, table inline size in bytes, one offset
//     per field slot relative to the table start (0 = field absent, use the default)].
//   - Reference fields (tables, vectors, strings) hold a uoffset_t relative to the field's own
//     position; uoffsets are unsigned, so referenced objects always lie after the reference.
//   - A vector or string is a uint32 element count followed by the elements (strings also
//     have a trailing NUL byte, which this reader does not require).
//   - A union field takes two slots: the uint8 type tag, then the uoffset to the value table.
//
// Reader contract: every accessor checks that the bytes it reads lie inside the buffer given to
// Table::Root(), so arbitrary (corrupt or hostile) input yields a Status, never an out-of-bounds
// read. Errors are CorruptionError with a message that names the byte position; callers add the
// file and message context. Views do not own bytes: the buffer must outlive them.
//
// Thread safety: readers are immutable values; a Builder is single-threaded.
#ifndef DOCFEED_FORMAT_ARROW_FLATBUF_H_
#define DOCFEED_FORMAT_ARROW_FLATBUF_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "docfeed/status.h"

namespace docfeed::internal::arrow::flatbuf {

// Little-endian load of a trivially copyable value. REQUIRES: pos + sizeof(T) <= bytes.size().
template <typename T>
T LoadLE(std::span<const uint8_t> bytes, size_t pos) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  std::memcpy(&value, bytes.data() + pos, sizeof(T));
  return value;  // docfeed targets little-endian hosts only (as does Arrow's default).
}

class Table;

// A vector inside a flatbuffer: `size()` elements of `element_size` bytes each, all validated
// to lie in the buffer when the Vector was obtained.
class Vector {
 public:
  Vector() = default;
  size_t size() const { return size_; }

  // Element i as raw bytes (for struct vectors such as Arrow's FieldNode and Buffer).
  // REQUIRES: i < size().
  std::span<const uint8_t> ElementBytes(size_t i) const {
    return buf_.subspan(data_pos_ + i * element_size_, element_size_);
  }
  // REQUIRES: i < size() and sizeof(T) == element size.
  template <typename T>
  T ScalarAt(size_t i) const {
    return LoadLE<T>(buf_, data_pos_ + i * element_size_);
  }
  // Follows the uoffset stored in element i (a vector of tables). REQUIRES: i < size().
  Result<Table> TableAt(size_t i) const;
  // Follows the uoffset stored in element i (a vector of strings). REQUIRES: i < size().
  Result<std::string_view> StringAt(size_t i) const;

 private:
  friend class Table;
  Vector(std::span<const uint8_t> buf, size_t data_pos, size_t size, size_t element_size)
      : buf_(buf), data_pos_(data_pos), size_(size), element_size_(element_size) {}

  std::span<const uint8_t> buf_;
  size_t data_pos_ = 0;
  size_t size_ = 0;
  size_t element_size_ = 1;
};

// A validated view of one table: its vtable and inline data lie inside the buffer.
class Table {
 public:
  // The root table of `buffer`. Corruption if the root offset or the table is out of bounds.
  static Result<Table> Root(std::span<const uint8_t> buffer);
  // The table at byte `pos` of `buffer`, validated.
  static Result<Table> At(std::span<const uint8_t> buffer, size_t pos);

  Table() = default;

  // True when the vtable has a non-zero entry for `slot`.
  bool HasField(int slot) const { return FieldOffset(slot) != 0; }

  // A scalar field (integer, bool as uint8, enum), or `default_value` when absent.
  template <typename T>
  Result<T> GetScalar(int slot, T default_value) const {
    DOCFEED_ASSIGN_OR_RETURN(std::optional<size_t> pos, FieldPosition(slot, sizeof(T)));
    if (!pos.has_value()) return default_value;
    return LoadLE<T>(buf_, *pos);
  }
  // A sub-table field; nullopt when absent.
  Result<std::optional<Table>> GetTable(int slot) const;
  // A string field; nullopt when absent.
  Result<std::optional<std::string_view>> GetString(int slot) const;
  // A vector field whose elements are `element_size` bytes (4 for tables and strings); an
  // empty vector when absent.
  Result<Vector> GetVector(int slot, size_t element_size) const;

  size_t position() const { return pos_; }

 private:
  Table(std::span<const uint8_t> buf, size_t pos, size_t vtable_pos, uint16_t vtable_size,
        uint16_t table_size)
      : buf_(buf),
        pos_(pos),
        vtable_pos_(vtable_pos),
        vtable_size_(vtable_size),
        table_size_(table_size) {}

  // The vtable entry for `slot`, 0 when absent or beyond the vtable.
  uint16_t FieldOffset(int slot) const;
  // The absolute position of a field of `size` bytes, checked to lie in the table.
  Result<std::optional<size_t>> FieldPosition(int slot, size_t size) const;
  // The absolute position a uoffset field points to; nullopt when the field is absent.
  Result<std::optional<size_t>> FollowOffset(int slot) const;

  std::span<const uint8_t> buf_;
  size_t pos_ = 0;
  size_t vtable_pos_ = 0;
  uint16_t vtable_size_ = 0;
  uint16_t table_size_ = 0;
};

// Builds a flatbuffer back to front, like the reference implementation: objects referenced by a
// table are created before the table, so they end up after it and every uoffset is positive.
// Object references (Ref) are distances from the end of the buffer.
//
// Usage: create strings/vectors/sub-tables, then StartTable(), Add*() fields, EndTable(); at
// most one table is open at a time. Finish() returns the buffer, its size a multiple of 8.
class Builder {
 public:
  using Ref = uint32_t;

  Ref CreateString(std::string_view text);
  // A vector of `count` structs of `struct_size` bytes stored in `bytes`, aligned to 8.
  // REQUIRES: bytes.size() == count * struct_size and struct_size is a multiple of 8.
  Ref CreateStructVector(std::span<const uint8_t> bytes, size_t count);
  // A vector of references to tables or strings.
  Ref CreateRefVector(std::span<const Ref> refs);

  void StartTable();
  template <typename T>
  void AddScalar(int slot, T value) {
    static_assert(std::is_integral_v<T>);
    Align(sizeof(T));
    Prepend(&value, sizeof(T));
    RecordField(slot);
  }
  void AddRef(int slot, Ref ref);
  Ref EndTable();

  // Writes the root offset and returns the finished buffer (size a multiple of 8).
  std::vector<uint8_t> Finish(Ref root);

 private:
  void Prepend(const void* data, size_t size_bytes);
  void PrependZeros(size_t count);
  // Pads so that the next object, of `size_bytes` prepended after the padding, ends aligned.
  void Align(size_t alignment, size_t size_bytes = 0);
  void RecordField(int slot);
  uint32_t size() const { return static_cast<uint32_t>(size_); }

  std::vector<uint8_t> buf_;  // bytes occupy the last size_ positions of buf_
  size_t size_ = 0;
  bool table_open_ = false;
  size_t table_start_ = 0;
  std::vector<std::pair<int, uint32_t>> fields_;  // (slot, ref) of the open table
};

}  // namespace docfeed::internal::arrow::flatbuf

#endif  // DOCFEED_FORMAT_ARROW_FLATBUF_H_
