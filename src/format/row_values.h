// Converts the non-image columns of one row of a record batch back into docfeed Values,
// checking that each Arrow column has the type its ColumnSpec says.
#ifndef DOCFEED_FORMAT_ROW_VALUES_H_
#define DOCFEED_FORMAT_ROW_VALUES_H_

#include <cstdint>
#include <vector>

#include "docfeed/status.h"
#include "format/arrow/reader.h"
#include "format/value.h"

namespace docfeed::internal {

// `batch.columns[0]` is the image; columns[1 + i] holds `columns[i]`; `trailing_columns` more
// columns may follow them (the `original` image column of pack --keep-original) and are ignored.
// REQUIRES: row < batch.num_rows.
Result<std::vector<Value>> RowValues(const arrow::RecordBatch& batch, int64_t row,
                                     const std::vector<ColumnSpec>& columns,
                                     size_t trailing_columns = 0);

// The stored image bytes of `row`: the `bytes` child of the image struct column.
// Corruption if the image is null or the column is not struct<bytes: binary, ...>.
Result<std::span<const uint8_t>> RowImage(const arrow::RecordBatch& batch, int64_t row);

// The value of `row` of `array`, a column of type `column` (null slots give std::monostate).
// REQUIRES: row < array.length and the array has the column's Arrow type (ColumnField).
Value ReadCell(const arrow::ArrayView& array, int64_t row, const ColumnSpec& column);

// The Arrow field docfeed writes for a column type.
arrow::Field ColumnField(const ColumnSpec& column);

}  // namespace docfeed::internal

#endif  // DOCFEED_FORMAT_ROW_VALUES_H_
