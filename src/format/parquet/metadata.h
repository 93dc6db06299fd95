// Parquet's metadata as plain structs: the footer's FileMetaData (schema, row groups, column
// chunks, key/value metadata) and the header in front of every page, decoded from the Thrift
// compact protocol (thrift_compact.h). Field ids and enum values are those of parquet.thrift
// (https://github.com/apache/parquet-format/blob/master/src/main/thrift/parquet.thrift); only
// what reading needs is kept, everything else is skipped.
//
// Decoding validates what the structs promise (see each field); the reader checks the rest
// against the file (offsets, sizes). Errors are Corruption naming the structure and field.
//
// Plain data; no thread-safety concerns.
#ifndef DOCFEED_FORMAT_PARQUET_METADATA_H_
#define DOCFEED_FORMAT_PARQUET_METADATA_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "docfeed/status.h"

namespace docfeed::internal::parquet {

enum class PhysicalType : int32_t {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kInt96 = 3,
  kFloat = 4,
  kDouble = 5,
  kByteArray = 6,
  kFixedLenByteArray = 7,
};

enum class Repetition : int32_t { kRequired = 0, kOptional = 1, kRepeated = 2 };

// ConvertedType values docfeed looks at (the others are kept as their number).
inline constexpr int32_t kConvertedUtf8 = 0;
inline constexpr int32_t kConvertedMap = 1;
inline constexpr int32_t kConvertedMapKeyValue = 2;
inline constexpr int32_t kConvertedList = 3;
inline constexpr int32_t kConvertedEnum = 4;
inline constexpr int32_t kConvertedDecimal = 5;
inline constexpr int32_t kConvertedDate = 6;
inline constexpr int32_t kConvertedTimestampMillis = 9;
inline constexpr int32_t kConvertedTimestampMicros = 10;
inline constexpr int32_t kConvertedUint8 = 11;  // .. kConvertedUint64 = 14
inline constexpr int32_t kConvertedInt8 = 15;   // .. kConvertedInt64 = 18
inline constexpr int32_t kConvertedJson = 19;

// The LogicalType union, flattened: which member was set, and its parameters.
struct LogicalType {
  enum Kind : int32_t {
    kNone = 0,
    kString = 1,
    kMap = 2,
    kList = 3,
    kEnum = 4,
    kDecimal = 5,
    kDate = 6,
    kTime = 7,
    kTimestamp = 8,
    kInteger = 10,
    kUnknown = 11,  // always null
    kJson = 12,
    kBson = 13,
    kUuid = 14,
    kFloat16 = 15,
    kOther = 99,  // a member this reader does not know
  };
  Kind kind = kNone;
  // kTimestamp/kTime: 0 millis, 1 micros, 2 nanos; utc: isAdjustedToUTC.
  int32_t unit = -1;
  bool utc = false;
  // kInteger.
  int32_t bit_width = 0;
  bool is_signed = true;
};

struct SchemaElement {
  std::optional<PhysicalType> type;               // absent for a group
  int32_t type_length = 0;                        // FIXED_LEN_BYTE_ARRAY
  Repetition repetition = Repetition::kRequired;  // the root's is absent (required)
  std::string name;
  int32_t num_children = 0;  // > 0 for a group
  int32_t converted_type = -1;
  LogicalType logical;
};

enum class Codec : int32_t {
  kUncompressed = 0,
  kSnappy = 1,
  kGzip = 2,
  kLzo = 3,
  kBrotli = 4,
  kLz4 = 5,  // Hadoop's framing, deprecated
  kZstd = 6,
  kLz4Raw = 7,
};
std::string CodecName(int32_t codec);

enum Encoding : int32_t {
  kPlain = 0,
  kPlainDictionary = 2,
  kRle = 3,
  kBitPacked = 4,
  kDeltaBinaryPacked = 5,
  kDeltaLengthByteArray = 6,
  kDeltaByteArray = 7,
  kRleDictionary = 8,
  kByteStreamSplit = 9,
};
std::string EncodingName(int32_t encoding);

struct ColumnChunk {
  std::string file_path;  // set when the chunk lives in another file (refused by the reader)
  PhysicalType type = PhysicalType::kBoolean;
  std::vector<std::string> path;  // path_in_schema
  int32_t codec = 0;
  int64_t num_values = 0;
  int64_t total_uncompressed_size = 0;
  int64_t total_compressed_size = 0;
  int64_t data_page_offset = 0;
  std::optional<int64_t> dictionary_page_offset;
  bool has_meta_data = false;
};

struct RowGroup {
  std::vector<ColumnChunk> columns;
  int64_t num_rows = 0;
};

struct FileMetaData {
  int32_t version = 0;
  std::vector<SchemaElement> schema;  // depth-first, the root first
  int64_t num_rows = 0;
  std::vector<RowGroup> row_groups;
  std::vector<std::pair<std::string, std::string>> key_value_metadata;
  std::string created_by;
  bool encrypted = false;  // encryption_algorithm was set (refused by the reader)

  // The value stored under `key`, or nullptr.
  const std::string* FindMetadata(std::string_view key) const;
};

enum class PageType : int32_t {
  kDataPage = 0,
  kIndexPage = 1,
  kDictionaryPage = 2,
  kDataPageV2 = 3,
};

struct PageHeader {
  int32_t type = 0;                    // PageType, or an unknown value (such pages are skipped)
  int32_t uncompressed_page_size = 0;  // >= 0
  int32_t compressed_page_size = 0;    // >= 0
  // DATA_PAGE and DATA_PAGE_V2
  int32_t num_values = 0;  // >= 0, nulls included
  int32_t encoding = 0;
  // DATA_PAGE
  int32_t definition_level_encoding = kRle;
  int32_t repetition_level_encoding = kRle;
  // DATA_PAGE_V2
  int32_t num_nulls = 0;
  int32_t num_rows = 0;
  int32_t definition_levels_byte_length = 0;  // >= 0
  int32_t repetition_levels_byte_length = 0;  // >= 0
  bool is_compressed = true;
  // DICTIONARY_PAGE (num_values and encoding above)
  bool has_data_header = false;
  bool has_dictionary_header = false;
};

// Decodes the footer's FileMetaData. Corruption for malformed bytes or a required field missing.
Result<FileMetaData> DecodeFileMetaData(std::span<const uint8_t> bytes);

// Decodes the page header at the start of `bytes`; *header_size receives its size in bytes.
// Corruption for malformed bytes, negative sizes or counts, and a data or dictionary page
// without its header struct.
Status DecodePageHeader(std::span<const uint8_t> bytes, PageHeader* header, size_t* header_size);

}  // namespace docfeed::internal::parquet

#endif  // DOCFEED_FORMAT_PARQUET_METADATA_H_
