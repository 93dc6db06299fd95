#include "format/parquet/reader.h"

#include <cstring>
#include <utility>

#include "base/base64.h"

namespace docfeed::internal::parquet {

using arrow::ArrayBuilder;
using arrow::ArrayView;
using arrow::Field;
using arrow::TypeId;

// How a leaf's physical values become Arrow values.
enum class Convert : uint8_t {
  kNull,        // an Arrow null column: every entry must be null
  kBool,        // BOOLEAN -> bool
  kInt,         // INT32/INT64 -> an integer type or date (range-checked by the builder)
  kUInt32Bits,  // INT32 -> uint32 (the bits, as UINT_32 stores it)
  kUInt64Bits,  // INT64 -> uint64 (the bits)
  kDate64Days,  // INT32 days -> date64 milliseconds
  kScaled,      // INT64 -> timestamp, multiplied or divided by `scale`
  kInt96,       // INT96 (Impala's nanoseconds of day + Julian day) -> timestamp
  kFixedBytes,  // FLOAT -> float32, DOUBLE -> float64, FLBA(2) -> float16: the bytes as they are
  kFloatToDouble,
  kBinary,  // BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY -> binary-like
};

struct FileReader::Shape {
  enum Kind { kLeaf, kStruct, kList } kind = kLeaf;
  const Field* field = nullptr;
  bool nullable = false;
  int16_t def_present = 0;   // definition level at which this node is not null
  int16_t def_elements = 0;  // kList: level at which the list has an element
  int16_t rep = 0;           // kList: the repetition level of its elements
  int leaf = -1;             // kLeaf: its column
  int first_leaf = 0;        // the leaf columns under this node: [first_leaf, last_leaf)
  int last_leaf = 0;
  Convert convert = Convert::kNull;
  int64_t scale = 1;  // kScaled, kInt96: > 0 multiplies, < 0 divides by -scale
  std::vector<Shape> children;
};

namespace {

using Shape = FileReader::Shape;

constexpr char kMagic[] = "PAR1";
constexpr int kMaxSchemaDepth = 64;

// The Parquet schema as a tree, with each node's levels.
struct Node {
  const SchemaElement* e = nullptr;
  int16_t def = 0;
  int16_t rep = 0;
  int leaf = -1;
  std::string path;
  std::vector<Node> children;
};

Status BuildNodes(const std::vector<SchemaElement>& schema, size_t* next, Node* node, int depth,
                  int* leaves) {
  if (depth > kMaxSchemaDepth) return CorruptionError("schema nested deeper than 64");
  const SchemaElement& e = *node->e;
  if (e.num_children == 0) {
    if (!e.type) return CorruptionError("schema element '" + node->path + "' has no type");
    node->leaf = (*leaves)++;
    return Status::Ok();
  }
  for (int32_t i = 0; i < e.num_children; ++i) {
    if (*next >= schema.size()) {
      return CorruptionError("schema element '" + node->path +
                             "' has more children than the "
                             "schema has elements");
    }
    Node child;
    child.e = &schema[(*next)++];
    const bool optional = child.e->repetition == Repetition::kOptional;
    const bool repeated = child.e->repetition == Repetition::kRepeated;
    if (node->def >= INT16_MAX - 1) return CorruptionError("schema nested too deeply");
    child.def = static_cast<int16_t>(node->def + (optional || repeated ? 1 : 0));
    child.rep = static_cast<int16_t>(node->rep + (repeated ? 1 : 0));
    child.path = node->path.empty() ? child.e->name : node->path + "." + child.e->name;
    DOCFEED_RETURN_IF_ERROR(BuildNodes(schema, next, &child, depth + 1, leaves));
    node->children.push_back(std::move(child));
  }
  return Status::Ok();
}

bool IsListGroup(const SchemaElement& e) {
  return e.num_children > 0 &&
         (e.converted_type == kConvertedList || e.logical.kind == LogicalType::kList);
}

bool IsMapGroup(const SchemaElement& e) {
  return e.converted_type == kConvertedMap || e.converted_type == kConvertedMapKeyValue ||
         e.logical.kind == LogicalType::kMap;
}

// The element node of a LIST-annotated group, per the format's backward-compatibility rules:
// the repeated child itself (2-level) when it is a primitive, a group of several fields, or named
// "array" or "<list>_tuple"; its only child otherwise (3-level).
Result<const Node*> ListElement(const Node& list, bool* two_level) {
  if (list.children.size() != 1 || list.children[0].e->repetition != Repetition::kRepeated) {
    return CorruptionError("list '" + list.path + "' does not have one repeated child");
  }
  const Node& repeated = list.children[0];
  *two_level = repeated.children.size() != 1 || repeated.e->name == "array" ||
               repeated.e->name == list.e->name + "_tuple";
  return *two_level ? &repeated : &repeated.children[0];
}

// The timestamp unit of a leaf as a power of ten of seconds (3, 6, 9), or -1.
int TimestampExponent(const SchemaElement& e) {
  if (e.logical.kind == LogicalType::kTimestamp) {
    return e.logical.unit < 0 ? -1 : 3 * (e.logical.unit + 1);
  }
  if (e.converted_type == kConvertedTimestampMillis) return 3;
  if (e.converted_type == kConvertedTimestampMicros) return 6;
  return -1;
}

int ArrowExponent(arrow::TimeUnit unit) {
  switch (unit) {
    case arrow::TimeUnit::kSecond:
      return 0;
    case arrow::TimeUnit::kMilli:
      return 3;
    case arrow::TimeUnit::kMicro:
      return 6;
    case arrow::TimeUnit::kNano:
      return 9;
  }
  return 0;
}

int64_t ScaleBetween(int from_exponent, int to_exponent) {
  int64_t scale = 1;
  for (int i = 0; i < std::abs(to_exponent - from_exponent); ++i) scale *= 10;
  return to_exponent >= from_exponent ? scale : -scale;
}

bool IsIntegerType(TypeId t) {
  switch (t) {
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kUInt8:
    case TypeId::kUInt16:
    case TypeId::kUInt32:
    case TypeId::kUInt64:
      return true;
    default:
      return false;
  }
}

// Chooses how the leaf `e` is read as `field`; Unsupported when it cannot be.
Status ChooseConversion(const Node& node, const Field& field, Shape* shape) {
  const SchemaElement& e = *node.e;
  const TypeId t = field.type;
  const PhysicalType p = *e.type;
  auto cannot = [&]() {
    return UnsupportedError("column '" + node.path + "': Parquet type " +
                            std::to_string(static_cast<int>(p)) + " cannot be read as Arrow " +
                            arrow::TypeToString(field));
  };
  if (t == TypeId::kNull) {
    shape->convert = Convert::kNull;
    return Status::Ok();
  }
  if (e.converted_type == kConvertedDecimal || e.logical.kind == LogicalType::kDecimal) {
    return UnsupportedError("column '" + node.path + "': DECIMAL values");
  }
  switch (p) {
    case PhysicalType::kBoolean:
      if (t != TypeId::kBool) return cannot();
      shape->convert = Convert::kBool;
      return Status::Ok();
    case PhysicalType::kInt32:
      if (t == TypeId::kUInt32) {
        shape->convert = Convert::kUInt32Bits;
      } else if (t == TypeId::kDate64) {
        shape->convert = Convert::kDate64Days;
      } else if (IsIntegerType(t) || t == TypeId::kDate32) {
        shape->convert = Convert::kInt;
      } else {
        return cannot();
      }
      return Status::Ok();
    case PhysicalType::kInt64:
      if (t == TypeId::kUInt64) {
        shape->convert = Convert::kUInt64Bits;
      } else if (t == TypeId::kTimestamp) {
        const int from = TimestampExponent(e);
        if (from < 0) return cannot();
        shape->convert = Convert::kScaled;
        shape->scale = ScaleBetween(from, ArrowExponent(field.time_unit));
      } else if (IsIntegerType(t) || t == TypeId::kDate64) {
        shape->convert = Convert::kInt;
      } else {
        return cannot();
      }
      return Status::Ok();
    case PhysicalType::kInt96:
      if (t != TypeId::kTimestamp) return cannot();
      shape->convert = Convert::kInt96;
      shape->scale = ScaleBetween(9, ArrowExponent(field.time_unit));
      return Status::Ok();
    case PhysicalType::kFloat:
      if (t == TypeId::kFloat32) {
        shape->convert = Convert::kFixedBytes;
      } else if (t == TypeId::kFloat64) {
        shape->convert = Convert::kFloatToDouble;
      } else {
        return cannot();
      }
      return Status::Ok();
    case PhysicalType::kDouble:
      if (t != TypeId::kFloat64) return cannot();
      shape->convert = Convert::kFixedBytes;
      return Status::Ok();
    case PhysicalType::kByteArray:
      if (!arrow::IsBinaryLike(t)) return cannot();
      shape->convert = Convert::kBinary;
      return Status::Ok();
    case PhysicalType::kFixedLenByteArray:
      if (t == TypeId::kFloat16 && e.type_length == 2) {
        shape->convert = Convert::kFixedBytes;
      } else if ((t == TypeId::kFixedSizeBinary && field.fixed_size == e.type_length) ||
                 arrow::IsBinaryLike(t)) {
        shape->convert = Convert::kBinary;
      } else {
        return cannot();
      }
      return Status::Ok();
  }
  return cannot();
}

// --- The Arrow schema when the file does not store one ---

Result<Field> DeriveField(const Node& node, bool as_required);

Result<Field> DeriveLeaf(const Node& node) {
  const SchemaElement& e = *node.e;
  Field f = arrow::MakeField(e.name, TypeId::kNull);
  const LogicalType& l = e.logical;
  const int32_t c = e.converted_type;
  switch (*e.type) {
    case PhysicalType::kBoolean:
      f.type = TypeId::kBool;
      break;
    case PhysicalType::kInt32:
      f.type = TypeId::kInt32;
      if (l.kind == LogicalType::kDate || c == kConvertedDate) {
        f.type = TypeId::kDate32;
      } else if (l.kind == LogicalType::kUnknown) {
        f.type = TypeId::kNull;
      } else if (l.kind == LogicalType::kInteger ||
                 (c >= kConvertedUint8 && c <= kConvertedInt8 + 3)) {
        const int bits =
            l.kind == LogicalType::kInteger ? l.bit_width : 8 << ((c - kConvertedUint8) % 4);
        const bool is_signed = l.kind == LogicalType::kInteger ? l.is_signed : c >= kConvertedInt8;
        f.type = bits == 8    ? (is_signed ? TypeId::kInt8 : TypeId::kUInt8)
                 : bits == 16 ? (is_signed ? TypeId::kInt16 : TypeId::kUInt16)
                              : (is_signed ? TypeId::kInt32 : TypeId::kUInt32);
      } else if (l.kind != LogicalType::kNone || (c >= 0 && c != kConvertedDate)) {
        return UnsupportedError("column '" + node.path + "': INT32 with logical type " +
                                std::to_string(static_cast<int>(l.kind)) + "/" + std::to_string(c));
      }
      break;
    case PhysicalType::kInt64: {
      f.type = TypeId::kInt64;
      const int exponent = TimestampExponent(e);
      if (exponent > 0) {
        f = arrow::MakeTimestamp(e.name,
                                 exponent == 3   ? arrow::TimeUnit::kMilli
                                 : exponent == 6 ? arrow::TimeUnit::kMicro
                                                 : arrow::TimeUnit::kNano,
                                 l.kind == LogicalType::kTimestamp && !l.utc ? "" : "UTC");
      } else if ((l.kind == LogicalType::kInteger && !l.is_signed) || c == kConvertedUint8 + 3) {
        f.type = TypeId::kUInt64;
      } else if (l.kind == LogicalType::kUnknown) {
        f.type = TypeId::kNull;
      } else if ((l.kind != LogicalType::kNone && l.kind != LogicalType::kInteger) ||
                 (c >= 0 && c != kConvertedInt8 + 3)) {
        return UnsupportedError("column '" + node.path + "': INT64 with logical type " +
                                std::to_string(static_cast<int>(l.kind)) + "/" + std::to_string(c));
      }
      break;
    }
    case PhysicalType::kInt96:
      f = arrow::MakeTimestamp(e.name, arrow::TimeUnit::kNano);
      break;
    case PhysicalType::kFloat:
      f.type = TypeId::kFloat32;
      break;
    case PhysicalType::kDouble:
      f.type = TypeId::kFloat64;
      break;
    case PhysicalType::kByteArray:
      f.type = (l.kind == LogicalType::kString || l.kind == LogicalType::kJson ||
                l.kind == LogicalType::kEnum || c == kConvertedUtf8 || c == kConvertedJson ||
                c == kConvertedEnum)
                   ? TypeId::kString
                   : TypeId::kBinary;
      break;
    case PhysicalType::kFixedLenByteArray:
      if (l.kind == LogicalType::kFloat16 && e.type_length == 2) {
        f.type = TypeId::kFloat16;
      } else {
        f = arrow::MakeFixedSizeBinary(e.name, e.type_length);
      }
      break;
  }
  return f;
}

Result<Field> DeriveField(const Node& node, bool as_required) {
  const SchemaElement& e = *node.e;
  const bool nullable = !as_required && e.repetition == Repetition::kOptional;
  if (IsMapGroup(e)) return UnsupportedError("column '" + node.path + "': MAP columns");
  Field f;
  if (!as_required && e.repetition == Repetition::kRepeated) {
    // A bare repeated field: a list of required elements.
    DOCFEED_ASSIGN_OR_RETURN(Field item, DeriveField(node, true));
    f = arrow::MakeList(e.name, std::move(item), false);
    return f;
  }
  if (IsListGroup(e)) {
    bool two_level = false;
    DOCFEED_ASSIGN_OR_RETURN(const Node* element, ListElement(node, &two_level));
    DOCFEED_ASSIGN_OR_RETURN(Field item, DeriveField(*element, two_level));
    f = arrow::MakeList(e.name, std::move(item), nullable);
    return f;
  }
  if (node.children.empty()) {
    DOCFEED_ASSIGN_OR_RETURN(f, DeriveLeaf(node));
  } else {
    std::vector<Field> children;
    for (const Node& child : node.children) {
      DOCFEED_ASSIGN_OR_RETURN(Field c, DeriveField(child, false));
      children.push_back(std::move(c));
    }
    f = arrow::MakeStruct(e.name, std::move(children));
  }
  f.nullable = nullable;
  return f;
}

// Where pyarrow's reading departs from ARROW:schema, docfeed follows pyarrow: a list's item is
// named after the Parquet element ("element" in the files pyarrow writes now, "item" or "array"
// in older ones); a timestamp keeps the unit it is stored in (timestamp[s] is stored, and read,
// as milliseconds) and a date64 stored as INT32 days is read as date32.
void AdoptParquetTypes(const Node& node, Field* field, bool as_required) {
  const SchemaElement& e = *node.e;
  if (IsMapGroup(e)) return;
  if (node.children.empty() && (as_required || e.repetition != Repetition::kRepeated)) {
    if (field->type == TypeId::kDate64 && e.type == PhysicalType::kInt32) {
      field->type = TypeId::kDate32;
    }
    const int exponent = TimestampExponent(e);
    if (field->type == TypeId::kTimestamp && e.type == PhysicalType::kInt64 && exponent > 0) {
      field->time_unit = exponent == 3   ? arrow::TimeUnit::kMilli
                         : exponent == 6 ? arrow::TimeUnit::kMicro
                                         : arrow::TimeUnit::kNano;
    }
    return;
  }
  const Node* element = nullptr;
  bool element_required = false;
  if (!as_required && e.repetition == Repetition::kRepeated) {
    element = &node;
    element_required = true;
  } else if (IsListGroup(e)) {
    Result<const Node*> found = ListElement(node, &element_required);
    if (!found.ok()) return;
    element = *found;
  }
  if (element != nullptr) {
    if (!arrow::IsListLike(field->type) || field->children.size() != 1) return;
    field->children[0].name = element->e->name;
    AdoptParquetTypes(*element, &field->children[0], element_required);
    return;
  }
  if (field->type != TypeId::kStruct || field->children.size() != node.children.size()) return;
  for (size_t i = 0; i < node.children.size(); ++i) {
    AdoptParquetTypes(node.children[i], &field->children[i], false);
  }
}

// --- Shapes: the Arrow field over the Parquet nodes ---

Status BuildShape(const Node& node, const Field& field, bool as_required, int16_t parent_def,
                  Shape* shape);

Status BuildList(const Node& repeated, const Node& element, bool element_required,
                 const Field& field, Shape* shape) {
  if (!arrow::IsListLike(field.type)) {
    return UnsupportedError("column '" + repeated.path + "' is a Parquet list, its Arrow type " +
                            arrow::TypeToString(field));
  }
  shape->kind = Shape::kList;
  shape->def_elements = repeated.def;
  shape->rep = repeated.rep;
  Shape& child = shape->children.emplace_back();
  return BuildShape(element, field.children[0], element_required, repeated.def, &child);
}

Status BuildShape(const Node& node, const Field& field, bool as_required, int16_t parent_def,
                  Shape* shape) {
  const SchemaElement& e = *node.e;
  shape->field = &field;
  const bool repeated = e.repetition == Repetition::kRepeated;
  if (IsMapGroup(e)) return UnsupportedError("column '" + node.path + "': MAP columns");
  if (!as_required && repeated) {
    // Legacy bare repeated field: a list that is never null, of required elements.
    shape->nullable = false;
    shape->def_present = parent_def;
    DOCFEED_RETURN_IF_ERROR(BuildList(node, node, true, field, shape));
  } else if (IsListGroup(e)) {
    shape->nullable = !as_required && e.repetition == Repetition::kOptional;
    shape->def_present = node.def;
    bool two_level = false;
    DOCFEED_ASSIGN_OR_RETURN(const Node* element, ListElement(node, &two_level));
    DOCFEED_RETURN_IF_ERROR(BuildList(node.children[0], *element, two_level, field, shape));
  } else {
    shape->nullable = !as_required && e.repetition == Repetition::kOptional;
    shape->def_present = node.def;  // a required node's level is its parent's
    if (node.children.empty()) {
      shape->kind = Shape::kLeaf;
      shape->leaf = node.leaf;
      DOCFEED_RETURN_IF_ERROR(ChooseConversion(node, field, shape));
    } else {
      if (field.type != TypeId::kStruct || field.children.size() != node.children.size()) {
        return UnsupportedError("column '" + node.path + "' is a Parquet group of " +
                                std::to_string(node.children.size()) + " fields, its Arrow type " +
                                arrow::TypeToString(field));
      }
      shape->kind = Shape::kStruct;
      for (size_t i = 0; i < node.children.size(); ++i) {
        Shape& child = shape->children.emplace_back();
        DOCFEED_RETURN_IF_ERROR(
            BuildShape(node.children[i], field.children[i], false, shape->def_present, &child));
      }
    }
  }
  // The leaves under this node.
  if (shape->kind == Shape::kLeaf) {
    shape->first_leaf = shape->leaf;
    shape->last_leaf = shape->leaf + 1;
  } else {
    shape->first_leaf = shape->children.front().first_leaf;
    shape->last_leaf = shape->children.back().last_leaf;
  }
  return Status::Ok();
}

// Builds the views of a finished builder tree (the layout StreamWriter would write).
void ViewOf(const Field& field, const std::vector<arrow::FieldNode>& nodes,
            const std::vector<std::span<const uint8_t>>& buffers, size_t* node, size_t* buffer,
            ArrayView* view) {
  view->field = &field;
  view->length = nodes[*node].length;
  view->null_count = nodes[(*node)++].null_count;
  if (field.type != TypeId::kNull) {
    const std::span<const uint8_t> validity = buffers[(*buffer)++];
    view->validity = view->null_count > 0 ? validity : std::span<const uint8_t>();
    const bool offsets = arrow::IsBinaryLike(field.type) || field.type == TypeId::kList ||
                         field.type == TypeId::kLargeList;
    if (offsets) view->offsets = buffers[(*buffer)++];
    if (arrow::IsBinaryLike(field.type) || (arrow::BufferCount(field.type) == 2 && !offsets)) {
      view->values = buffers[(*buffer)++];
    }
  }
  view->children.resize(field.children.size());
  for (size_t i = 0; i < field.children.size(); ++i) {
    ViewOf(field.children[i], nodes, buffers, node, buffer, &view->children[i]);
  }
}

// Record assembly over the decoded chunks of one row group.
class Assembler {
 public:
  Assembler(const std::vector<LeafDescriptor>& leaves, std::vector<DecodedChunk>& chunks)
      : leaves_(leaves), chunks_(chunks), level_(chunks.size()), value_(chunks.size()) {}

  Status Row(const Shape& shape, ArrayBuilder& builder) {
    const int c = shape.first_leaf;
    if (level_[c] < chunks_[c].num_levels && chunks_[c].Rep(level_[c]) != 0) {
      return Fail(c, "a row starts with a repetition level above 0");
    }
    return Read(shape, builder);
  }

  // Every entry and value of the leaves in [first, last) consumed.
  Status CheckConsumed(int first, int last) const {
    for (int c = first; c < last; ++c) {
      if (level_[c] != chunks_[c].num_levels || value_[c] != chunks_[c].num_values) {
        return Fail(c, "its values do not add up to the row group's rows");
      }
    }
    return Status::Ok();
  }

 private:
  Status Fail(int c, std::string_view what) const {
    return CorruptionError("column '" + leaves_[c].name + "': " + std::string(what));
  }

  Result<int16_t> CurrentDef(int c) const {
    if (level_[c] >= chunks_[c].num_levels) return Fail(c, "fewer values than rows");
    return chunks_[c].Def(level_[c], leaves_[c].max_def);
  }

  void SkipEntry(const Shape& shape) {
    for (int c = shape.first_leaf; c < shape.last_leaf; ++c) ++level_[c];
  }

  Status Read(const Shape& shape, ArrayBuilder& builder) {
    const int c = shape.first_leaf;
    DOCFEED_ASSIGN_OR_RETURN(int16_t def, CurrentDef(c));
    if (def < shape.def_present) {
      if (!shape.nullable) return Fail(c, "a null where the schema requires a value");
      DOCFEED_RETURN_IF_ERROR(builder.AppendNull());
      SkipEntry(shape);
      return Status::Ok();
    }
    switch (shape.kind) {
      case Shape::kLeaf:
        if (def != leaves_[c].max_def) return Fail(c, "a definition level below the value's");
        DOCFEED_RETURN_IF_ERROR(AppendValue(shape, builder));
        ++level_[c];
        return Status::Ok();
      case Shape::kStruct:
        for (size_t i = 0; i < shape.children.size(); ++i) {
          DOCFEED_RETURN_IF_ERROR(Read(shape.children[i], builder.child(i)));
        }
        return builder.AppendStruct();
      case Shape::kList:
        if (def < shape.def_elements) {
          SkipEntry(shape);
          return ListDone(c, builder);
        }
        for (;;) {
          DOCFEED_RETURN_IF_ERROR(Read(shape.children[0], builder.child(0)));
          if (level_[c] >= chunks_[c].num_levels || chunks_[c].Rep(level_[c]) != shape.rep) break;
        }
        return ListDone(c, builder);
    }
    return Status::Ok();
  }

  Status ListDone(int c, ArrayBuilder& builder) {
    Status s = builder.FinishList();
    return s.ok() ? s : Fail(c, s.message());
  }

  Status AppendValue(const Shape& shape, ArrayBuilder& builder) {
    const int c = shape.leaf;
    const DecodedChunk& chunk = chunks_[c];
    const int64_t v = value_[c]++;
    if (v >= chunk.num_values) return Fail(c, "more values than the pages hold");
    const auto width = static_cast<size_t>(FixedWidth(leaves_[c]));
    const uint8_t* fixed = chunk.fixed.data() + static_cast<size_t>(v) * width;
    Status s;
    switch (shape.convert) {
      case Convert::kNull:
        return Fail(c, "a value in a column of nulls");
      case Convert::kBool:
        s = builder.AppendBool(fixed[0] != 0);
        break;
      case Convert::kInt:
      case Convert::kUInt32Bits:
      case Convert::kUInt64Bits:
      case Convert::kDate64Days:
      case Convert::kScaled: {
        int64_t x = 0;
        if (width == 4) {
          int32_t i32;
          std::memcpy(&i32, fixed, 4);
          x = i32;
        } else {
          std::memcpy(&x, fixed, 8);
        }
        if (shape.convert == Convert::kUInt32Bits) {
          s = builder.AppendUInt(static_cast<uint32_t>(x));
        } else if (shape.convert == Convert::kUInt64Bits) {
          s = builder.AppendUInt(static_cast<uint64_t>(x));
        } else if (shape.convert == Convert::kDate64Days) {
          s = builder.AppendInt(x * 86400000);
        } else if (shape.convert == Convert::kScaled) {
          DOCFEED_ASSIGN_OR_RETURN(x, Scale(c, x, shape.scale));
          s = builder.AppendInt(x);
        } else {
          s = builder.AppendInt(x);
        }
        break;
      }
      case Convert::kInt96: {
        int64_t nanos_of_day;
        int32_t julian_day;
        std::memcpy(&nanos_of_day, fixed, 8);
        std::memcpy(&julian_day, fixed + 8, 4);
        constexpr int64_t kUnixEpochJulianDay = 2440588;
        constexpr int64_t kNanosPerDay = int64_t{86400} * 1000000000;
        int64_t ns = 0;
        if (__builtin_mul_overflow(int64_t{julian_day} - kUnixEpochJulianDay, kNanosPerDay, &ns) ||
            __builtin_add_overflow(ns, nanos_of_day, &ns)) {
          return Fail(c, "an INT96 timestamp out of range");
        }
        DOCFEED_ASSIGN_OR_RETURN(ns, Scale(c, ns, shape.scale));
        s = builder.AppendInt(ns);
        break;
      }
      case Convert::kFixedBytes:
        s = builder.AppendFixedWidth({fixed, width});
        break;
      case Convert::kFloatToDouble: {
        float f;
        std::memcpy(&f, fixed, 4);
        s = builder.AppendDouble(f);
        break;
      }
      case Convert::kBinary:
        s = builder.AppendBinary(width == 0 ? chunk.binary[static_cast<size_t>(v)]
                                            : std::span<const uint8_t>(fixed, width));
        break;
    }
    return s.ok() ? s : Fail(c, s.message());
  }

  Result<int64_t> Scale(int c, int64_t x, int64_t scale) const {
    if (scale > 0) {
      int64_t out = 0;
      if (__builtin_mul_overflow(x, scale, &out)) return Fail(c, "a timestamp out of range");
      return out;
    }
    return x / -scale;
  }

  const std::vector<LeafDescriptor>& leaves_;
  std::vector<DecodedChunk>& chunks_;
  std::vector<int64_t> level_;
  std::vector<int64_t> value_;
};

}  // namespace

bool HasParquetMagic(std::span<const uint8_t> first_bytes) {
  return first_bytes.size() >= 4 && std::memcmp(first_bytes.data(), kMagic, 4) == 0;
}

FileReader::FileReader() = default;
FileReader::FileReader(FileReader&&) noexcept = default;
FileReader& FileReader::operator=(FileReader&&) noexcept = default;
FileReader::~FileReader() = default;

Result<FileReader> FileReader::Open(std::unique_ptr<RandomAccessFile> file, std::string name,
                                    ChunkLimits limits) {
  FileReader r;
  r.name_ = std::move(name);
  r.limits_ = limits;
  auto fail = [&](const Status& s) { return s.WithContext(r.name_); };
  const uint64_t size = file->size_bytes();
  if (size < 12) return fail(CorruptionError("too short for a Parquet file"));
  uint8_t head[4];
  uint8_t tail[8];
  DOCFEED_RETURN_IF_ERROR(file->ReadAt(0, head));
  DOCFEED_RETURN_IF_ERROR(file->ReadAt(size - 8, tail));
  if (std::memcmp(head, kMagic, 4) != 0) return fail(CorruptionError("no Parquet magic PAR1"));
  if (std::memcmp(tail + 4, "PARE", 4) == 0) {
    return fail(UnsupportedError("the file is encrypted (its footer is)"));
  }
  if (std::memcmp(tail + 4, kMagic, 4) != 0) {
    return fail(CorruptionError("no PAR1 at its end: the file is truncated or not Parquet"));
  }
  uint32_t footer_size;
  std::memcpy(&footer_size, tail, 4);
  if (footer_size > size - 12) return fail(CorruptionError("the footer is longer than the file"));
  if (footer_size > (uint64_t{64} << 20)) {
    return fail(ResourceExhaustedError("a footer of " + std::to_string(footer_size) +
                                       " bytes (more than 64 MiB)"));
  }
  r.data_end_ = size - 8 - footer_size;
  std::vector<uint8_t> footer(footer_size);
  DOCFEED_RETURN_IF_ERROR(file->ReadAt(r.data_end_, footer));
  Result<FileMetaData> meta = DecodeFileMetaData(footer);
  if (!meta.ok()) return fail(meta.status());
  r.meta_ = std::move(meta).value();
  if (r.meta_.encrypted) return fail(UnsupportedError("the file is encrypted"));

  // The schema tree.
  Node root;
  root.e = &r.meta_.schema[0];
  size_t next = 1;
  int leaves = 0;
  DOCFEED_RETURN_IF_ERROR(
      BuildNodes(r.meta_.schema, &next, &root, 0, &leaves).WithContext(r.name_ + ": schema"));
  if (next != r.meta_.schema.size()) {
    return fail(CorruptionError("the schema has elements outside its root's tree"));
  }
  std::vector<const Node*> leaf_nodes(static_cast<size_t>(leaves));
  auto collect = [&](auto&& self, const Node& n) -> void {
    if (n.leaf >= 0) leaf_nodes[static_cast<size_t>(n.leaf)] = &n;
    for (const Node& c : n.children) self(self, c);
  };
  collect(collect, root);
  for (const Node* n : leaf_nodes) {
    LeafDescriptor d;
    d.name = n->path;
    d.type = *n->e->type;
    d.type_length = n->e->type_length;
    d.max_def = n->def;
    d.max_rep = n->rep;
    if (d.type == PhysicalType::kFixedLenByteArray && d.type_length < 0) {
      return fail(CorruptionError("column '" + d.name + "' has a negative type_length"));
    }
    r.leaves_.push_back(std::move(d));
  }
  int64_t rows = 0;
  for (size_t g = 0; g < r.meta_.row_groups.size(); ++g) {
    const RowGroup& group = r.meta_.row_groups[g];
    if (group.columns.size() != r.leaves_.size()) {
      return fail(CorruptionError("row group " + std::to_string(g) + " has " +
                                  std::to_string(group.columns.size()) + " columns, the schema " +
                                  std::to_string(r.leaves_.size())));
    }
    if (__builtin_add_overflow(rows, group.num_rows, &rows)) {
      return fail(CorruptionError("row counts overflow"));
    }
  }
  if (rows != r.meta_.num_rows) {
    return fail(CorruptionError("its row groups hold " + std::to_string(rows) +
                                " rows, its metadata says " + std::to_string(r.meta_.num_rows)));
  }

  // The Arrow schema: pyarrow's, else derived.
  arrow::Schema schema;
  bool have_arrow_schema = false;
  if (const std::string* stored = r.meta_.FindMetadata("ARROW:schema")) {
    Result<std::string> bytes = DecodeBase64(*stored);
    if (!bytes.ok()) return fail(bytes.status().WithContext("ARROW:schema"));
    const std::span<const uint8_t> message(reinterpret_cast<const uint8_t*>(bytes->data()),
                                           bytes->size());
    Result<arrow::StreamReader> stream = arrow::StreamReader::Open(message, "ARROW:schema");
    if (stream.ok()) {
      schema = stream->schema();
      have_arrow_schema = true;
    } else if (stream.status().code() != StatusCode::kUnsupported) {
      return fail(stream.status());
    }
    // An Arrow type docfeed does not model (a dictionary column, say): the Parquet schema's
    // own types are read instead.
  }
  if (!have_arrow_schema) {
    for (const Node& child : root.children) {
      Result<Field> f = DeriveField(child, false);
      if (!f.ok()) return fail(f.status());
      schema.fields.push_back(std::move(f).value());
    }
  }
  for (const auto& [key, value] : r.meta_.key_value_metadata) {
    if (key != "ARROW:schema" && schema.FindMetadata(key) == nullptr) {
      schema.metadata.emplace_back(key, value);
    }
  }
  if (schema.fields.size() != root.children.size()) {
    return fail(CorruptionError("ARROW:schema has " + std::to_string(schema.fields.size()) +
                                " fields, the Parquet schema " +
                                std::to_string(root.children.size())));
  }
  for (size_t i = 0; i < root.children.size(); ++i) {
    AdoptParquetTypes(root.children[i], &schema.fields[i], false);
  }
  DOCFEED_RETURN_IF_ERROR(arrow::ValidateSchema(schema).WithContext(r.name_));
  r.schema_ = std::make_shared<const arrow::Schema>(std::move(schema));
  for (size_t i = 0; i < root.children.size(); ++i) {
    auto shape = std::make_unique<Shape>();
    Status s = BuildShape(root.children[i], r.schema_->fields[i], false, 0, shape.get());
    if (!s.ok()) return fail(s);
    r.shapes_.push_back(std::move(shape));
  }
  r.file_ = std::move(file);
  return r;
}

Status FileReader::ReadRowGroup(int group, std::span<const size_t> fields,
                                RowGroupBatch* out) const {
  const RowGroup& g = meta_.row_groups[static_cast<size_t>(group)];
  const std::string where = name_ + ": row group " + std::to_string(group);
  *out = RowGroupBatch();
  out->schema = schema_;
  out->num_rows = g.num_rows;
  std::vector<DecodedChunk> chunks(leaves_.size());
  for (size_t f : fields) {
    const Shape& shape = *shapes_[f];
    for (int c = shape.first_leaf; c < shape.last_leaf; ++c) {
      if (chunks[static_cast<size_t>(c)].buffers.empty()) {
        DOCFEED_RETURN_IF_ERROR(ReadColumnChunk(*file_, data_end_,
                                                g.columns[static_cast<size_t>(c)],
                                                leaves_[static_cast<size_t>(c)], limits_,
                                                &chunks[static_cast<size_t>(c)])
                                    .WithContext(where));
      }
    }
  }
  Assembler assembler(leaves_, chunks);
  for (size_t f : fields) {
    const Shape& shape = *shapes_[f];
    ArrayBuilder builder(schema_->fields[f]);
    for (int64_t row = 0; row < g.num_rows; ++row) {
      DOCFEED_RETURN_IF_ERROR(assembler.Row(shape, builder).WithContext(where));
    }
    DOCFEED_RETURN_IF_ERROR(
        assembler.CheckConsumed(shape.first_leaf, shape.last_leaf).WithContext(where));
    DOCFEED_RETURN_IF_ERROR(builder.CheckConsistent().WithContext(where));
    out->fields.push_back(f);
    out->builders.push_back(std::move(builder));
  }
  for (size_t i = 0; i < out->builders.size(); ++i) {
    std::vector<arrow::FieldNode> nodes;
    std::vector<std::span<const uint8_t>> buffers;
    out->builders[i].CollectBuffers(&nodes, &buffers);
    size_t node = 0, buffer = 0;
    ArrayView& view = out->columns.emplace_back();
    ViewOf(schema_->fields[out->fields[i]], nodes, buffers, &node, &buffer, &view);
  }
  return Status::Ok();
}

}  // namespace docfeed::internal::parquet
