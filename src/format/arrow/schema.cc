#include "format/arrow/schema.h"

#include <algorithm>

namespace docfeed::internal::arrow {
namespace {

std::string_view TimeUnitName(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond:
      return "s";
    case TimeUnit::kMilli:
      return "ms";
    case TimeUnit::kMicro:
      return "us";
    case TimeUnit::kNano:
      return "ns";
  }
  return "?";
}

std::string ChildToString(const Field& child) {
  std::string out = child.name + ": " + TypeToString(child);
  if (!child.nullable) out += " not null";
  return out;
}

Field Nested(std::string name, TypeId type, std::vector<Field> children, bool nullable) {
  Field field = MakeField(std::move(name), type, nullable);
  field.children = std::move(children);
  return field;
}

Status ValidateField(const Field& field, int depth, const std::string& path) {
  if (depth > kMaxNestingDepth) {
    return InvalidArgumentError("field '" + path + "' nests deeper than " +
                                std::to_string(kMaxNestingDepth) + " levels");
  }
  const size_t expected_children = IsListLike(field.type) ? 1 : 0;
  if (field.type != TypeId::kStruct && field.children.size() != expected_children) {
    return InvalidArgumentError("field '" + path + "' of type " +
                                std::string(TypeIdName(field.type)) + " has " +
                                std::to_string(field.children.size()) + " children, expected " +
                                std::to_string(expected_children));
  }
  if (field.fixed_size < 0) {
    return InvalidArgumentError("field '" + path + "' has negative fixed size " +
                                std::to_string(field.fixed_size));
  }
  for (const Field& child : field.children) {
    DOCFEED_RETURN_IF_ERROR(ValidateField(child, depth + 1, path + "." + child.name));
  }
  return Status::Ok();
}

}  // namespace

const std::string* Schema::FindMetadata(std::string_view key) const {
  for (const auto& [k, v] : metadata) {
    if (k == key) return &v;
  }
  return nullptr;
}

Field MakeField(std::string name, TypeId type, bool nullable) {
  Field field;
  field.name = std::move(name);
  field.type = type;
  field.nullable = nullable;
  return field;
}

Field MakeList(std::string name, Field item, bool nullable) {
  return Nested(std::move(name), TypeId::kList, {std::move(item)}, nullable);
}

Field MakeLargeList(std::string name, Field item, bool nullable) {
  return Nested(std::move(name), TypeId::kLargeList, {std::move(item)}, nullable);
}

Field MakeFixedSizeList(std::string name, Field item, int32_t list_size, bool nullable) {
  Field field = Nested(std::move(name), TypeId::kFixedSizeList, {std::move(item)}, nullable);
  field.fixed_size = list_size;
  return field;
}

Field MakeFixedSizeBinary(std::string name, int32_t byte_width, bool nullable) {
  Field field = MakeField(std::move(name), TypeId::kFixedSizeBinary, nullable);
  field.fixed_size = byte_width;
  return field;
}

Field MakeStruct(std::string name, std::vector<Field> children, bool nullable) {
  return Nested(std::move(name), TypeId::kStruct, std::move(children), nullable);
}

Field MakeTimestamp(std::string name, TimeUnit unit, std::string timezone, bool nullable) {
  Field field = MakeField(std::move(name), TypeId::kTimestamp, nullable);
  field.time_unit = unit;
  field.timezone = std::move(timezone);
  return field;
}

std::string_view TypeIdName(TypeId type) {
  switch (type) {
    case TypeId::kNull:
      return "null";
    case TypeId::kBool:
      return "bool";
    case TypeId::kInt8:
      return "int8";
    case TypeId::kInt16:
      return "int16";
    case TypeId::kInt32:
      return "int32";
    case TypeId::kInt64:
      return "int64";
    case TypeId::kUInt8:
      return "uint8";
    case TypeId::kUInt16:
      return "uint16";
    case TypeId::kUInt32:
      return "uint32";
    case TypeId::kUInt64:
      return "uint64";
    case TypeId::kFloat16:
      return "halffloat";
    case TypeId::kFloat32:
      return "float";
    case TypeId::kFloat64:
      return "double";
    case TypeId::kBinary:
      return "binary";
    case TypeId::kLargeBinary:
      return "large_binary";
    case TypeId::kString:
      return "string";
    case TypeId::kLargeString:
      return "large_string";
    case TypeId::kFixedSizeBinary:
      return "fixed_size_binary";
    case TypeId::kDate32:
      return "date32";
    case TypeId::kDate64:
      return "date64";
    case TypeId::kTimestamp:
      return "timestamp";
    case TypeId::kList:
      return "list";
    case TypeId::kLargeList:
      return "large_list";
    case TypeId::kFixedSizeList:
      return "fixed_size_list";
    case TypeId::kStruct:
      return "struct";
  }
  return "unknown";
}

std::string TypeToString(const Field& field) {
  const std::string name(TypeIdName(field.type));
  switch (field.type) {
    case TypeId::kFixedSizeBinary:
      return name + "[" + std::to_string(field.fixed_size) + "]";
    case TypeId::kDate32:
      return name + "[day]";
    case TypeId::kDate64:
      return name + "[ms]";
    case TypeId::kTimestamp: {
      std::string out = name + "[" + std::string(TimeUnitName(field.time_unit));
      if (!field.timezone.empty()) out += ", tz=" + field.timezone;
      return out + "]";
    }
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kFixedSizeList:
    case TypeId::kStruct: {
      std::string out = name + "<";
      for (size_t i = 0; i < field.children.size(); ++i) {
        if (i > 0) out += ", ";
        out += ChildToString(field.children[i]);
      }
      out += ">";
      if (field.type == TypeId::kFixedSizeList) out += "[" + std::to_string(field.fixed_size) + "]";
      return out;
    }
    default:
      return name;
  }
}

bool SameType(const Field& a, const Field& b) {
  if (a.type != b.type || a.fixed_size != b.fixed_size || a.children.size() != b.children.size()) {
    return false;
  }
  if (a.type == TypeId::kTimestamp && (a.time_unit != b.time_unit || a.timezone != b.timezone)) {
    return false;
  }
  for (size_t i = 0; i < a.children.size(); ++i) {
    if (a.children[i].name != b.children[i].name || !SameType(a.children[i], b.children[i])) {
      return false;
    }
  }
  return true;
}

Status ValidateSchema(const Schema& schema) {
  for (const Field& field : schema.fields) {
    DOCFEED_RETURN_IF_ERROR(ValidateField(field, 1, field.name));
  }
  return Status::Ok();
}

bool IsBinaryLike(TypeId type) {
  return type == TypeId::kBinary || type == TypeId::kLargeBinary || type == TypeId::kString ||
         type == TypeId::kLargeString;
}

bool IsListLike(TypeId type) {
  return type == TypeId::kList || type == TypeId::kLargeList || type == TypeId::kFixedSizeList;
}

bool HasLargeOffsets(TypeId type) {
  return type == TypeId::kLargeBinary || type == TypeId::kLargeString || type == TypeId::kLargeList;
}

int64_t FixedWidthBytes(const Field& field) {
  switch (field.type) {
    case TypeId::kInt8:
    case TypeId::kUInt8:
      return 1;
    case TypeId::kInt16:
    case TypeId::kUInt16:
    case TypeId::kFloat16:
      return 2;
    case TypeId::kInt32:
    case TypeId::kUInt32:
    case TypeId::kFloat32:
    case TypeId::kDate32:
      return 4;
    case TypeId::kInt64:
    case TypeId::kUInt64:
    case TypeId::kFloat64:
    case TypeId::kDate64:
    case TypeId::kTimestamp:
      return 8;
    case TypeId::kFixedSizeBinary:
      return field.fixed_size;
    default:
      return 0;
  }
}

int BufferCount(TypeId type) {
  // Columnar format, "Buffer Listing for Each Layout": null has none; struct and fixed-size list
  // have validity only; variable-size types add offsets; binary-like types add data.
  switch (type) {
    case TypeId::kNull:
      return 0;
    case TypeId::kStruct:
    case TypeId::kFixedSizeList:
      return 1;
    case TypeId::kList:
    case TypeId::kLargeList:
      return 2;
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
    case TypeId::kString:
    case TypeId::kLargeString:
      return 3;
    default:
      return 2;  // validity + values
  }
}

}  // namespace docfeed::internal::arrow
