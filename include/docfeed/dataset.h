// docfeed datasets on disk (docs/format.md): what one holds, read from its manifest and index
// alone (instant at any size), and a full verification of its bytes.
//
// Thread safety: every function is reentrant.
#ifndef DOCFEED_DATASET_H_
#define DOCFEED_DATASET_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "docfeed/env.h"
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
  // The processor generation and backend the stored pages reproduce (DonutConfig); 4 / "pil"
  // for datasets packed before these existed, and for original images.
  int32_t hf_version = 4;
  std::string backend = "pil";
  // Qwen2-VL presets: the smart_resize settings the pages were prepared with (0 otherwise).
  int64_t min_pixels = 0;
  int64_t max_pixels = 0;
  int32_t patch_size = 0;
  int32_t merge_size = 0;
  // Idefics3: the settings its prepared pages depend on (0, 0, false otherwise).
  int32_t longest_edge = 0;
  int32_t max_image_size = 0;
  bool do_image_splitting = false;
  // Pix2Struct: "page" (the prepared page, the default) or "patches" (the final flattened_patches
  // rows, `pack --stored-form patches`), with the max_patches and patch size those rows were
  // made for (0 for the page form and the other presets).
  std::string stored_form = "page";
  int32_t max_patches = 0;
  int32_t patch_height = 0;
  int32_t patch_width = 0;
  std::string codec;        // pack option: keep | png | webp | jpeg | ppm | pfm
  std::string compression;  // Arrow body compression: none | zstd | lz4_frame
  std::map<std::string, uint64_t> stored_codecs;  // e.g. {"jpeg": 12, "png": 3}
  std::vector<ColumnInfo> columns;                // besides "image", in schema order
  std::string label_column;                       // whose lengths the index records; "" if none
  // The normalization a migrated float dataset records (the loader's default when unset).
  std::optional<std::array<double, 3>> image_mean;
  std::optional<std::array<double, 3>> image_std;
  std::string original_column;      // the column of the kept source files (pack --keep-original)
  std::string chat_labels;          // the manifest's chat_labels JSON object text, or ""
  uint64_t rejected = 0;            // samples rejected at pack time
  uint64_t source_bytes = 0;        // the source images' bytes at pack time
  uint64_t stored_image_bytes = 0;  // the stored images' bytes
  uint64_t total_bytes = 0;         // every file the manifest lists
};

// Every function here takes a dataset's local path or its URL (s3://BUCKET/KEY, http(s)://...):
// files are read through EnvForPath(path) (docfeed/remote.h) unless an Env is given.
//
// Reads the manifest and the index of the dataset at `path` (checking their checksums).
// Errors: NotFound when there is no dataset there; Corruption naming the file and field.
Result<DatasetInfo> ReadDatasetInfo(const std::string& path);

// Re-reads every byte of the dataset and checks it against the manifest's and the index's
// checksums, each sample against its Arrow row.
// Errors: Corruption listing the problems found (file, batch, sample, byte range).
Status VerifyDataset(const std::string& path);

// What a full verification found.
struct VerifyReport {
  uint64_t samples_checked = 0;
  uint64_t bytes_checked = 0;
  // One line per problem, naming the file and the batch/sample/byte range, in discovery order.
  std::vector<std::string> problems;
  bool truncated = false;  // more problems than were listed

  bool ok() const { return problems.empty(); }
};

// As VerifyDataset, listing at most `max_problems` problems in the report. An error Status only
// when the directory cannot be examined at all (missing, unreadable manifest).
Result<VerifyReport> VerifyDatasetReport(const std::string& path, size_t max_problems = 20);

// Nearest-rank percentiles of a set of values.
struct Distribution {
  uint64_t count = 0;
  double min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};

// What `docfeed inspect` prints: the manifest's description and statistics over the index
// (image sizes, stored bytes, label lengths), computed without decoding any image.
struct DatasetStats {
  DatasetInfo info;  // as ReadDatasetInfo
  int format_version = 0;
  std::string created_by;
  size_t num_data_files = 0;
  std::vector<std::pair<std::string, std::string>> arrow_columns;  // name, pyarrow type string
  std::map<std::string, uint64_t> channels;             // "L", "LA", "RGB", "RGBA" -> samples
  Distribution width, height, megapixels, image_bytes;  // pixels, pixels, MP, bytes
  std::vector<std::pair<std::string, uint64_t>> common_sizes;  // "WxH" -> samples, top 5
  Distribution label_length;  // over samples with a non-empty label (info.label_column)
  uint64_t longest_label_sample = 0;
  uint64_t samples_without_label = 0;
  std::string json;  // all of it as one JSON document (`docfeed inspect --json`)
};

// Reads the manifest and the index of the dataset at `path`. Errors as ReadDatasetInfo.
Result<DatasetStats> InspectDataset(const std::string& path);

// ---------------------------------------------------------------------------------------------
// Random access to the stored samples: what a benchmark or a custom reader needs below the
// Loader (which batches, prepares and pads; docfeed/loader.h).

// One sample's stored image as Read returns it. Move-only: `bytes` and `pixels` point into the
// dataset's mapping or into `storage`, whose heap buffer a move keeps in place (a copy would
// point into the original's). They stay valid while both this object and the DatasetReader
// that read it live.
struct StoredSample {
  StoredSample() = default;
  StoredSample(StoredSample&&) noexcept = default;
  StoredSample& operator=(StoredSample&&) noexcept = default;
  StoredSample(const StoredSample&) = delete;
  StoredSample& operator=(const StoredSample&) = delete;

  std::span<const uint8_t> bytes;  // the stored image file, checksum verified
  std::string_view codec;          // "jpeg", "png", "webp", "tiff", "ppm" or "pfm" (static strings)
  int32_t width = 0;               // as the index records it, before EXIF orientation
  int32_t height = 0;
  int32_t channels = 0;  // as stored: 1 L, 2 LA, 3 RGB, 4 RGBA
  // The EXIF orientation (1..8, 1 = none) recorded at pack time, which the loader applies before
  // preparing an original image: pass it as PrepareOptions::orientation (docfeed/preprocess.h).
  int32_t orientation = 1;
  // For a PGM/PPM page (codec "ppm", what `pack --preprocess` stores): the validated raster
  // inside `bytes`, height rows of width * channels bytes, without a copy. For a float PFM
  // (codec "pfm", Pix2Struct's stored patch rows) the validated raster as stored: height rows of
  // width little-endian float32 values, bottom row first (PFM's order). Empty otherwise.
  std::span<const uint8_t> pixels;
  // Backs `bytes` when the Arrow body was compressed; not for direct use.
  std::vector<uint8_t> storage;
};

// A dataset opened for reading single samples by id in O(1) through its index, without the
// Loader's threads or buffers. Open() checks the manifest, the index and the data files'
// schemas, as the Loader does; Read() bounds-checks the index entry and verifies the sample's
// checksum.
//
// Thread safety: Read() may be called from any number of threads at once.
// Lifetime: the reader owns the mappings; `env` must outlive it.
class DatasetReader {
 public:
  // Errors: NotFound when there is no dataset at `path`; Corruption naming the file and field.
  static Result<std::unique_ptr<DatasetReader>> Open(const std::string& path, Env* env = nullptr);
  ~DatasetReader();
  DatasetReader(const DatasetReader&) = delete;
  DatasetReader& operator=(const DatasetReader&) = delete;

  uint64_t size() const;  // samples
  // True when the stored images are a preset's prepared pages (DatasetInfo::preset is set).
  bool preprocessed() const;

  // The stored image of sample `id`. Errors: InvalidArgument for id >= size(); Corruption naming
  // the file and sample for a damaged entry or a checksum mismatch; for codec "ppm", Corruption
  // / Unsupported for a malformed or unsupported PGM/PPM header (maxval 255 only), naming the
  // sample.
  Result<StoredSample> Read(uint64_t id) const;

 private:
  class Impl;
  explicit DatasetReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace docfeed

#endif  // DOCFEED_DATASET_H_
