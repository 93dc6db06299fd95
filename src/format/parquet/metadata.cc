#include "format/parquet/metadata.h"

#include "format/parquet/thrift_compact.h"

namespace docfeed::internal::parquet {
namespace {

using T = ThriftType;

Status Missing(std::string_view structure, std::string_view field) {
  return CorruptionError("parquet metadata: " + std::string(structure) + " has no " +
                         std::string(field));
}

// Calls on_field(id, type) for each field of the struct at the reader's cursor; on_field either
// reads the value or returns false to have it skipped.
template <typename F>
Status ReadStruct(CompactReader& r, F&& on_field) {
  DOCFEED_RETURN_IF_ERROR(r.BeginStruct());
  for (;;) {
    int16_t id = 0;
    T type = T::kStop;
    DOCFEED_RETURN_IF_ERROR(r.ReadFieldHeader(&id, &type));
    if (type == T::kStop) break;
    DOCFEED_ASSIGN_OR_RETURN(bool read, on_field(id, type));
    if (!read) DOCFEED_RETURN_IF_ERROR(r.Skip(type));
  }
  r.EndStruct();
  return Status::Ok();
}

// Calls on_element(type) once per element of the list at the cursor.
template <typename F>
Status ReadList(CompactReader& r, T type, F&& on_element) {
  T element = T::kStop;
  int64_t n = 0;
  DOCFEED_RETURN_IF_ERROR(r.ReadListHeader(type, &element, &n));
  for (int64_t i = 0; i < n; ++i) DOCFEED_RETURN_IF_ERROR(on_element(element));
  return Status::Ok();
}

Result<std::string> ReadString(CompactReader& r, T type) {
  DOCFEED_ASSIGN_OR_RETURN(std::string_view s, r.ReadBinary(type));
  return std::string(s);
}

// An empty struct union member (StringType, ListType, ...): only its presence matters.
Status ReadLogicalType(CompactReader& r, LogicalType* out) {
  return ReadStruct(r, [&](int16_t id, T type) -> Result<bool> {
    if (type != T::kStruct) return false;
    switch (id) {
      case LogicalType::kString:
      case LogicalType::kMap:
      case LogicalType::kList:
      case LogicalType::kEnum:
      case LogicalType::kDecimal:
      case LogicalType::kDate:
      case LogicalType::kUnknown:
      case LogicalType::kJson:
      case LogicalType::kBson:
      case LogicalType::kUuid:
      case LogicalType::kFloat16:
        out->kind = static_cast<LogicalType::Kind>(id);
        return false;  // skipped: DECIMAL's scale/precision are also in SchemaElement
      case LogicalType::kTime:
      case LogicalType::kTimestamp:
        out->kind = static_cast<LogicalType::Kind>(id);
        DOCFEED_RETURN_IF_ERROR(ReadStruct(r, [&](int16_t f, T t) -> Result<bool> {
          if (f == 1) {
            DOCFEED_ASSIGN_OR_RETURN(out->utc, r.ReadBool(t));
            return true;
          }
          if (f == 2 && t == T::kStruct) {
            // TimeUnit union: 1 MILLIS, 2 MICROS, 3 NANOS (each an empty struct).
            DOCFEED_RETURN_IF_ERROR(ReadStruct(r, [&](int16_t u, T) -> Result<bool> {
              if (u >= 1 && u <= 3) out->unit = u - 1;
              return false;
            }));
            return true;
          }
          return false;
        }));
        return true;
      case LogicalType::kInteger:
        out->kind = LogicalType::kInteger;
        DOCFEED_RETURN_IF_ERROR(ReadStruct(r, [&](int16_t f, T t) -> Result<bool> {
          if (f == 1) {
            DOCFEED_ASSIGN_OR_RETURN(out->bit_width, r.ReadI32(t));
            return true;
          }
          if (f == 2) {
            DOCFEED_ASSIGN_OR_RETURN(out->is_signed, r.ReadBool(t));
            return true;
          }
          return false;
        }));
        return true;
      default:
        out->kind = LogicalType::kOther;
        return false;
    }
  });
}

Status ReadSchemaElement(CompactReader& r, SchemaElement* e) {
  bool has_name = false;
  DOCFEED_RETURN_IF_ERROR(ReadStruct(r, [&](int16_t id, T type) -> Result<bool> {
    switch (id) {
      case 1: {
        DOCFEED_ASSIGN_OR_RETURN(int32_t v, r.ReadI32(type));
        if (v < 0 || v > 7)
          return CorruptionError("parquet metadata: unknown physical type " + std::to_string(v));
        e->type = static_cast<PhysicalType>(v);
        return true;
      }
      case 2: {
        DOCFEED_ASSIGN_OR_RETURN(e->type_length, r.ReadI32(type));
        return true;
      }
      case 3: {
        DOCFEED_ASSIGN_OR_RETURN(int32_t v, r.ReadI32(type));
        if (v < 0 || v > 2)
          return CorruptionError("parquet metadata: unknown repetition " + std::to_string(v));
        e->repetition = static_cast<Repetition>(v);
        return true;
      }
      case 4: {
        DOCFEED_ASSIGN_OR_RETURN(e->name, ReadString(r, type));
        has_name = true;
        return true;
      }
      case 5: {
        DOCFEED_ASSIGN_OR_RETURN(e->num_children, r.ReadI32(type));
        if (e->num_children < 0) return CorruptionError("parquet metadata: negative num_children");
        return true;
      }
      case 6: {
        DOCFEED_ASSIGN_OR_RETURN(e->converted_type, r.ReadI32(type));
        return true;
      }
      case 10:
        if (type != T::kStruct) return false;
        DOCFEED_RETURN_IF_ERROR(ReadLogicalType(r, &e->logical));
        return true;
      default:
        return false;
    }
  }));
  if (!has_name) return Missing("a SchemaElement", "name");
  return Status::Ok();
}

Status ReadKeyValue(CompactReader& r, std::pair<std::string, std::string>* kv) {
  bool has_key = false;
  DOCFEED_RETURN_IF_ERROR(ReadStruct(r, [&](int16_t id, T type) -> Result<bool> {
    if (id == 1) {
      DOCFEED_ASSIGN_OR_RETURN(kv->first, ReadString(r, type));
      has_key = true;
      return true;
    }
    if (id == 2) {
      DOCFEED_ASSIGN_OR_RETURN(kv->second, ReadString(r, type));
      return true;
    }
    return false;
  }));
  if (!has_key) return Missing("a KeyValue", "key");
  return Status::Ok();
}

Status ReadColumnMetaData(CompactReader& r, ColumnChunk* c) {
  bool has_type = false, has_codec = false, has_offset = false;
  DOCFEED_RETURN_IF_ERROR(ReadStruct(r, [&](int16_t id, T type) -> Result<bool> {
    switch (id) {
      case 1: {
        DOCFEED_ASSIGN_OR_RETURN(int32_t v, r.ReadI32(type));
        if (v < 0 || v > 7)
          return CorruptionError("parquet metadata: unknown column type " + std::to_string(v));
        c->type = static_cast<PhysicalType>(v);
        has_type = true;
        return true;
      }
      case 3:
        DOCFEED_RETURN_IF_ERROR(ReadList(r, type, [&](T t) -> Status {
          DOCFEED_ASSIGN_OR_RETURN(std::string s, ReadString(r, t));
          c->path.push_back(std::move(s));
          return Status::Ok();
        }));
        return true;
      case 4: {
        DOCFEED_ASSIGN_OR_RETURN(c->codec, r.ReadI32(type));
        has_codec = true;
        return true;
      }
      case 5: {
        DOCFEED_ASSIGN_OR_RETURN(c->num_values, r.ReadI64(type));
        return true;
      }
      case 6: {
        DOCFEED_ASSIGN_OR_RETURN(c->total_uncompressed_size, r.ReadI64(type));
        return true;
      }
      case 7: {
        DOCFEED_ASSIGN_OR_RETURN(c->total_compressed_size, r.ReadI64(type));
        return true;
      }
      case 9: {
        DOCFEED_ASSIGN_OR_RETURN(c->data_page_offset, r.ReadI64(type));
        has_offset = true;
        return true;
      }
      case 11: {
        DOCFEED_ASSIGN_OR_RETURN(int64_t v, r.ReadI64(type));
        c->dictionary_page_offset = v;
        return true;
      }
      default:
        return false;
    }
  }));
  if (!has_type || !has_codec || !has_offset) {
    return Missing("a ColumnMetaData", "type, codec or data_page_offset");
  }
  if (c->num_values < 0 || c->total_compressed_size < 0 || c->total_uncompressed_size < 0 ||
      c->data_page_offset < 0 || (c->dictionary_page_offset && *c->dictionary_page_offset < 0)) {
    return CorruptionError("parquet metadata: a ColumnMetaData has a negative size or offset");
  }
  c->has_meta_data = true;
  return Status::Ok();
}

Status ReadColumnChunk(CompactReader& r, ColumnChunk* c) {
  return ReadStruct(r, [&](int16_t id, T type) -> Result<bool> {
    if (id == 1) {
      DOCFEED_ASSIGN_OR_RETURN(c->file_path, ReadString(r, type));
      return true;
    }
    if (id == 3 && type == T::kStruct) {
      DOCFEED_RETURN_IF_ERROR(ReadColumnMetaData(r, c));
      return true;
    }
    return false;
  });
}

Status ReadRowGroup(CompactReader& r, RowGroup* g) {
  bool has_rows = false;
  DOCFEED_RETURN_IF_ERROR(ReadStruct(r, [&](int16_t id, T type) -> Result<bool> {
    if (id == 1) {
      DOCFEED_RETURN_IF_ERROR(ReadList(r, type, [&](T t) -> Status {
        if (t != T::kStruct) return CorruptionError("parquet metadata: a column is not a struct");
        g->columns.emplace_back();
        return ReadColumnChunk(r, &g->columns.back());
      }));
      return true;
    }
    if (id == 3) {
      DOCFEED_ASSIGN_OR_RETURN(g->num_rows, r.ReadI64(type));
      has_rows = true;
      return true;
    }
    return false;
  }));
  if (!has_rows) return Missing("a RowGroup", "num_rows");
  if (g->num_rows < 0) return CorruptionError("parquet metadata: a RowGroup has negative rows");
  return Status::Ok();
}

}  // namespace

std::string CodecName(int32_t codec) {
  static const char* kNames[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                 "BROTLI",       "LZ4",    "ZSTD", "LZ4_RAW"};
  if (codec >= 0 && codec < 8) return kNames[codec];
  return "codec " + std::to_string(codec);
}

std::string EncodingName(int32_t encoding) {
  static const char* kNames[] = {
      "PLAIN",          "GROUP_VAR_INT",       "PLAIN_DICTIONARY",        "RLE",
      "BIT_PACKED",     "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
      "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
  if (encoding >= 0 && encoding < 10) return kNames[encoding];
  return "encoding " + std::to_string(encoding);
}

const std::string* FileMetaData::FindMetadata(std::string_view key) const {
  for (const auto& [k, v] : key_value_metadata) {
    if (k == key) return &v;
  }
  return nullptr;
}

Result<FileMetaData> DecodeFileMetaData(std::span<const uint8_t> bytes) {
  CompactReader r(bytes);
  FileMetaData meta;
  bool has_schema = false, has_rows = false, has_groups = false;
  DOCFEED_RETURN_IF_ERROR(ReadStruct(r, [&](int16_t id, T type) -> Result<bool> {
    switch (id) {
      case 1: {
        DOCFEED_ASSIGN_OR_RETURN(meta.version, r.ReadI32(type));
        return true;
      }
      case 2:
        has_schema = true;
        DOCFEED_RETURN_IF_ERROR(ReadList(r, type, [&](T t) -> Status {
          if (t != T::kStruct)
            return CorruptionError("parquet metadata: schema entry not a struct");
          meta.schema.emplace_back();
          return ReadSchemaElement(r, &meta.schema.back());
        }));
        return true;
      case 3: {
        DOCFEED_ASSIGN_OR_RETURN(meta.num_rows, r.ReadI64(type));
        has_rows = true;
        return true;
      }
      case 4:
        has_groups = true;
        DOCFEED_RETURN_IF_ERROR(ReadList(r, type, [&](T t) -> Status {
          if (t != T::kStruct) return CorruptionError("parquet metadata: row group not a struct");
          meta.row_groups.emplace_back();
          return ReadRowGroup(r, &meta.row_groups.back());
        }));
        return true;
      case 5:
        DOCFEED_RETURN_IF_ERROR(ReadList(r, type, [&](T t) -> Status {
          if (t != T::kStruct) return CorruptionError("parquet metadata: key/value not a struct");
          meta.key_value_metadata.emplace_back();
          return ReadKeyValue(r, &meta.key_value_metadata.back());
        }));
        return true;
      case 6: {
        DOCFEED_ASSIGN_OR_RETURN(meta.created_by, ReadString(r, type));
        return true;
      }
      case 8:
        meta.encrypted = true;
        return false;
      default:
        return false;
    }
  }));
  if (!has_schema || !has_rows || !has_groups) {
    return Missing("the FileMetaData", "schema, num_rows or row_groups");
  }
  if (meta.schema.empty()) return Missing("the FileMetaData", "schema root");
  if (meta.num_rows < 0) return CorruptionError("parquet metadata: negative num_rows");
  return meta;
}

Status DecodePageHeader(std::span<const uint8_t> bytes, PageHeader* h, size_t* header_size) {
  CompactReader r(bytes);
  *h = PageHeader();
  bool has_type = false, has_sizes = false;
  auto data_v1 = [&](int16_t id, T type) -> Result<bool> {
    switch (id) {
      case 1: {
        DOCFEED_ASSIGN_OR_RETURN(h->num_values, r.ReadI32(type));
        return true;
      }
      case 2: {
        DOCFEED_ASSIGN_OR_RETURN(h->encoding, r.ReadI32(type));
        return true;
      }
      case 3: {
        DOCFEED_ASSIGN_OR_RETURN(h->definition_level_encoding, r.ReadI32(type));
        return true;
      }
      case 4: {
        DOCFEED_ASSIGN_OR_RETURN(h->repetition_level_encoding, r.ReadI32(type));
        return true;
      }
      default:
        return false;
    }
  };
  auto data_v2 = [&](int16_t id, T type) -> Result<bool> {
    switch (id) {
      case 1: {
        DOCFEED_ASSIGN_OR_RETURN(h->num_values, r.ReadI32(type));
        return true;
      }
      case 2: {
        DOCFEED_ASSIGN_OR_RETURN(h->num_nulls, r.ReadI32(type));
        return true;
      }
      case 3: {
        DOCFEED_ASSIGN_OR_RETURN(h->num_rows, r.ReadI32(type));
        return true;
      }
      case 4: {
        DOCFEED_ASSIGN_OR_RETURN(h->encoding, r.ReadI32(type));
        return true;
      }
      case 5: {
        DOCFEED_ASSIGN_OR_RETURN(h->definition_levels_byte_length, r.ReadI32(type));
        return true;
      }
      case 6: {
        DOCFEED_ASSIGN_OR_RETURN(h->repetition_levels_byte_length, r.ReadI32(type));
        return true;
      }
      case 7: {
        DOCFEED_ASSIGN_OR_RETURN(h->is_compressed, r.ReadBool(type));
        return true;
      }
      default:
        return false;
    }
  };
  auto dictionary = [&](int16_t id, T type) -> Result<bool> {
    if (id == 1) {
      DOCFEED_ASSIGN_OR_RETURN(h->num_values, r.ReadI32(type));
      return true;
    }
    if (id == 2) {
      DOCFEED_ASSIGN_OR_RETURN(h->encoding, r.ReadI32(type));
      return true;
    }
    return false;
  };
  DOCFEED_RETURN_IF_ERROR(ReadStruct(r, [&](int16_t id, T type) -> Result<bool> {
    switch (id) {
      case 1: {
        DOCFEED_ASSIGN_OR_RETURN(h->type, r.ReadI32(type));
        has_type = true;
        return true;
      }
      case 2: {
        DOCFEED_ASSIGN_OR_RETURN(h->uncompressed_page_size, r.ReadI32(type));
        return true;
      }
      case 3: {
        DOCFEED_ASSIGN_OR_RETURN(h->compressed_page_size, r.ReadI32(type));
        has_sizes = true;
        return true;
      }
      case 5:
        if (type != T::kStruct) return false;
        h->has_data_header = true;
        DOCFEED_RETURN_IF_ERROR(ReadStruct(r, data_v1));
        return true;
      case 7:
        if (type != T::kStruct) return false;
        h->has_dictionary_header = true;
        DOCFEED_RETURN_IF_ERROR(ReadStruct(r, dictionary));
        return true;
      case 8:
        if (type != T::kStruct) return false;
        h->has_data_header = true;
        DOCFEED_RETURN_IF_ERROR(ReadStruct(r, data_v2));
        return true;
      default:
        return false;
    }
  }));
  if (!has_type || !has_sizes) return Missing("a PageHeader", "type or compressed_page_size");
  if (h->uncompressed_page_size < 0 || h->compressed_page_size < 0 || h->num_values < 0 ||
      h->num_nulls < 0 || h->num_rows < 0 || h->definition_levels_byte_length < 0 ||
      h->repetition_levels_byte_length < 0) {
    return CorruptionError("parquet page header: negative size or count");
  }
  const auto type = static_cast<PageType>(h->type);
  if ((type == PageType::kDataPage || type == PageType::kDataPageV2) && !h->has_data_header) {
    return CorruptionError("parquet page header: a data page without its data_page_header");
  }
  if (type == PageType::kDictionaryPage && !h->has_dictionary_header) {
    return CorruptionError("parquet page header: a dictionary page without its header");
  }
  *header_size = r.position();
  return Status::Ok();
}

}  // namespace docfeed::internal::parquet
