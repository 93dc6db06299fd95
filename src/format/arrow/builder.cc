#include "format/arrow/builder.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace docfeed::internal::arrow {
namespace {

bool HasOffsets(TypeId type) {
  return IsBinaryLike(type) || type == TypeId::kList || type == TypeId::kLargeList;
}

void SetBit(std::vector<uint8_t>* bits, int64_t index, bool value) {
  const auto byte = static_cast<size_t>(index / 8);
  if (bits->size() <= byte) bits->push_back(0);
  if (value) (*bits)[byte] = static_cast<uint8_t>((*bits)[byte] | (1u << (index % 8)));
}

// IEEE 754 binary32 -> binary16, round to nearest even.
uint16_t FloatToHalf(float value) {
  const auto bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t abs = bits & 0x7fffffff;
  if (abs >= 0x7f800000) return sign | (abs > 0x7f800000 ? 0x7e00 : 0x7c00);  // NaN / inf
  if (abs >= 0x477ff000) return sign | 0x7c00;  // rounds to >= 65520: overflow to inf
  if (abs < 0x38800000) {
    // Below the smallest normal half: the subnormal half is round(|x| * 2^24), exact in float.
    const float scaled = std::ldexp(std::bit_cast<float>(abs), 24);
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));  // 1024 encodes 2^-14 exactly
  }
  const uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);  // round to nearest even
  return sign | static_cast<uint16_t>((rounded - 0x38000000) >> 13);
}

// REQUIRES: T is at most 32 bits wide, so its range fits in int64_t.
template <typename T>
bool InRange(int64_t value) {
  static_assert(sizeof(T) <= 4);
  return value >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
         value <= static_cast<int64_t>(std::numeric_limits<T>::max());
}

}  // namespace

ArrayBuilder::ArrayBuilder(Field field) : field_(std::move(field)) {
  for (const Field& child : field_.children) children_.emplace_back(child);
  Reset();
}

std::vector<ArrayBuilder> ArrayBuilder::ForSchema(const Schema& schema) {
  std::vector<ArrayBuilder> builders;
  builders.reserve(schema.fields.size());
  for (const Field& field : schema.fields) builders.emplace_back(field);
  return builders;
}

int64_t ArrayBuilder::total_bytes() const {
  auto total = static_cast<int64_t>(validity_.size() + offsets_.size() + values_.size());
  for (const ArrayBuilder& child : children_) total += child.total_bytes();
  return total;
}

void ArrayBuilder::Reset() {
  length_ = 0;
  null_count_ = 0;
  validity_.clear();
  values_.clear();
  offsets_.clear();
  if (HasOffsets(field_.type)) offsets_.resize(HasLargeOffsets(field_.type) ? 8 : 4, 0);
  for (ArrayBuilder& child : children_) child.Reset();
}

Status ArrayBuilder::TypeMismatch(std::string_view operation) const {
  return InvalidArgumentError(std::string(operation) + " on field '" + field_.name + "' of type " +
                              TypeToString(field_));
}

void ArrayBuilder::AppendValidity(bool valid) {
  SetBit(&validity_, length_, valid);
  if (!valid) ++null_count_;
  ++length_;
}

void ArrayBuilder::AppendFixed(const void* data, size_t size_bytes) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  values_.insert(values_.end(), bytes, bytes + size_bytes);
}

int64_t ArrayBuilder::LastOffset() const {
  if (HasLargeOffsets(field_.type)) {
    int64_t value;
    std::memcpy(&value, offsets_.data() + offsets_.size() - 8, 8);
    return value;
  }
  int32_t value;
  std::memcpy(&value, offsets_.data() + offsets_.size() - 4, 4);
  return value;
}

Status ArrayBuilder::AppendOffset(int64_t end) {
  if (HasLargeOffsets(field_.type)) {
    offsets_.insert(offsets_.end(), reinterpret_cast<const uint8_t*>(&end),
                    reinterpret_cast<const uint8_t*>(&end) + 8);
    return Status::Ok();
  }
  if (end > std::numeric_limits<int32_t>::max()) {
    return InvalidArgumentError("field '" + field_.name + "' (" + TypeToString(field_) +
                                "): int32 offsets would overflow at " + std::to_string(end) +
                                "; write the batch first or use a large_* type");
  }
  const auto end32 = static_cast<int32_t>(end);
  offsets_.insert(offsets_.end(), reinterpret_cast<const uint8_t*>(&end32),
                  reinterpret_cast<const uint8_t*>(&end32) + 4);
  return Status::Ok();
}

Status ArrayBuilder::AppendNull() {
  switch (field_.type) {
    case TypeId::kNull:
    case TypeId::kStruct:
      break;
    case TypeId::kBool:
      SetBit(&values_, length_, false);
      break;
    case TypeId::kFixedSizeList:
      for (int32_t i = 0; i < field_.fixed_size; ++i) {
        DOCFEED_RETURN_IF_ERROR(children_[0].AppendNull());
      }
      break;
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
    case TypeId::kString:
    case TypeId::kLargeString:
      DOCFEED_RETURN_IF_ERROR(AppendOffset(LastOffset()));
      break;
    default:
      values_.resize(values_.size() + static_cast<size_t>(FixedWidthBytes(field_)), 0);
      break;
  }
  if (field_.type == TypeId::kStruct) {
    for (ArrayBuilder& child : children_) DOCFEED_RETURN_IF_ERROR(child.AppendNull());
  }
  AppendValidity(false);
  return Status::Ok();
}

Status ArrayBuilder::AppendInt(int64_t value) {
  bool ok = true;
  switch (field_.type) {
    case TypeId::kInt8:
      ok = InRange<int8_t>(value);
      break;
    case TypeId::kInt16:
      ok = InRange<int16_t>(value);
      break;
    case TypeId::kInt32:
    case TypeId::kDate32:
      ok = InRange<int32_t>(value);
      break;
    case TypeId::kUInt8:
      ok = InRange<uint8_t>(value);
      break;
    case TypeId::kUInt16:
      ok = InRange<uint16_t>(value);
      break;
    case TypeId::kUInt32:
      ok = InRange<uint32_t>(value);
      break;
    case TypeId::kUInt64:
      ok = value >= 0;
      break;
    case TypeId::kInt64:
    case TypeId::kDate64:
    case TypeId::kTimestamp:
      break;
    default:
      return TypeMismatch("AppendInt");
  }
  if (!ok) {
    return InvalidArgumentError("value " + std::to_string(value) + " is out of range for field '" +
                                field_.name + "' of type " + TypeToString(field_));
  }
  // Little-endian host: the low bytes of the int64 are the narrower value.
  AppendFixed(&value, static_cast<size_t>(FixedWidthBytes(field_)));
  AppendValidity(true);
  return Status::Ok();
}

Status ArrayBuilder::AppendUInt(uint64_t value) {
  if (field_.type == TypeId::kUInt64) {
    AppendFixed(&value, sizeof(value));
    AppendValidity(true);
    return Status::Ok();
  }
  if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return InvalidArgumentError("value " + std::to_string(value) + " does not fit field '" +
                                field_.name + "' of type " + TypeToString(field_));
  }
  return AppendInt(static_cast<int64_t>(value));
}

Status ArrayBuilder::AppendDouble(double value) {
  switch (field_.type) {
    case TypeId::kFloat16: {
      const uint16_t half = FloatToHalf(static_cast<float>(value));
      AppendFixed(&half, sizeof(half));
      break;
    }
    case TypeId::kFloat32: {
      const auto single = static_cast<float>(value);
      AppendFixed(&single, sizeof(single));
      break;
    }
    case TypeId::kFloat64:
      AppendFixed(&value, sizeof(value));
      break;
    default:
      return TypeMismatch("AppendDouble");
  }
  AppendValidity(true);
  return Status::Ok();
}

Status ArrayBuilder::AppendFixedWidth(std::span<const uint8_t> bytes) {
  const int64_t width = FixedWidthBytes(field_);
  if (width == 0 || field_.type == TypeId::kFixedSizeBinary) {
    return TypeMismatch("AppendFixedWidth");
  }
  if (static_cast<int64_t>(bytes.size()) != width) {
    return InvalidArgumentError("field '" + field_.name + "' of type " + TypeToString(field_) +
                                " takes " + std::to_string(width) + "-byte values, not " +
                                std::to_string(bytes.size()));
  }
  AppendFixed(bytes.data(), bytes.size());
  AppendValidity(true);
  return Status::Ok();
}

Status ArrayBuilder::AppendBool(bool value) {
  if (field_.type != TypeId::kBool) return TypeMismatch("AppendBool");
  SetBit(&values_, length_, value);
  AppendValidity(true);
  return Status::Ok();
}

Status ArrayBuilder::AppendBinary(std::span<const uint8_t> value) {
  if (field_.type == TypeId::kFixedSizeBinary) {
    if (value.size() != static_cast<size_t>(field_.fixed_size)) {
      return InvalidArgumentError("field '" + field_.name + "' of type " + TypeToString(field_) +
                                  " takes " + std::to_string(field_.fixed_size) +
                                  "-byte values, got " + std::to_string(value.size()));
    }
  } else if (!IsBinaryLike(field_.type)) {
    return TypeMismatch("AppendBinary");
  } else {
    DOCFEED_RETURN_IF_ERROR(AppendOffset(LastOffset() + static_cast<int64_t>(value.size())));
  }
  values_.insert(values_.end(), value.begin(), value.end());
  AppendValidity(true);
  return Status::Ok();
}

Status ArrayBuilder::AppendString(std::string_view value) {
  return AppendBinary(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(value.data()), value.size()));
}

Status ArrayBuilder::FinishList() {
  if (field_.type == TypeId::kFixedSizeList) {
    const int64_t expected = (length_ + 1) * field_.fixed_size;
    if (children_[0].length() != expected) {
      return InvalidArgumentError("fixed-size list field '" + field_.name + "' needs " +
                                  std::to_string(expected) + " child values, has " +
                                  std::to_string(children_[0].length()));
    }
  } else if (field_.type == TypeId::kList || field_.type == TypeId::kLargeList) {
    DOCFEED_RETURN_IF_ERROR(AppendOffset(children_[0].length()));
  } else {
    return TypeMismatch("FinishList");
  }
  AppendValidity(true);
  return Status::Ok();
}

Status ArrayBuilder::AppendStruct() {
  if (field_.type != TypeId::kStruct) return TypeMismatch("AppendStruct");
  for (const ArrayBuilder& child : children_) {
    if (child.length() != length_ + 1) {
      return InvalidArgumentError("struct field '" + field_.name + "': child '" +
                                  child.field().name + "' has " + std::to_string(child.length()) +
                                  " values, expected " + std::to_string(length_ + 1));
    }
  }
  AppendValidity(true);
  return Status::Ok();
}

Status ArrayBuilder::CheckConsistent() const {
  int64_t expected_child_length = length_;
  if (field_.type == TypeId::kFixedSizeList) expected_child_length = length_ * field_.fixed_size;
  if (field_.type == TypeId::kList || field_.type == TypeId::kLargeList) {
    expected_child_length = LastOffset();
  }
  for (const ArrayBuilder& child : children_) {
    if (child.length() != expected_child_length) {
      return InvalidArgumentError("field '" + field_.name + "': child '" + child.field().name +
                                  "' has " + std::to_string(child.length()) + " values, expected " +
                                  std::to_string(expected_child_length) +
                                  " (values appended without FinishList/AppendStruct?)");
    }
    DOCFEED_RETURN_IF_ERROR(child.CheckConsistent());
  }
  return Status::Ok();
}

void ArrayBuilder::CollectBuffers(std::vector<FieldNode>* nodes,
                                  std::vector<std::span<const uint8_t>>* buffers) const {
  nodes->push_back({length_, field_.type == TypeId::kNull ? length_ : null_count_});
  if (field_.type != TypeId::kNull) {
    // Arrow writers omit the validity bitmap (length 0) when there are no nulls.
    buffers->push_back(null_count_ == 0 ? std::span<const uint8_t>() : std::span(validity_));
    if (HasOffsets(field_.type)) buffers->push_back(offsets_);
    const bool has_values =
        IsBinaryLike(field_.type) || (BufferCount(field_.type) == 2 && !HasOffsets(field_.type));
    if (has_values) buffers->push_back(values_);
  }
  for (const ArrayBuilder& child : children_) child.CollectBuffers(nodes, buffers);
}

}  // namespace docfeed::internal::arrow
