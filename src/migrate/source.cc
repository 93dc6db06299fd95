#include "migrate/source.h"

#include <algorithm>
#include <optional>

#include "base/file.h"
#include "base/json.h"
#include "format/arrow_cell.h"
#include "format/arrow_column.h"

namespace docfeed::internal::migrate {
namespace {

using arrow::ArrayView;
using arrow::Field;
using arrow::TypeId;

Result<SplitSource> OpenSplit(Env* env, const std::string& dir, const std::string& name) {
  SplitSource split;
  split.name = name;
  split.dir = dir;
  const std::string state_path = JoinPath(dir, "state.json");
  DOCFEED_ASSIGN_OR_RETURN(Json state, ReadJsonFile(env, state_path));
  if (!state.is_object() || !state.contains("_data_files") || !state["_data_files"].is_array()) {
    return CorruptionError(state_path + ": field _data_files is missing or not a list");
  }
  for (const Json& entry : state["_data_files"]) {
    if (!entry.is_object() || !entry.contains("filename") || !entry["filename"].is_string()) {
      return CorruptionError(state_path + ": an entry of _data_files has no filename");
    }
    const std::string file = entry["filename"].get<std::string>();
    if (file.empty() || file.find('/') != std::string::npos || file == "..") {
      return CorruptionError(state_path + ": data file name \"" + file + "\" is not a file name");
    }
    const std::string path = JoinPath(dir, file);
    Result<uint64_t> size = env->FileSize(path);
    if (!size.ok()) return NotFoundError(state_path + " lists " + file + ", which is missing");
    split.data_files.push_back(path);
    split.file_bytes.push_back(*size);
  }
  if (split.data_files.empty()) return InvalidArgumentError(state_path + " lists no data files");
  return split;
}

bool IsFloat(TypeId t) {
  return t == TypeId::kFloat16 || t == TypeId::kFloat32 || t == TypeId::kFloat64;
}

FloatType ToFloatType(TypeId t) {
  if (t == TypeId::kFloat16) return FloatType::kFloat16;
  if (t == TypeId::kFloat64) return FloatType::kFloat64;
  return FloatType::kFloat32;
}

// The docfeed column type of a kept column, or Unsupported.
Result<ColumnType> KeptType(const Field& f) {
  switch (f.type) {
    case TypeId::kString:
      return ColumnType::kString;
    case TypeId::kInt64:
      return ColumnType::kInt64;
    case TypeId::kFloat64:
      return ColumnType::kFloat64;
    case TypeId::kBool:
      return ColumnType::kBool;
    case TypeId::kList:
      if (f.children[0].type == TypeId::kInt64) return ColumnType::kInt64List;
      if (f.children[0].type == TypeId::kFloat64) return ColumnType::kFloat64List;
      if (f.children[0].type == TypeId::kString) return ColumnType::kStringList;
      break;
    default:
      break;
  }
  return UnsupportedError(
      "column '" + f.name + "' (" + arrow::TypeToString(f) +
      ") cannot be kept: docfeed datasets hold string, int64, float64, bool and lists of "
      "int64/float64/string; pass --drop-column " +
      f.name + " to leave it out");
}

// How a kept column is stored: with the file's Hugging Face features, as the source had it
// (format/arrow_column.h: ClassLabel, int32, structs... as "arrow" columns); without them, as
// one of docfeed's own types or not at all.
Result<ColumnSpec> KeptSpec(const Field& f, const std::optional<Json>& features) {
  if (features && features->contains(f.name)) return KeptColumn(f, &(*features)[f.name]);
  DOCFEED_ASSIGN_OR_RETURN(ColumnType type, KeptType(f));
  return ColumnSpec(f.name, type);
}

bool IsArrayExtension(const Field& f) {
  for (const auto& [key, value] : f.metadata) {
    if (key == "ARROW:extension:name" && value.find("datasets.features.features.Array") == 0) {
      return true;
    }
  }
  return false;
}

Status CheckTensorField(const Field& f) {
  const Field* level = &f;
  for (int depth = 0; depth < 3; ++depth) {
    if (!arrow::IsListLike(level->type)) {
      return UnsupportedError(
          "column '" + f.name + "' has type " + arrow::TypeToString(f) +
          "; docfeed migrates a C x H x W tensor stored as 3 levels of lists of "
          "float16/float32/float64 (what datasets writes for a processor's pixel_values, also as "
          "Array3D)");
    }
    level = &level->children[0];
  }
  if (!IsFloat(level->type)) {
    return UnsupportedError("column '" + f.name + "' has type " + arrow::TypeToString(f) +
                            ": the tensor values are " +
                            std::string(arrow::TypeIdName(level->type)) +
                            ", not float16/float32/float64 (normalized pixels)");
  }
  return Status::Ok();
}

// The child range of `slot` of a list level, after a null check.
Result<std::pair<int64_t, int64_t>> Range(const ArrayView& level, int64_t slot, const char* what) {
  if (level.null_count > 0 && level.IsNull(slot)) {
    return InvalidArgumentError(std::string(what) + " " + std::to_string(slot) + " is null");
  }
  return level.GetListRange(slot);
}

// Checks every list of [first, last) in `level` has `*length` children (set from the first) and
// that they are contiguous. Returns the children range they cover.
Result<std::pair<int64_t, int64_t>> UniformLists(const ArrayView& level, int64_t first,
                                                 int64_t last, int64_t* length, const char* what) {
  int64_t begin = 0;
  int64_t end = 0;
  for (int64_t i = first; i < last; ++i) {
    DOCFEED_ASSIGN_OR_RETURN(auto range, Range(level, i, what));
    const int64_t n = range.second - range.first;
    if (i == first) {
      *length = n;
      begin = range.first;
      end = range.first;
    }
    if (n != *length) {
      return InvalidArgumentError("the tensor is not rectangular: " + std::string(what) + " " +
                                  std::to_string(i - first) + " has " + std::to_string(n) +
                                  " values, the first has " + std::to_string(*length));
    }
    if (range.first != end) return CorruptionError(std::string(what) + "s are not contiguous");
    end = range.second;
  }
  return std::make_pair(begin, end);
}

Result<Value> CellValue(const ArrayView& col, int64_t row, ColumnType type) {
  if (col.IsNull(row)) return Value{};
  switch (type) {
    case ColumnType::kString:
      return Value{std::string(col.GetString(row))};
    case ColumnType::kInt64:
      return Value{col.GetInt64(row)};
    case ColumnType::kFloat64:
      return Value{col.GetDouble(row)};
    case ColumnType::kBool:
      return Value{col.GetBool(row)};
    case ColumnType::kArrow:
      return Value{EncodeCell(col, row)};
    default:
      break;
  }
  const ArrayView& items = col.children[0];
  const auto [first, last] = col.GetListRange(row);
  for (int64_t i = first; i < last && items.null_count > 0; ++i) {
    if (items.IsNull(i))
      return InvalidArgumentError("list item " + std::to_string(i - first) +
                                  " is null (docfeed lists hold no nulls)");
  }
  if (type == ColumnType::kInt64List) {
    std::vector<int64_t> v;
    v.reserve(static_cast<size_t>(last - first));
    for (int64_t i = first; i < last; ++i) v.push_back(items.GetInt64(i));
    return Value{std::move(v)};
  }
  if (type == ColumnType::kFloat64List) {
    std::vector<double> v;
    for (int64_t i = first; i < last; ++i) v.push_back(items.GetDouble(i));
    return Value{std::move(v)};
  }
  std::vector<std::string> v;
  for (int64_t i = first; i < last; ++i) v.emplace_back(items.GetString(i));
  return Value{std::move(v)};
}

}  // namespace

Result<Json> ReadJsonFile(Env* env, const std::string& path) {
  DOCFEED_ASSIGN_OR_RETURN(std::string text, env->ReadTextFile(path));
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return CorruptionError(path + ": not valid JSON");
  return j;
}

std::optional<Json> HfFeatures(const arrow::Schema& schema) {
  const std::string* hf = schema.FindMetadata("huggingface");
  if (hf == nullptr) return std::nullopt;
  Json j = Json::parse(*hf, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("info") || !j["info"].is_object() ||
      !j["info"].contains("features") || !j["info"]["features"].is_object()) {
    return std::nullopt;
  }
  return j["info"]["features"];
}

Result<SavedDataset> OpenSavedDataset(const std::string& path, Env* env) {
  env = EnvOrDefault(env);
  SavedDataset ds;
  ds.root = path;
  const std::string dict_path = JoinPath(path, "dataset_dict.json");
  if (env->PathExists(dict_path)) {
    ds.is_dict = true;
    DOCFEED_ASSIGN_OR_RETURN(Json dict, ReadJsonFile(env, dict_path));
    if (!dict.is_object() || !dict.contains("splits") || !dict["splits"].is_array() ||
        dict["splits"].empty()) {
      return CorruptionError(dict_path + ": field splits is missing, empty or not a list");
    }
    for (const Json& s : dict["splits"]) {
      if (!s.is_string() || s.get<std::string>().empty() ||
          s.get<std::string>().find('/') != std::string::npos) {
        return CorruptionError(dict_path + ": a split name is not a directory name");
      }
      const std::string name = s.get<std::string>();
      DOCFEED_ASSIGN_OR_RETURN(SplitSource split, OpenSplit(env, JoinPath(path, name), name));
      ds.splits.push_back(std::move(split));
    }
  } else {
    DOCFEED_ASSIGN_OR_RETURN(SplitSource split, OpenSplit(env, path, ""));
    ds.splits.push_back(std::move(split));
  }
  for (const SplitSource& s : ds.splits) {
    for (uint64_t b : s.file_bytes) ds.total_bytes += b;
  }
  return ds;
}

Result<SourceLayout> InspectSchema(const arrow::Schema& schema, const std::string& where,
                                   const std::string& pixel_column,
                                   const std::vector<std::string>& drop) {
  SourceLayout layout;
  const std::optional<Json> features = HfFeatures(schema);
  for (size_t i = 0; i < schema.fields.size(); ++i) {
    const Field& f = schema.fields[i];
    if (f.name == pixel_column) {
      Status status = CheckTensorField(f);
      if (!status.ok()) return status.WithContext(where);
      layout.pixel_column = static_cast<int>(i);
      layout.array3d = IsArrayExtension(f);
      layout.pixel_type = arrow::TypeToString(f);
      layout.float_type = ToFloatType(f.children[0].children[0].children[0].type);
      continue;
    }
    if (std::find(drop.begin(), drop.end(), f.name) != drop.end()) continue;
    Result<ColumnSpec> spec = KeptSpec(f, features);
    if (!spec.ok()) return spec.status().WithContext(where);
    if (f.name == "image") {
      return InvalidArgumentError(where +
                                  ": column 'image' would clash with docfeed's image "
                                  "column; pass --drop-column image");
    }
    layout.kept_columns.push_back(static_cast<int>(i));
    layout.columns.push_back(std::move(spec).value());
  }
  if (layout.pixel_column < 0) {
    return NotFoundError(where + ": no column '" + pixel_column +
                         "' (pass --pixel-column NAME for another name)");
  }
  return layout;
}

Result<TensorRow> ReadTensorRow(const ArrayView& column, int64_t row, FloatType float_type) {
  const ArrayView& rows = column.children[0];
  const ArrayView& cols = rows.children[0];
  const ArrayView& leaf = cols.children[0];
  DOCFEED_ASSIGN_OR_RETURN(auto channels, Range(column, row, "row"));
  TensorRow t;
  t.channels = static_cast<int32_t>(channels.second - channels.first);
  if (t.channels == 0) return InvalidArgumentError("the tensor is empty (0 channels)");
  int64_t height = 0;
  int64_t width = 0;
  DOCFEED_ASSIGN_OR_RETURN(auto row_range,
                           UniformLists(rows, channels.first, channels.second, &height, "channel"));
  if (height == 0) return InvalidArgumentError("the tensor is empty (0 rows)");
  DOCFEED_ASSIGN_OR_RETURN(auto leaf_range,
                           UniformLists(cols, row_range.first, row_range.second, &width, "row"));
  if (width == 0) return InvalidArgumentError("the tensor is empty (0 columns)");
  if (height > INT32_MAX || width > INT32_MAX) {
    return InvalidArgumentError("the tensor is too large");
  }
  t.height = static_cast<int32_t>(height);
  t.width = static_cast<int32_t>(width);
  for (int64_t i = leaf_range.first; i < leaf_range.second && leaf.null_count > 0; ++i) {
    if (leaf.IsNull(i)) {
      return InvalidArgumentError("value " + std::to_string(i - leaf_range.first) + " is null");
    }
  }
  const uint64_t bytes = FloatTypeBytes(float_type);
  t.leaf_offset_bytes = static_cast<uint64_t>(leaf_range.first) * bytes;
  t.values = leaf.values.subspan(static_cast<size_t>(t.leaf_offset_bytes),
                                 static_cast<size_t>(leaf_range.second - leaf_range.first) * bytes);
  return t;
}

Result<std::vector<Value>> ReadKeptValues(const arrow::RecordBatch& batch, int64_t row,
                                          const SourceLayout& layout) {
  std::vector<Value> values;
  values.reserve(layout.columns.size());
  for (size_t i = 0; i < layout.columns.size(); ++i) {
    const ArrayView& col = batch.columns[static_cast<size_t>(layout.kept_columns[i])];
    Result<Value> v = CellValue(col, row, layout.columns[i].type);
    if (!v.ok()) return v.status().WithContext("column '" + layout.columns[i].name + "'");
    values.push_back(std::move(v).value());
  }
  return values;
}

}  // namespace docfeed::internal::migrate

namespace docfeed {

bool IsSavedDataset(const std::string& path, Env* env) {
  env = internal::EnvOrDefault(env);
  if (!env->IsDirectory(path)) return false;
  if (env->PathExists(internal::JoinPath(path, "dataset_dict.json"))) return true;
  return env->PathExists(internal::JoinPath(path, "state.json")) &&
         env->PathExists(internal::JoinPath(path, "dataset_info.json"));
}

}  // namespace docfeed
