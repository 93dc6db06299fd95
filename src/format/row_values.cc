#include "format/row_values.h"

#include <string>

#include "format/arrow_cell.h"

namespace docfeed::internal {
namespace {

using arrow::ArrayView;
using arrow::TypeId;

template <typename T, typename Get>
std::vector<T> ListValues(const ArrayView& list, int64_t row, Get get) {
  auto [first, last] = list.GetListRange(row);
  std::vector<T> out;
  out.reserve(static_cast<size_t>(last - first));
  for (int64_t i = first; i < last; ++i) out.push_back(get(list.children[0], i));
  return out;
}

Value CellValue(const ArrayView& a, int64_t row, ColumnType type) {
  if (a.IsNull(row)) return std::monostate{};
  switch (type) {
    case ColumnType::kString:
      return std::string(a.GetString(row));
    case ColumnType::kInt64:
      return a.GetInt64(row);
    case ColumnType::kFloat64:
      return a.GetDouble(row);
    case ColumnType::kBool:
      return a.GetBool(row);
    case ColumnType::kInt64List:
      return ListValues<int64_t>(a, row,
                                 [](const ArrayView& c, int64_t i) { return c.GetInt64(i); });
    case ColumnType::kFloat64List:
      return ListValues<double>(a, row,
                                [](const ArrayView& c, int64_t i) { return c.GetDouble(i); });
    case ColumnType::kStringList:
      return ListValues<std::string>(
          a, row, [](const ArrayView& c, int64_t i) { return std::string(c.GetString(i)); });
    case ColumnType::kArrow:
      return EncodeCell(a, row);
  }
  return std::monostate{};
}

}  // namespace

Value ReadCell(const arrow::ArrayView& array, int64_t row, const ColumnSpec& column) {
  return CellValue(array, row, column.type);
}

arrow::Field ColumnField(const ColumnSpec& c) {
  switch (c.type) {
    case ColumnType::kString:
      return arrow::MakeField(c.name, TypeId::kString);
    case ColumnType::kInt64:
      return arrow::MakeField(c.name, TypeId::kInt64);
    case ColumnType::kFloat64:
      return arrow::MakeField(c.name, TypeId::kFloat64);
    case ColumnType::kBool:
      return arrow::MakeField(c.name, TypeId::kBool);
    case ColumnType::kInt64List:
      return arrow::MakeList(c.name, arrow::MakeField("item", TypeId::kInt64));
    case ColumnType::kFloat64List:
      return arrow::MakeList(c.name, arrow::MakeField("item", TypeId::kFloat64));
    case ColumnType::kStringList:
      return arrow::MakeList(c.name, arrow::MakeField("item", TypeId::kString));
    case ColumnType::kArrow:
      return c.arrow;
  }
  return arrow::MakeField(c.name, TypeId::kNull);
}

Result<std::vector<Value>> RowValues(const arrow::RecordBatch& batch, int64_t row,
                                     const std::vector<ColumnSpec>& columns,
                                     size_t trailing_columns) {
  if (batch.columns.size() != columns.size() + 1 + trailing_columns) {
    return CorruptionError("record batch has " + std::to_string(batch.columns.size()) +
                           " columns, the manifest names " +
                           std::to_string(columns.size() + 1 + trailing_columns));
  }
  std::vector<Value> out;
  out.reserve(columns.size());
  for (size_t i = 0; i < columns.size(); ++i) {
    const ArrayView& a = batch.columns[i + 1];
    if (!arrow::SameType(*a.field, ColumnField(columns[i]))) {
      return CorruptionError("column \"" + columns[i].name + "\" is " +
                             arrow::TypeToString(*a.field) + ", the manifest says " +
                             arrow::TypeToString(ColumnField(columns[i])));
    }
    out.push_back(CellValue(a, row, columns[i].type));
  }
  return out;
}

Result<std::span<const uint8_t>> RowImage(const arrow::RecordBatch& batch, int64_t row) {
  if (batch.columns.empty()) return CorruptionError("record batch has no columns");
  const ArrayView& image = batch.columns[0];
  if (image.type() != TypeId::kStruct || image.children.empty() ||
      !arrow::IsBinaryLike(image.children[0].type())) {
    return CorruptionError("first column is not an image struct<bytes: binary, path: string>");
  }
  if (image.IsNull(row) || image.children[0].IsNull(row)) {
    return CorruptionError("image of row " + std::to_string(row) + " is null");
  }
  return image.children[0].GetBinary(row);
}

}  // namespace docfeed::internal
