// Keeping a source's columns as they are: which docfeed column type a source column (its Arrow
// field and Hugging Face feature) becomes, and the Arrow field of an "arrow" column as JSON for
// the manifest (docs/format.md section 4). The values travel as cell encodings
// (format/arrow_cell.h).
//
// Thread safety: pure functions.
#ifndef DOCFEED_FORMAT_ARROW_COLUMN_H_
#define DOCFEED_FORMAT_ARROW_COLUMN_H_

#include <string>

#include "base/json.h"
#include "docfeed/status.h"
#include "format/arrow/schema.h"
#include "format/value.h"

namespace docfeed::internal {

// How a source column is kept: as a native docfeed column (kString, kInt64, ...) when `field` is
// exactly that Arrow type and `feature` (its Hugging Face feature) is the plain Value(dtype) or
// List/Sequence of it, unless `force_arrow`; otherwise as a kArrow column holding the field and
// the feature unchanged. Unsupported, naming the column, when it would be kArrow but `feature`
// is null (a source without Hugging Face features).
Result<ColumnSpec> KeptColumn(const arrow::Field& field, const Json* feature,
                              bool force_arrow = false);

// A field's name, type, nullability and children as JSON (the manifest's `arrow` entry):
// {"name": N, "type": "int32" | "list" | "struct" | ..., "nullable": B} plus "size" for
// fixed_size_list/fixed_size_binary, "unit" ("s", "ms", "us", "ns") and "tz" for timestamp, and
// "children": [...] for nested types. Field metadata is not kept.
Json FieldToJson(const arrow::Field& field);
// The inverse; Corruption naming `where` and the member for anything malformed, and for a field
// ValidateSchema refuses.
Result<arrow::Field> FieldFromJson(const Json& j, const std::string& where);

}  // namespace docfeed::internal

#endif  // DOCFEED_FORMAT_ARROW_COLUMN_H_
