// docfeed datasets on disk (docs/format.md): what one holds, read from its manifest and index
// alone (instant at any size), and a full verification of its bytes.
//
// Thread safety: every function is reentrant.
#ifndef DOCFEED_DATASET_H_
#define DOCFEED_DATASET_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "docfeed/status.h"

namespace docfeed {

struct ColumnInfo {
  std::string name;
  std::string type;  // "string", "int64", "float64", "bool", "list<int64>", ...
};

struct DatasetInfo {
  std::string path;
  uint64_t num_samples = 0;
  // Pages stored by a preset's Prepare (`pack --preprocess NAME`): its name and the size it
  // prepared for; "" (and 0 x 0) for original images.
  std::string preset;
  int32_t height = 0;
  int32_t width = 0;
  bool align_long_axis = false;
  std::string codec;                              // pack option: keep | png | webp | jpeg | ppm
  std::string compression;                        // Arrow body compression: none | zstd | lz4_frame
  std::map<std::string, uint64_t> stored_codecs;  // e.g. {"jpeg": 12, "png": 3}
  std::vector<ColumnInfo> columns;                // besides "image", in schema order
  std::string label_column;                       // whose lengths the index records; "" if none
  // The normalization a migrated float dataset records (the loader's default when unset).
  std::optional<std::array<double, 3>> image_mean;
  std::optional<std::array<double, 3>> image_std;
  uint64_t total_bytes = 0;  // every file the manifest lists
};

// Reads the manifest and the index of the dataset at `path` (checking their checksums).
// Errors: NotFound when there is no dataset there; Corruption naming the file and field.
Result<DatasetInfo> ReadDatasetInfo(const std::string& path);

// Re-reads every byte of the dataset and checks it against the manifest's and the index's
// checksums, each sample against its Arrow row.
// Errors: Corruption listing the problems found (file, batch, sample, byte range).
Status VerifyDataset(const std::string& path);

}  // namespace docfeed

#endif  // DOCFEED_DATASET_H_
