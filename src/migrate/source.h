// The input side of `docfeed pack` on a Hugging Face `save_to_disk` directory: finds the splits
// and their Arrow data files, classifies the columns (the float pixel tensor, the columns kept
// unchanged), and reads one row's tensor and values out of a record batch.
//
// A saved Dataset is a directory with state.json (listing data-*.arrow in `_data_files`) and
// dataset_info.json; a saved DatasetDict holds dataset_dict.json ({"splits": [...]}) and one
// such directory per split.
//
// Thread safety: plain values and reentrant functions.
#ifndef DOCFEED_MIGRATE_SOURCE_H_
#define DOCFEED_MIGRATE_SOURCE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/json.h"
#include "docfeed/migrate.h"
#include "docfeed/status.h"
#include "format/arrow/reader.h"
#include "format/value.h"
#include "migrate/recover.h"

namespace docfeed::internal::migrate {

struct SplitSource {
  std::string name;  // "" for a saved Dataset, the split name for a DatasetDict
  std::string dir;
  std::vector<std::string> data_files;  // absolute paths, state.json order
  std::vector<uint64_t> file_bytes;
  // The data files are Parquet (`docfeed pack` of a Hub-layout folder), not Arrow streams.
  bool parquet = false;
};

struct SavedDataset {
  std::string root;
  bool is_dict = false;
  std::vector<SplitSource> splits;  // dataset_dict.json order
  uint64_t total_bytes = 0;
};

// True when `path` is a directory with dataset_dict.json, or with state.json and
// dataset_info.json (what `save_to_disk` writes). Public (docfeed/migrate.h); defined in
// source.cc.
using docfeed::IsSavedDataset;

// A JSON file; Corruption naming it when it does not parse.
Result<Json> ReadJsonFile(Env* env, const std::string& path);

// The Hugging Face features `datasets` writes into a data file's schema ("huggingface" metadata,
// info.features), if it has them.
std::optional<Json> HfFeatures(const arrow::Schema& schema);

// Errors: NotFound/Corruption naming the JSON file and field for a malformed directory, a
// missing data file, or a dataset with no data files.
Result<SavedDataset> OpenSavedDataset(const std::string& path, Env* env = nullptr);

// How the tensor column and the kept columns map onto a record batch.
struct SourceLayout {
  int pixel_column = -1;
  FloatType float_type = FloatType::kFloat32;
  bool array3d = false;             // a datasets ArrayND extension column
  std::string pixel_type;           // pyarrow spelling, for messages
  std::vector<int> kept_columns;    // batch column index of each ColumnSpec below
  std::vector<ColumnSpec> columns;  // kept columns, in schema order, with their docfeed types
};

// Finds `pixel_column` (nested list/large_list/fixed_size_list, 3 levels, of float16/32/64, or
// an Array3D extension column, whose storage is the same) and classifies every other column not
// in `drop` as a docfeed ColumnType. Errors name `where` and the column: Unsupported for a tensor
// or kept column of another type, NotFound when the tensor column is missing, InvalidArgument
// when a kept column is called "image" (docfeed's image column).
Result<SourceLayout> InspectSchema(const arrow::Schema& schema, const std::string& where,
                                   const std::string& pixel_column,
                                   const std::vector<std::string>& drop);

// One row's tensor: `channels` planes of height x width values, contiguous in the leaf buffer.
struct TensorRow {
  int32_t channels = 0;
  int32_t height = 0;
  int32_t width = 0;
  std::span<const uint8_t> values;  // channels * height * width little-endian floats
  uint64_t leaf_offset_bytes = 0;   // where `values` starts inside the leaf values buffer
};

// Locates row `row` of the tensor column; checks the C x H x W shape is rectangular and free of
// nulls. Errors: Corruption/InvalidArgument naming the row and the level that is wrong.
Result<TensorRow> ReadTensorRow(const arrow::ArrayView& column, int64_t row, FloatType float_type);

// The values of the kept columns of `row`, in `layout.columns` order.
Result<std::vector<Value>> ReadKeptValues(const arrow::RecordBatch& batch, int64_t row,
                                          const SourceLayout& layout);

}  // namespace docfeed::internal::migrate

#endif  // DOCFEED_MIGRATE_SOURCE_H_
