#include "format/arrow/ipc_metadata.h"

#include <string>

namespace docfeed::internal::arrow {
namespace {

using flatbuf::Builder;
using flatbuf::Table;
using flatbuf::Vector;

// Field ids (vtable slots) from Message.fbs and Schema.fbs.
namespace slot {
// Message
constexpr int kMessageVersion = 0;
constexpr int kMessageHeaderType = 1;
constexpr int kMessageHeader = 2;
constexpr int kMessageBodyLength = 3;
// Schema
constexpr int kSchemaEndianness = 0;
constexpr int kSchemaFields = 1;
constexpr int kSchemaMetadata = 2;
// Field
constexpr int kFieldName = 0;
constexpr int kFieldNullable = 1;
constexpr int kFieldTypeType = 2;
constexpr int kFieldType = 3;
constexpr int kFieldDictionary = 4;
constexpr int kFieldChildren = 5;
constexpr int kFieldMetadata = 6;
// KeyValue
constexpr int kKey = 0;
constexpr int kValue = 1;
// RecordBatch
constexpr int kBatchLength = 0;
constexpr int kBatchNodes = 1;
constexpr int kBatchBuffers = 2;
constexpr int kBatchCompression = 3;
// BodyCompression
constexpr int kCompressionCodec = 0;
constexpr int kCompressionMethod = 1;
// Type tables: Int{bitWidth, is_signed}, FloatingPoint{precision}, Date{unit},
// Timestamp{unit, timezone}, FixedSizeBinary{byteWidth}, FixedSizeList{listSize}.
constexpr int kTypeFirst = 0;
constexpr int kTypeSecond = 1;
}  // namespace slot

// Schema.fbs `Type` union tags.
enum class FbsType : uint8_t {
  kNone = 0,
  kNull = 1,
  kInt = 2,
  kFloatingPoint = 3,
  kBinary = 4,
  kUtf8 = 5,
  kBool = 6,
  kDecimal = 7,
  kDate = 8,
  kTime = 9,
  kTimestamp = 10,
  kInterval = 11,
  kList = 12,
  kStruct = 13,
  kUnion = 14,
  kFixedSizeBinary = 15,
  kFixedSizeList = 16,
  kMap = 17,
  kDuration = 18,
  kLargeBinary = 19,
  kLargeUtf8 = 20,
  kLargeList = 21,
};
constexpr uint8_t kMaxFbsTypeTag = 26;  // LargeListView, the last tag known at Arrow 18

constexpr std::string_view kFbsTypeNames[kMaxFbsTypeTag + 1] = {
    "NONE",          "Null",      "Int",           "FloatingPoint",
    "Binary",        "Utf8",      "Bool",          "Decimal",
    "Date",          "Time",      "Timestamp",     "Interval",
    "List",          "Struct",    "Union",         "FixedSizeBinary",
    "FixedSizeList", "Map",       "Duration",      "LargeBinary",
    "LargeUtf8",     "LargeList", "RunEndEncoded", "BinaryView",
    "Utf8View",      "ListView",  "LargeListView"};

Status FieldError(const std::string& path, const Status& status) {
  return status.WithContext("field '" + path + "'");
}

Result<KeyValueMetadata> DecodeMetadata(const Table& table, int metadata_slot) {
  DOCFEED_ASSIGN_OR_RETURN(Vector entries, table.GetVector(metadata_slot, 4));
  KeyValueMetadata out;
  out.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    DOCFEED_ASSIGN_OR_RETURN(Table kv, entries.TableAt(i));
    DOCFEED_ASSIGN_OR_RETURN(auto key, kv.GetString(slot::kKey));
    DOCFEED_ASSIGN_OR_RETURN(auto value, kv.GetString(slot::kValue));
    out.emplace_back(std::string(key.value_or("")), std::string(value.value_or("")));
  }
  return out;
}

Result<TypeId> DecodeInt(const Table& type) {
  DOCFEED_ASSIGN_OR_RETURN(int32_t bit_width, type.GetScalar<int32_t>(slot::kTypeFirst, 0));
  DOCFEED_ASSIGN_OR_RETURN(uint8_t is_signed, type.GetScalar<uint8_t>(slot::kTypeSecond, 0));
  switch (bit_width) {
    case 8:
      return is_signed ? TypeId::kInt8 : TypeId::kUInt8;
    case 16:
      return is_signed ? TypeId::kInt16 : TypeId::kUInt16;
    case 32:
      return is_signed ? TypeId::kInt32 : TypeId::kUInt32;
    case 64:
      return is_signed ? TypeId::kInt64 : TypeId::kUInt64;
    default:
      return CorruptionError("Int type has invalid bitWidth " + std::to_string(bit_width));
  }
}

Result<TypeId> DecodeFloat(const Table& type) {
  DOCFEED_ASSIGN_OR_RETURN(int16_t precision, type.GetScalar<int16_t>(slot::kTypeFirst, 0));
  switch (precision) {
    case 0:
      return TypeId::kFloat16;
    case 1:
      return TypeId::kFloat32;
    case 2:
      return TypeId::kFloat64;
    default:
      return CorruptionError("FloatingPoint type has invalid precision " +
                             std::to_string(precision));
  }
}

Status DecodeTimestamp(const Table& type, Field* field) {
  DOCFEED_ASSIGN_OR_RETURN(int16_t unit, type.GetScalar<int16_t>(slot::kTypeFirst, 0));
  if (unit < 0 || unit > 3) {
    return CorruptionError("Timestamp type has invalid unit " + std::to_string(unit));
  }
  DOCFEED_ASSIGN_OR_RETURN(auto timezone, type.GetString(slot::kTypeSecond));
  field->type = TypeId::kTimestamp;
  field->time_unit = static_cast<TimeUnit>(unit);
  field->timezone = std::string(timezone.value_or(""));
  return Status::Ok();
}

Status DecodeSizedType(const Table& type, TypeId id, Field* field) {
  DOCFEED_ASSIGN_OR_RETURN(int32_t size, type.GetScalar<int32_t>(slot::kTypeFirst, 0));
  if (size < 0) return CorruptionError("negative fixed size " + std::to_string(size));
  field->type = id;
  field->fixed_size = size;
  return Status::Ok();
}

Status DecodeDate(const Table& type, Field* field) {
  DOCFEED_ASSIGN_OR_RETURN(int16_t unit, type.GetScalar<int16_t>(slot::kTypeFirst, 1));
  if (unit != 0 && unit != 1) {
    return CorruptionError("Date type has invalid unit " + std::to_string(unit));
  }
  field->type = unit == 0 ? TypeId::kDate32 : TypeId::kDate64;
  return Status::Ok();
}

// Fills field->type (and its parameters) from the Type union.
Status DecodeType(uint8_t tag, const Table& type, Field* field) {
  switch (static_cast<FbsType>(tag)) {
    case FbsType::kNull:
      field->type = TypeId::kNull;
      return Status::Ok();
    case FbsType::kInt: {
      DOCFEED_ASSIGN_OR_RETURN(field->type, DecodeInt(type));
      return Status::Ok();
    }
    case FbsType::kFloatingPoint: {
      DOCFEED_ASSIGN_OR_RETURN(field->type, DecodeFloat(type));
      return Status::Ok();
    }
    case FbsType::kBinary:
      field->type = TypeId::kBinary;
      return Status::Ok();
    case FbsType::kUtf8:
      field->type = TypeId::kString;
      return Status::Ok();
    case FbsType::kBool:
      field->type = TypeId::kBool;
      return Status::Ok();
    case FbsType::kDate:
      return DecodeDate(type, field);
    case FbsType::kTimestamp:
      return DecodeTimestamp(type, field);
    case FbsType::kList:
      field->type = TypeId::kList;
      return Status::Ok();
    case FbsType::kStruct:
      field->type = TypeId::kStruct;
      return Status::Ok();
    case FbsType::kFixedSizeBinary:
      return DecodeSizedType(type, TypeId::kFixedSizeBinary, field);
    case FbsType::kFixedSizeList:
      return DecodeSizedType(type, TypeId::kFixedSizeList, field);
    case FbsType::kLargeBinary:
      field->type = TypeId::kLargeBinary;
      return Status::Ok();
    case FbsType::kLargeUtf8:
      field->type = TypeId::kLargeString;
      return Status::Ok();
    case FbsType::kLargeList:
      field->type = TypeId::kLargeList;
      return Status::Ok();
    default:
      break;
  }
  if (tag == 0 || tag > kMaxFbsTypeTag) {
    return CorruptionError("invalid type tag " + std::to_string(tag));
  }
  return UnsupportedError("Arrow type " + std::string(kFbsTypeNames[tag]) +
                          " is not supported by docfeed");
}

Result<Field> DecodeField(const Table& table, int depth, const std::string& parent_path);

Status DecodeChildren(const Table& table, int depth, const std::string& path, Field* field) {
  DOCFEED_ASSIGN_OR_RETURN(Vector children, table.GetVector(slot::kFieldChildren, 4));
  field->children.reserve(children.size());
  for (size_t i = 0; i < children.size(); ++i) {
    DOCFEED_ASSIGN_OR_RETURN(Table child, children.TableAt(i));
    DOCFEED_ASSIGN_OR_RETURN(Field decoded, DecodeField(child, depth + 1, path));
    field->children.push_back(std::move(decoded));
  }
  return Status::Ok();
}

Result<Field> DecodeField(const Table& table, int depth, const std::string& parent_path) {
  Field field;
  DOCFEED_ASSIGN_OR_RETURN(auto name, table.GetString(slot::kFieldName));
  field.name = std::string(name.value_or(""));
  const std::string path = parent_path.empty() ? field.name : parent_path + "." + field.name;
  if (depth > kMaxNestingDepth) {
    return CorruptionError("field '" + path + "' nests deeper than " +
                           std::to_string(kMaxNestingDepth) + " levels");
  }
  if (table.HasField(slot::kFieldDictionary)) {
    return UnsupportedError("field '" + path +
                            "' is dictionary-encoded; docfeed does not read dictionaries");
  }
  DOCFEED_ASSIGN_OR_RETURN(uint8_t nullable, table.GetScalar<uint8_t>(slot::kFieldNullable, 0));
  field.nullable = nullable != 0;
  DOCFEED_ASSIGN_OR_RETURN(uint8_t tag, table.GetScalar<uint8_t>(slot::kFieldTypeType, 0));
  DOCFEED_ASSIGN_OR_RETURN(std::optional<Table> type, table.GetTable(slot::kFieldType));
  if (!type.has_value()) return CorruptionError("field '" + path + "' has no type");
  Status status = DecodeType(tag, *type, &field);
  if (!status.ok()) return FieldError(path, status);
  status = DecodeChildren(table, depth, path, &field);
  if (!status.ok()) return status;
  DOCFEED_ASSIGN_OR_RETURN(field.metadata, DecodeMetadata(table, slot::kFieldMetadata));
  Schema single;
  single.fields.push_back(field);
  status = ValidateSchema(single);
  if (!status.ok()) {
    return CorruptionError("field '" + path + "' is malformed: " + std::string(status.message()));
  }
  return field;
}

}  // namespace

Result<DecodedMessage> DecodeMessage(std::span<const uint8_t> metadata) {
  DOCFEED_ASSIGN_OR_RETURN(Table message, Table::Root(metadata));
  DecodedMessage out;
  DOCFEED_ASSIGN_OR_RETURN(out.version, message.GetScalar<int16_t>(slot::kMessageVersion, 0));
  if (out.version < kMetadataV4 || out.version > kMetadataV5) {
    return UnsupportedError("metadata version V" + std::to_string(out.version + 1) +
                            " (docfeed reads V4 and V5)");
  }
  DOCFEED_ASSIGN_OR_RETURN(uint8_t type, message.GetScalar<uint8_t>(slot::kMessageHeaderType, 0));
  if (type == 0 || type > static_cast<uint8_t>(MessageType::kSparseTensor)) {
    return CorruptionError("invalid message header type " + std::to_string(type));
  }
  out.type = static_cast<MessageType>(type);
  DOCFEED_ASSIGN_OR_RETURN(out.body_length,
                           message.GetScalar<int64_t>(slot::kMessageBodyLength, 0));
  if (out.body_length < 0) {
    return CorruptionError("negative body length " + std::to_string(out.body_length));
  }
  DOCFEED_ASSIGN_OR_RETURN(std::optional<Table> header, message.GetTable(slot::kMessageHeader));
  if (!header.has_value()) return CorruptionError("message has no header");
  out.header = *header;
  return out;
}

Result<Schema> DecodeSchema(const Table& table) {
  DOCFEED_ASSIGN_OR_RETURN(int16_t endianness,
                           table.GetScalar<int16_t>(slot::kSchemaEndianness, 0));
  if (endianness != 0) return UnsupportedError("big-endian schema");
  Schema schema;
  DOCFEED_ASSIGN_OR_RETURN(Vector fields, table.GetVector(slot::kSchemaFields, 4));
  schema.fields.reserve(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    DOCFEED_ASSIGN_OR_RETURN(Table field_table, fields.TableAt(i));
    DOCFEED_ASSIGN_OR_RETURN(Field field, DecodeField(field_table, 1, ""));
    schema.fields.push_back(std::move(field));
  }
  DOCFEED_ASSIGN_OR_RETURN(schema.metadata, DecodeMetadata(table, slot::kSchemaMetadata));
  return schema;
}

Result<RecordBatchMeta> DecodeRecordBatch(const Table& table) {
  RecordBatchMeta out;
  DOCFEED_ASSIGN_OR_RETURN(out.length, table.GetScalar<int64_t>(slot::kBatchLength, 0));
  if (out.length < 0) return CorruptionError("negative row count " + std::to_string(out.length));
  DOCFEED_ASSIGN_OR_RETURN(Vector nodes, table.GetVector(slot::kBatchNodes, 16));
  out.nodes.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto bytes = nodes.ElementBytes(i);
    out.nodes[i] = {flatbuf::LoadLE<int64_t>(bytes, 0), flatbuf::LoadLE<int64_t>(bytes, 8)};
  }
  DOCFEED_ASSIGN_OR_RETURN(Vector buffers, table.GetVector(slot::kBatchBuffers, 16));
  out.buffers.resize(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    auto bytes = buffers.ElementBytes(i);
    out.buffers[i] = {flatbuf::LoadLE<int64_t>(bytes, 0), flatbuf::LoadLE<int64_t>(bytes, 8)};
  }
  DOCFEED_ASSIGN_OR_RETURN(std::optional<Table> compression,
                           table.GetTable(slot::kBatchCompression));
  if (compression.has_value()) {
    DOCFEED_ASSIGN_OR_RETURN(int8_t codec,
                             compression->GetScalar<int8_t>(slot::kCompressionCodec, 0));
    DOCFEED_ASSIGN_OR_RETURN(int8_t method,
                             compression->GetScalar<int8_t>(slot::kCompressionMethod, 0));
    if (codec != 0 && codec != 1) {
      return CorruptionError("unknown compression codec " + std::to_string(codec));
    }
    if (method != 0) {
      return UnsupportedError("body compression method " + std::to_string(method));
    }
    out.codec = static_cast<CompressionCodec>(codec);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Encoding

namespace {

Builder::Ref EncodeMetadata(Builder& builder, const KeyValueMetadata& metadata) {
  std::vector<Builder::Ref> entries;
  for (const auto& [key, value] : metadata) {
    const Builder::Ref key_ref = builder.CreateString(key);
    const Builder::Ref value_ref = builder.CreateString(value);
    builder.StartTable();
    builder.AddRef(slot::kKey, key_ref);
    builder.AddRef(slot::kValue, value_ref);
    entries.push_back(builder.EndTable());
  }
  return builder.CreateRefVector(entries);
}

std::pair<FbsType, Builder::Ref> EncodeType(Builder& builder, const Field& field) {
  Builder::Ref timezone = 0;
  if (field.type == TypeId::kTimestamp && !field.timezone.empty()) {
    timezone = builder.CreateString(field.timezone);
  }
  builder.StartTable();
  FbsType tag = FbsType::kNull;
  const auto width = static_cast<int32_t>(FixedWidthBytes(field) * 8);
  switch (field.type) {
    case TypeId::kNull:
      tag = FbsType::kNull;
      break;
    case TypeId::kBool:
      tag = FbsType::kBool;
      break;
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kUInt8:
    case TypeId::kUInt16:
    case TypeId::kUInt32:
    case TypeId::kUInt64: {
      const bool is_signed = field.type <= TypeId::kInt64;
      tag = FbsType::kInt;
      builder.AddScalar<int32_t>(slot::kTypeFirst, width);
      builder.AddScalar<uint8_t>(slot::kTypeSecond, is_signed ? 1 : 0);
      break;
    }
    case TypeId::kFloat16:
    case TypeId::kFloat32:
    case TypeId::kFloat64:
      tag = FbsType::kFloatingPoint;
      builder.AddScalar<int16_t>(
          slot::kTypeFirst,
          static_cast<int16_t>(static_cast<int>(field.type) - static_cast<int>(TypeId::kFloat16)));
      break;
    case TypeId::kBinary:
      tag = FbsType::kBinary;
      break;
    case TypeId::kLargeBinary:
      tag = FbsType::kLargeBinary;
      break;
    case TypeId::kString:
      tag = FbsType::kUtf8;
      break;
    case TypeId::kLargeString:
      tag = FbsType::kLargeUtf8;
      break;
    case TypeId::kFixedSizeBinary:
      tag = FbsType::kFixedSizeBinary;
      builder.AddScalar<int32_t>(slot::kTypeFirst, field.fixed_size);
      break;
    case TypeId::kDate32:
    case TypeId::kDate64:
      tag = FbsType::kDate;
      builder.AddScalar<int16_t>(slot::kTypeFirst, field.type == TypeId::kDate32 ? 0 : 1);
      break;
    case TypeId::kTimestamp:
      tag = FbsType::kTimestamp;
      builder.AddScalar<int16_t>(slot::kTypeFirst, static_cast<int16_t>(field.time_unit));
      if (timezone != 0) builder.AddRef(slot::kTypeSecond, timezone);
      break;
    case TypeId::kList:
      tag = FbsType::kList;
      break;
    case TypeId::kLargeList:
      tag = FbsType::kLargeList;
      break;
    case TypeId::kFixedSizeList:
      tag = FbsType::kFixedSizeList;
      builder.AddScalar<int32_t>(slot::kTypeFirst, field.fixed_size);
      break;
    case TypeId::kStruct:
      tag = FbsType::kStruct;
      break;
  }
  return {tag, builder.EndTable()};
}

Builder::Ref EncodeField(Builder& builder, const Field& field) {
  std::vector<Builder::Ref> children;
  for (const Field& child : field.children) children.push_back(EncodeField(builder, child));
  const Builder::Ref children_ref = builder.CreateRefVector(children);
  const auto [tag, type_ref] = EncodeType(builder, field);
  const Builder::Ref name_ref = builder.CreateString(field.name);
  const Builder::Ref metadata_ref =
      field.metadata.empty() ? 0 : EncodeMetadata(builder, field.metadata);
  builder.StartTable();
  builder.AddRef(slot::kFieldName, name_ref);
  builder.AddScalar<uint8_t>(slot::kFieldNullable, field.nullable ? 1 : 0);
  builder.AddScalar<uint8_t>(slot::kFieldTypeType, static_cast<uint8_t>(tag));
  builder.AddRef(slot::kFieldType, type_ref);
  builder.AddRef(slot::kFieldChildren, children_ref);
  if (metadata_ref != 0) builder.AddRef(slot::kFieldMetadata, metadata_ref);
  return builder.EndTable();
}

std::vector<uint8_t> FinishMessage(Builder& builder, MessageType type, Builder::Ref header,
                                   int64_t body_length) {
  builder.StartTable();
  builder.AddScalar<int64_t>(slot::kMessageBodyLength, body_length);
  builder.AddRef(slot::kMessageHeader, header);
  builder.AddScalar<int16_t>(slot::kMessageVersion, kMetadataV5);
  builder.AddScalar<uint8_t>(slot::kMessageHeaderType, static_cast<uint8_t>(type));
  return builder.Finish(builder.EndTable());
}

template <typename T>
std::vector<uint8_t> PackPairs(const std::vector<T>& items) {
  std::vector<uint8_t> bytes(items.size() * 16);
  for (size_t i = 0; i < items.size(); ++i) {
    std::memcpy(bytes.data() + 16 * i, &items[i], 16);
  }
  return bytes;
}

}  // namespace

std::vector<uint8_t> EncodeSchemaMessage(const Schema& schema) {
  Builder builder;
  std::vector<Builder::Ref> fields;
  for (const Field& field : schema.fields) fields.push_back(EncodeField(builder, field));
  const Builder::Ref fields_ref = builder.CreateRefVector(fields);
  const Builder::Ref metadata_ref =
      schema.metadata.empty() ? 0 : EncodeMetadata(builder, schema.metadata);
  builder.StartTable();
  builder.AddRef(slot::kSchemaFields, fields_ref);
  if (metadata_ref != 0) builder.AddRef(slot::kSchemaMetadata, metadata_ref);
  builder.AddScalar<int16_t>(slot::kSchemaEndianness, 0);
  const Builder::Ref schema_ref = builder.EndTable();
  return FinishMessage(builder, MessageType::kSchema, schema_ref, 0);
}

std::vector<uint8_t> EncodeRecordBatchMessage(const RecordBatchMeta& batch, int64_t body_length) {
  static_assert(sizeof(FieldNode) == 16 && sizeof(BufferSpec) == 16);
  Builder builder;
  const std::vector<uint8_t> nodes = PackPairs(batch.nodes);
  const std::vector<uint8_t> buffers = PackPairs(batch.buffers);
  const Builder::Ref buffers_ref = builder.CreateStructVector(buffers, batch.buffers.size());
  const Builder::Ref nodes_ref = builder.CreateStructVector(nodes, batch.nodes.size());
  Builder::Ref compression_ref = 0;
  if (batch.codec.has_value()) {
    builder.StartTable();
    builder.AddScalar<int8_t>(slot::kCompressionCodec, static_cast<int8_t>(*batch.codec));
    builder.AddScalar<int8_t>(slot::kCompressionMethod, 0);
    compression_ref = builder.EndTable();
  }
  builder.StartTable();
  builder.AddScalar<int64_t>(slot::kBatchLength, batch.length);
  builder.AddRef(slot::kBatchNodes, nodes_ref);
  builder.AddRef(slot::kBatchBuffers, buffers_ref);
  if (compression_ref != 0) builder.AddRef(slot::kBatchCompression, compression_ref);
  const Builder::Ref batch_ref = builder.EndTable();
  return FinishMessage(builder, MessageType::kRecordBatch, batch_ref, body_length);
}

}  // namespace docfeed::internal::arrow
