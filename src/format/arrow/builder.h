// ArrayBuilder: accumulates the values of one Arrow column (and, recursively, its children) in
// the Arrow columnar layout, ready for StreamWriter::WriteBatch to write as IPC body buffers.
//
// Layout follows the Arrow columnar format: a validity bitmap (LSB-first, 1 = valid), then
// per type a bit-packed bool buffer, little-endian fixed-width values, int32/int64 offsets +
// data for binary-like types, int32/int64 offsets for lists (+ one child), nothing for
// fixed-size lists and structs (children carry the values).
//
// Building nested values:
//   list / large_list:  append the slot's items to child(0), then FinishList().
//   fixed_size_list:    append exactly list_size items to child(0), then FinishList().
//   struct:             append one value (or null) to every child(i), then AppendStruct().
//   AppendNull() works for every type; for a struct or fixed_size_list it also appends nulls to
//   the children so that their lengths stay consistent.
//
// Errors: InvalidArgument when an Append* does not fit the field's type (naming the field), when
// an integer is out of the type's range, or when int32 offsets would overflow (callers watch
// values_bytes() and cut batches earlier, or use large_* types). A failed append leaves the
// builder unchanged.
//
// Not thread-safe; movable, not copyable.
#ifndef DOCFEED_FORMAT_ARROW_BUILDER_H_
#define DOCFEED_FORMAT_ARROW_BUILDER_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "docfeed/status.h"
#include "format/arrow/ipc_metadata.h"
#include "format/arrow/schema.h"

namespace docfeed::internal::arrow {

class ArrayBuilder {
 public:
  // REQUIRES: `field` is valid (see ValidateSchema); children builders are created from
  // field.children.
  explicit ArrayBuilder(Field field);
  ArrayBuilder(ArrayBuilder&&) = default;
  ArrayBuilder& operator=(ArrayBuilder&&) = default;
  ArrayBuilder(const ArrayBuilder&) = delete;
  ArrayBuilder& operator=(const ArrayBuilder&) = delete;

  // One builder per field of `schema`. REQUIRES: ValidateSchema(schema).ok().
  static std::vector<ArrayBuilder> ForSchema(const Schema& schema);

  const Field& field() const { return field_; }
  int64_t length() const { return length_; }
  int64_t null_count() const { return null_count_; }
  // Bytes in this array's values buffer (binary data for binary-like types).
  int64_t values_bytes() const { return static_cast<int64_t>(values_.size()); }
  // Bytes in all buffers of this array and its descendants (an estimate of the body size).
  int64_t total_bytes() const;

  size_t num_children() const { return children_.size(); }
  // REQUIRES: i < num_children().
  ArrayBuilder& child(size_t i) { return children_[i]; }
  const ArrayBuilder& child(size_t i) const { return children_[i]; }

  Status AppendNull();
  // Integer types, date32, date64, timestamp. InvalidArgument when out of range.
  Status AppendInt(int64_t value);
  // Integer types. InvalidArgument when out of range.
  Status AppendUInt(uint64_t value);
  // halffloat (rounded to nearest even), float (rounded), double.
  Status AppendDouble(double value);
  Status AppendBool(bool value);
  // One value of a fixed-width type (integers, floats, date32/64, timestamp) given as its
  // little-endian bytes, copied as they are (exact for every bit pattern, NaN payloads
  // included). InvalidArgument unless bytes.size() is the type's width.
  Status AppendFixedWidth(std::span<const uint8_t> bytes);
  // binary, string, large_* and fixed_size_binary (which requires exactly fixed_size bytes).
  // Strings are not checked for UTF-8.
  Status AppendBinary(std::span<const uint8_t> value);
  Status AppendString(std::string_view value);
  // Closes one list slot holding the child values appended since the previous slot.
  Status FinishList();
  // Closes one valid struct slot. REQUIRES: every child has exactly length() + 1 values.
  Status AppendStruct();

  // Drops all values (keeps capacity).
  void Reset();

  // --- Used by StreamWriter ---
  // InvalidArgument when children lengths disagree with this array (e.g. list items appended
  // without FinishList()).
  Status CheckConsistent() const;
  // Appends this array's FieldNode and buffers, then its children's (pre-order, IPC order).
  // Buffer spans point into this builder.
  void CollectBuffers(std::vector<FieldNode>* nodes,
                      std::vector<std::span<const uint8_t>>* buffers) const;

 private:
  Status TypeMismatch(std::string_view operation) const;
  void AppendValidity(bool valid);
  void AppendFixed(const void* data, size_t size_bytes);
  Status AppendOffset(int64_t end);
  int64_t LastOffset() const;

  Field field_;
  int64_t length_ = 0;
  int64_t null_count_ = 0;
  std::vector<uint8_t> validity_;
  std::vector<uint8_t> offsets_;  // binary-like and list types; starts with one 0
  std::vector<uint8_t> values_;   // fixed-width values, bool bits, binary data
  std::vector<ArrayBuilder> children_;
};

}  // namespace docfeed::internal::arrow

#endif  // DOCFEED_FORMAT_ARROW_BUILDER_H_
