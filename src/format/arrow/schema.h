// The Arrow type model docfeed reads and writes: a subset of the Arrow columnar format's logical
// types (https://arrow.apache.org/docs/format/Columnar.html), enough for the datasets Hugging Face
// `datasets` saves (strings, integers, floats, bools, binary images, fixed-size and variable
// lists, structs, dates and timestamps).
//
// Types outside this list (decimal, time, duration, interval, map, union, view types, run-end
// encoding, dictionary encoding) are rejected when a schema is read, with an Unsupported error
// that names the field.
//
// Values of these types are plain data: copy freely; no thread-safety concerns.
#ifndef DOCFEED_FORMAT_ARROW_SCHEMA_H_
#define DOCFEED_FORMAT_ARROW_SCHEMA_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "docfeed/status.h"

namespace docfeed::internal::arrow {

enum class TypeId : uint8_t {
  kNull,
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kFloat16,
  kFloat32,
  kFloat64,
  kBinary,           // int32 offsets
  kLargeBinary,      // int64 offsets
  kString,           // UTF-8, int32 offsets
  kLargeString,      // UTF-8, int64 offsets
  kFixedSizeBinary,  // Field::fixed_size bytes per value
  kDate32,           // int32 days since the UNIX epoch
  kDate64,           // int64 milliseconds since the UNIX epoch
  kTimestamp,        // int64 in Field::time_unit since the UNIX epoch, Field::timezone
  kList,             // int32 offsets, one child
  kLargeList,        // int64 offsets, one child
  kFixedSizeList,    // Field::fixed_size child values per slot, one child
  kStruct,           // any number of children
};

enum class TimeUnit : uint8_t { kSecond, kMilli, kMicro, kNano };

using KeyValueMetadata = std::vector<std::pair<std::string, std::string>>;

struct Field {
  std::string name;
  TypeId type = TypeId::kNull;
  bool nullable = true;  // metadata only: not enforced by the builders or the reader
  // Values per slot for kFixedSizeList, bytes per value for kFixedSizeBinary; 0 otherwise.
  int32_t fixed_size = 0;
  TimeUnit time_unit = TimeUnit::kSecond;  // kTimestamp only
  std::string timezone;                    // kTimestamp only; empty for a naive timestamp
  std::vector<Field> children;             // one for lists, any number for structs
  KeyValueMetadata metadata;               // the field's custom_metadata

  bool operator==(const Field&) const = default;
};

struct Schema {
  std::vector<Field> fields;
  KeyValueMetadata metadata;  // the schema's custom_metadata (`datasets` uses "huggingface")

  // The value stored under `key`, or nullptr.
  const std::string* FindMetadata(std::string_view key) const;
  bool operator==(const Schema&) const = default;
};

// Convenience constructors.
Field MakeField(std::string name, TypeId type, bool nullable = true);
Field MakeList(std::string name, Field item, bool nullable = true);  // kList
Field MakeLargeList(std::string name, Field item, bool nullable = true);
Field MakeFixedSizeList(std::string name, Field item, int32_t list_size, bool nullable = true);
Field MakeFixedSizeBinary(std::string name, int32_t byte_width, bool nullable = true);
Field MakeStruct(std::string name, std::vector<Field> children, bool nullable = true);
Field MakeTimestamp(std::string name, TimeUnit unit, std::string timezone = "",
                    bool nullable = true);

// The type as pyarrow prints it: "int64", "string", "struct<bytes: binary, path: string>",
// "list<item: int64>", "fixed_size_list<item: float>[2]", "timestamp[us, tz=UTC]".
std::string TypeToString(const Field& field);
// The short type name ("int64", "list", ...), used in error messages.
std::string_view TypeIdName(TypeId type);

// True when both fields have the same type (recursively, including child names); the field
// names, nullability and metadata of `a` and `b` themselves are ignored.
bool SameType(const Field& a, const Field& b);

// Checks the structural rules: lists have exactly one child, other non-struct types none, fixed
// sizes are non-negative, nesting is at most kMaxNestingDepth deep. (Duplicate names are allowed,
// as in Arrow.) InvalidArgument naming the field otherwise.
Status ValidateSchema(const Schema& schema);
inline constexpr int kMaxNestingDepth = 64;

// Physical layout helpers.
bool IsBinaryLike(TypeId type);     // binary, string and their large variants
bool IsListLike(TypeId type);       // list, large_list, fixed_size_list
bool HasLargeOffsets(TypeId type);  // large_binary, large_string, large_list
// Bytes per value of a fixed-width type (1 for int8 ... 8 for int64/float64/date64/timestamp,
// fixed_size for fixed_size_binary); 0 for bool (bit-packed), null and non-fixed-width types.
int64_t FixedWidthBytes(const Field& field);
// Number of IPC body buffers one array of this type contributes (children not included).
int BufferCount(TypeId type);

}  // namespace docfeed::internal::arrow

#endif  // DOCFEED_FORMAT_ARROW_SCHEMA_H_
