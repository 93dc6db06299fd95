// Columns docfeed keeps exactly as the source had them ("arrow" columns, docs/format.md section
// 3): any Arrow type the reader supports (ClassLabel's int64, int32, float32, nested structs,
// lists of structs, timestamps...) with the source's Hugging Face feature.
//
// A cell travels from the source batch to the shard writer, and from a data file to the label
// checksum, as its *cell encoding*: a canonical byte string that depends only on the value and
// the column's type, so the packer (hashing the source's cell) and `verify` (hashing the written
// cell) compute the same checksum. The encoding of a valid value is:
//   bool                              1 byte, 0 or 1
//   fixed-width (ints, floats, dates, timestamps)   its little-endian bytes (the type's width)
//   binary, string, fixed_size_binary (and large_*) u64 byte count, the bytes
//   list, large_list, fixed_size_list               u64 item count, then each item as a child
//   struct                                          each child in schema order, as a child
// and a *child* is u8 0 (null; nothing follows) or u8 1 followed by the child's encoding. A
// null cell itself is not encoded (the Value is null). The null type is always null.
//
// Thread safety: pure functions.
#ifndef DOCFEED_FORMAT_ARROW_CELL_H_
#define DOCFEED_FORMAT_ARROW_CELL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "docfeed/status.h"
#include "format/arrow/builder.h"
#include "format/arrow/reader.h"

namespace docfeed::internal {

// The cell encoding of row `row` of `array`. REQUIRES: 0 <= row < array.length and the row is
// valid (not null).
std::string EncodeCell(const arrow::ArrayView& array, int64_t row);

// Appends the value whose cell encoding is `encoded` to `builder` (a valid slot). Corruption when
// the bytes are not an encoding of a value of builder.field()'s type (then the builder may hold a
// partial value: discard it).
Status AppendEncodedCell(arrow::ArrayBuilder& builder, std::string_view encoded);

}  // namespace docfeed::internal

#endif  // DOCFEED_FORMAT_ARROW_CELL_H_
