// A reader of the Thrift compact protocol, the encoding of Parquet's metadata (the footer's
// FileMetaData and every page header). Only decoding: docfeed never writes Parquet.
//
// Encoding (Apache Thrift, "Thrift Compact protocol encoding",
// https://github.com/apache/thrift/blob/master/doc/specs/thrift-compact-protocol.md):
//   - integers are ULEB128 varints; i16/i32/i64 are zigzag-encoded first;
//   - a struct is a sequence of fields ended by a 0 byte; a field header is one byte whose high
//     nibble is the field id's delta from the previous field (1..15, or 0 when a zigzag i16 id
//     follows) and whose low nibble is the type; booleans live in the type nibble
//     (1 true, 2 false);
//   - binary and string are a varint length and the bytes; a double is 8 little-endian bytes;
//   - a list or set header is one byte, size in the high nibble (15: a varint size follows) and
//     element type in the low; a map is a varint size then one byte of key and value types.
//
// Trust model: every byte may be hostile. Every read is bounds-checked, varints are capped at 10
// bytes, nesting at kMaxDepth, container sizes against the bytes left; errors are Corruption
// naming the byte position (callers add the file).
//
// Thread safety: a reader is a cursor; one thread at a time.
#ifndef DOCFEED_FORMAT_PARQUET_THRIFT_COMPACT_H_
#define DOCFEED_FORMAT_PARQUET_THRIFT_COMPACT_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "docfeed/status.h"

namespace docfeed::internal::parquet {

enum class ThriftType : uint8_t {
  kStop = 0,
  kTrue = 1,  // a boolean field whose value is true (in a list: a boolean element)
  kFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

class CompactReader {
 public:
  static constexpr int kMaxDepth = 32;

  explicit CompactReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  // Bytes consumed so far (a page header's size, once it is read).
  size_t position() const { return pos_; }

  // Enters a struct: field ids restart from 0. Corruption past kMaxDepth.
  Status BeginStruct();
  void EndStruct();
  // The next field's id and type; type kStop at the end of the struct.
  Status ReadFieldHeader(int16_t* id, ThriftType* type);

  // Values. `type` is the field's (or list element's) type, checked against what is asked:
  // Corruption for a mismatch (an i32 may be sent as kByte, kI16 or kI32, ...). A boolean field's
  // value is its type (kTrue, kFalse): ReadBool reads nothing.
  Result<bool> ReadBool(ThriftType type);
  Result<int32_t> ReadI32(ThriftType type);
  Result<int64_t> ReadI64(ThriftType type);
  Result<std::string_view> ReadBinary(ThriftType type);
  // A list or set header: element type and count (at most the bytes left, since every element
  // takes at least one byte).
  Status ReadListHeader(ThriftType type, ThriftType* element, int64_t* size);

  // Skips a value of `type` (nested structs and containers included).
  Status Skip(ThriftType type);

 private:
  Result<uint64_t> ReadVarint();
  Result<int64_t> ReadZigzag();
  Status Fail(std::string_view what) const;

  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  int depth_ = 0;
  int16_t last_id_[kMaxDepth + 1] = {};
};

}  // namespace docfeed::internal::parquet

#endif  // DOCFEED_FORMAT_PARQUET_THRIFT_COMPACT_H_
