// Column values of the non-image columns of a sample (labels, ground truth, ids), and the
// canonical byte serialization that docfeed's per-sample label checksum is computed over.
// The serialization is specified in docs/format.md ("Label serialization", section 3); the
// packer hashes values it parsed from metadata.jsonl, and `verify` hashes values it read back
// from Arrow: both go through HashLabels so they cannot drift apart.
#ifndef DOCFEED_FORMAT_VALUE_H_
#define DOCFEED_FORMAT_VALUE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "format/arrow/schema.h"

namespace docfeed::internal {

// The column types docfeed packs besides the image. Their Arrow and Hugging Face spellings are
// given by ColumnTypeArrowName / the dataset_info.json writer.
enum class ColumnType : uint8_t {
  kString = 1,       // Arrow string, HF Value("string")
  kInt64 = 2,        // Arrow int64, HF Value("int64")
  kFloat64 = 3,      // Arrow double, HF Value("float64")
  kBool = 4,         // Arrow bool, HF Value("bool")
  kInt64List = 5,    // Arrow list<item: int64>, HF List(Value("int64"))
  kFloat64List = 6,  // Arrow list<item: double>, HF List(Value("float64"))
  kStringList = 7,   // Arrow list<item: string>, HF List(Value("string"))
  // Any other Arrow type, kept as the source had it with its Hugging Face feature (ClassLabel,
  // int32, nested structs, ...): ColumnSpec::arrow and ::feature; the Value is the cell
  // encoding (format/arrow_cell.h) as a string.
  kArrow = 8,
};

std::string_view ColumnTypeName(ColumnType type);  // "string", "int64", "list<int64>", ...

struct ColumnSpec {
  ColumnSpec() = default;
  ColumnSpec(std::string column_name, ColumnType column_type)
      : name(std::move(column_name)), type(column_type) {}

  std::string name;
  ColumnType type = ColumnType::kString;
  arrow::Field arrow;   // kArrow only: the column's Arrow field (named `name`)
  std::string feature;  // kArrow only: its Hugging Face feature, as JSON text
};

// One cell. std::monostate is null (a missing key in a metadata row, or JSON null). A kArrow
// cell is a std::string holding its cell encoding.
using Value = std::variant<std::monostate, std::string, int64_t, double, bool, std::vector<int64_t>,
                           std::vector<double>, std::vector<std::string>>;

// XXH3-64 of the canonical serialization of `values` (one per column of `columns`, same order).
// REQUIRES: values.size() == columns.size() and each non-null value matches its column type.
uint64_t HashLabels(const std::vector<ColumnSpec>& columns, const std::vector<Value>& values);

// The ignore index the Donut recipes pad `labels` with (PyTorch's CrossEntropyLoss default).
inline constexpr int64_t kIgnoreIndex = -100;

// The "label length" recorded in the index for a value: element count for lists (for
// list<int64>, not counting trailing kIgnoreIndex padding), UTF-8 byte length for strings, 0
// for null and scalars.
uint32_t LabelLength(const Value& value);

}  // namespace docfeed::internal

#endif  // DOCFEED_FORMAT_VALUE_H_
