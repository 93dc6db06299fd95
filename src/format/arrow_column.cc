#include "format/arrow_column.h"

#include <array>
#include <cstdint>
#include <optional>
#include <utility>

namespace docfeed::internal {
namespace {

using arrow::Field;
using arrow::TimeUnit;
using arrow::TypeId;

constexpr TypeId kAllTypes[] = {TypeId::kNull,    TypeId::kBool,        TypeId::kInt8,
                                TypeId::kInt16,   TypeId::kInt32,       TypeId::kInt64,
                                TypeId::kUInt8,   TypeId::kUInt16,      TypeId::kUInt32,
                                TypeId::kUInt64,  TypeId::kFloat16,     TypeId::kFloat32,
                                TypeId::kFloat64, TypeId::kBinary,      TypeId::kLargeBinary,
                                TypeId::kString,  TypeId::kLargeString, TypeId::kFixedSizeBinary,
                                TypeId::kDate32,  TypeId::kDate64,      TypeId::kTimestamp,
                                TypeId::kList,    TypeId::kLargeList,   TypeId::kFixedSizeList,
                                TypeId::kStruct};

constexpr std::pair<TimeUnit, const char*> kUnits[] = {{TimeUnit::kSecond, "s"},
                                                       {TimeUnit::kMilli, "ms"},
                                                       {TimeUnit::kMicro, "us"},
                                                       {TimeUnit::kNano, "ns"}};

Result<Field> FieldFromJsonAt(const Json& j, const std::string& where, int depth) {
  auto bad = [&](const std::string& what) { return CorruptionError(where + ": " + what); };
  if (depth > arrow::kMaxNestingDepth) return bad("nested too deeply");
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string() || !j.contains("type") ||
      !j["type"].is_string() || !j.contains("nullable") || !j["nullable"].is_boolean()) {
    return bad("not an object with a string name, a string type and a bool nullable");
  }
  Field f;
  f.name = j["name"].get<std::string>();
  f.nullable = j["nullable"].get<bool>();
  const std::string type = j["type"].get<std::string>();
  bool known = false;
  for (TypeId t : kAllTypes) {
    if (arrow::TypeIdName(t) == type) {
      f.type = t;
      known = true;
    }
  }
  if (!known) return bad("unknown type \"" + type + "\"");
  if (f.type == TypeId::kFixedSizeList || f.type == TypeId::kFixedSizeBinary) {
    const Json* size = j.contains("size") ? &j["size"] : nullptr;
    const int64_t* n = size != nullptr ? size->get_ptr<const int64_t*>() : nullptr;
    const uint64_t* u = size != nullptr ? size->get_ptr<const uint64_t*>() : nullptr;
    const int64_t value = n != nullptr ? *n : (u != nullptr && *u <= INT32_MAX ? int64_t(*u) : -1);
    if (value < 0 || value > INT32_MAX) return bad("size is not an integer in 0..2^31-1");
    f.fixed_size = static_cast<int32_t>(value);
  }
  if (f.type == TypeId::kTimestamp) {
    if (!j.contains("unit") || !j["unit"].is_string()) return bad("timestamp without a unit");
    bool unit_known = false;
    for (const auto& [unit, name] : kUnits) {
      if (j["unit"].get<std::string>() == name) {
        f.time_unit = unit;
        unit_known = true;
      }
    }
    if (!unit_known) return bad("unknown timestamp unit");
    if (j.contains("tz")) {
      if (!j["tz"].is_string()) return bad("tz is not a string");
      f.timezone = j["tz"].get<std::string>();
    }
  }
  if (j.contains("children")) {
    if (!j["children"].is_array()) return bad("children is not a list");
    for (const Json& c : j["children"]) {
      DOCFEED_ASSIGN_OR_RETURN(Field child, FieldFromJsonAt(c, where, depth + 1));
      f.children.push_back(std::move(child));
    }
  }
  arrow::Schema check;
  check.fields.push_back(f);
  Status valid = arrow::ValidateSchema(check);
  if (!valid.ok()) return bad(std::string(valid.message()));
  return f;
}

// The dtype of a plain Value feature ({"dtype": D, "_type": "Value"}), or "".
std::string ValueDtype(const Json& feature) {
  if (!feature.is_object() || feature.size() != 2 || !feature.contains("_type") ||
      feature["_type"] != "Value" || !feature.contains("dtype") || !feature["dtype"].is_string()) {
    return "";
  }
  return feature["dtype"].get<std::string>();
}

// The dtype of the items of a plain List/Sequence feature of Values, or "".
std::string ListDtype(const Json& feature) {
  if (!feature.is_object() || !feature.contains("_type") || !feature.contains("feature")) {
    return "";
  }
  const bool list = feature["_type"] == "List" || feature["_type"] == "Sequence";
  size_t keys = 2;
  if (feature.contains("length")) {  // -1: variable length, the only kind docfeed lists have
    if (feature["length"] != -1) return "";
    ++keys;
  }
  if (!list || feature.size() != keys) return "";
  return ValueDtype(feature["feature"]);
}

// The native column type of an Arrow field with a plain feature, if there is one.
std::optional<ColumnType> NativeType(const Field& f, const Json& feature) {
  static constexpr std::pair<TypeId, const char*> kScalars[] = {{TypeId::kString, "string"},
                                                                {TypeId::kInt64, "int64"},
                                                                {TypeId::kFloat64, "float64"},
                                                                {TypeId::kBool, "bool"}};
  if (f.type == TypeId::kList && f.children.size() == 1) {
    const std::string dtype = ListDtype(feature);
    const TypeId item = f.children[0].type;
    if (item == TypeId::kInt64 && dtype == "int64") return ColumnType::kInt64List;
    if (item == TypeId::kFloat64 && dtype == "float64") return ColumnType::kFloat64List;
    if (item == TypeId::kString && dtype == "string") return ColumnType::kStringList;
    return std::nullopt;
  }
  const std::string dtype = ValueDtype(feature);
  for (size_t i = 0; i < 4; ++i) {
    if (f.type == kScalars[i].first && dtype == kScalars[i].second) {
      return std::array{ColumnType::kString, ColumnType::kInt64, ColumnType::kFloat64,
                        ColumnType::kBool}[i];
    }
  }
  return std::nullopt;
}

}  // namespace

Result<ColumnSpec> KeptColumn(const Field& field, const Json* feature, bool force_arrow) {
  ColumnSpec spec;
  spec.name = field.name;
  if (feature != nullptr && !force_arrow) {
    if (std::optional<ColumnType> native = NativeType(field, *feature)) {
      spec.type = *native;
      return spec;
    }
  }
  if (feature == nullptr) {
    return UnsupportedError("column '" + field.name + "' (" + arrow::TypeToString(field) +
                            ") has no Hugging Face feature to keep it with");
  }
  spec.type = ColumnType::kArrow;
  spec.arrow = field;
  spec.feature = feature->dump();
  return spec;
}

Json FieldToJson(const Field& field) {
  Json j;
  j["name"] = field.name;
  j["type"] = std::string(arrow::TypeIdName(field.type));
  j["nullable"] = field.nullable;
  if (field.type == TypeId::kFixedSizeList || field.type == TypeId::kFixedSizeBinary) {
    j["size"] = field.fixed_size;
  }
  if (field.type == TypeId::kTimestamp) {
    for (const auto& [unit, name] : kUnits) {
      if (unit == field.time_unit) j["unit"] = name;
    }
    if (!field.timezone.empty()) j["tz"] = field.timezone;
  }
  if (!field.children.empty()) {
    Json children = Json::array();
    for (const Field& c : field.children) children.push_back(FieldToJson(c));
    j["children"] = std::move(children);
  }
  return j;
}

Result<Field> FieldFromJson(const Json& j, const std::string& where) {
  return FieldFromJsonAt(j, where, 0);
}

}  // namespace docfeed::internal
