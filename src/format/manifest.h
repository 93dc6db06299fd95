// The docfeed manifest (`docfeed.json`): format version, totals, columns, and a checksum for
// every file of a packed dataset and for every region (schema, record batch, end of stream) of
// every Arrow file, so `verify` can say which file, batch and sample a bad byte lives in.
// The manifest checksums itself (field "manifest_xxh3"). Specified in docs/format.md.
#ifndef DOCFEED_FORMAT_MANIFEST_H_
#define DOCFEED_FORMAT_MANIFEST_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "docfeed/status.h"
#include "format/value.h"

namespace docfeed::internal {

inline constexpr int kFormatVersion = 1;
inline constexpr char kManifestFileName[] = "docfeed.json";
inline constexpr char kIndexFileName[] = "docfeed.index";
inline constexpr char kRejectsFileName[] = "rejects.jsonl";
inline constexpr char kImageColumn[] = "image";
inline constexpr char kOriginalColumn[] = "original";  // pack --preprocess ... --keep-original
inline constexpr char kPreprocessDonut[] = "donut";    // PreprocessInfo::preset
// NougatImageProcessor's resized pages: the same record as Donut's (height, width,
// align_long_axis, hf_version; backend "pil" only).
inline constexpr char kPreprocessNougat[] = "nougat";
// Qwen2-VL / Qwen2.5-VL pages (the same processor under the two names a user may pick).
inline constexpr char kPreprocessQwen2VL[] = "qwen2-vl";
inline constexpr char kPreprocessQwen25VL[] = "qwen2.5-vl";
// Idefics3ImageProcessor's prepared pages (src/imaging/idefics3.h: the tile grid with the global
// image in a band below it): recorded by longest_edge, max_image_size and do_image_splitting
// instead of height / width / align_long_axis; backend "pil" only.
inline constexpr char kPreprocessIdefics3[] = "idefics3";
// Pix2StructImageProcessor's prepared pages: decoded, EXIF-oriented and converted to RGB as the
// generation does, at the source's size (every later step depends on the whole page's float
// statistics, so it runs at load time). Recorded by hf_version only (backend "pil"): the pages
// serve any max_patches and patch size.
inline constexpr char kPreprocessPix2Struct[] = "pix2struct";
// PreprocessInfo::stored_form of Pix2Struct: "page" (Prepare's page, the default, recorded by
// no key) or "patches" (the final flattened_patches rows as grayscale float PFM; docs/format.md
// section 10).
inline constexpr char kStoredFormPage[] = "page";
inline constexpr char kStoredFormPatches[] = "patches";

// A byte range of an Arrow file with its XXH3-64.
struct Region {
  enum class Kind { kSchema, kBatch, kEndOfStream };
  Kind kind = Kind::kBatch;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t xxh3 = 0;
  uint64_t first_sample = 0;  // batches: id of the batch's first row
  uint64_t num_rows = 0;      // batches only
  bool operator==(const Region&) const = default;
};

struct FileEntry {
  std::string name;  // relative to the dataset directory
  uint64_t size_bytes = 0;
  uint64_t xxh3 = 0;            // of the whole file
  uint64_t num_rows = 0;        // Arrow data files only
  std::vector<Region> regions;  // Arrow data files only, in file order, covering the whole file
};

// What the stored images are (docs/format.md, "Preprocessed datasets"). The default value means
// the original source images; with preset "donut" every stored image is DonutResize's output (the
// "resized" stage of src/imaging/donut.h: align, shortest-edge resize, thumbnail) for a
// DonutConfig with this height, width, align_long_axis, processor generation (hf_version) and
// backend, stored as binary PGM/PPM (1 channel for grayscale sources, 3 for RGB), so loading only
// decodes and pads. A manifest without hf_version / backend was written before they existed: its
// pages are transformers 4.x's ("pil").
struct PreprocessInfo {
  // "" = original images, "donut" = DonutResize output, "nougat", "qwen2-vl", "idefics3",
  // "pix2struct"
  std::string preset;
  int32_t height = 0;
  int32_t width = 0;
  bool align_long_axis = false;
  int32_t hf_version = 4;       // 4 or 5: DonutConfig::hf_version
  std::string backend = "pil";  // "pil" or "torchvision": DonutBackendName(DonutConfig::backend)
  // Qwen2-VL presets only (height, width and align_long_axis are then unused, 0): the settings
  // smart_resize took; the stored pages are its BICUBIC-resized output.
  int64_t min_pixels = 0;
  int64_t max_pixels = 0;
  int32_t patch_size = 0;
  int32_t merge_size = 0;
  // Idefics3 only (height, width and align_long_axis are then unused, 0): the settings the
  // prepared pages depend on (Idefics3Config's; the normalization is the loader's to choose).
  int32_t longest_edge = 0;
  int32_t max_image_size = 0;
  bool do_image_splitting = false;
  // Pix2Struct only: "" or kStoredFormPage (the prepared page) or kStoredFormPatches (the real
  // flattened_patches rows, made for these max_patches and patch sides, which are 0 otherwise).
  std::string stored_form = {};
  int32_t max_patches = 0;
  int32_t patch_height = 0;
  int32_t patch_width = 0;

  bool preprocessed() const { return !preset.empty(); }
  bool patches_form() const { return stored_form == kStoredFormPatches; }
  bool operator==(const PreprocessInfo&) const = default;
};

// The mean and std (per RGB channel) the dataset's float pixel_values are meant to be normalized
// with: out = (float32(v * rescale_factor) - mean) / std, as DonutImageProcessor's image_mean /
// image_std. Recorded by the migration of a normalized float dataset (src/migrate), so the loader
// reproduces the original tensors; absent in other datasets, which load with Donut's 0.5 / 0.5
// (docs/format.md, "normalization").
struct NormalizationInfo {
  std::array<double, 3> mean = {0.5, 0.5, 0.5};
  std::array<double, 3> std = {0.5, 0.5, 0.5};
  // The arithmetic: "pil" (numpy's, transformers 4.x and 5.x's PIL backend) or "torchvision"
  // (5.x's fused float32 rescale-and-normalize). The migrated pages' preprocess record says the
  // same (hf_version 5, backend torchvision), so the loader builds that table.
  std::string backend = "pil";

  bool operator==(const NormalizationInfo&) const = default;
};

// How the PDF documents of a packed image folder were rendered into its page samples
// (docs/format.md, "pdf"); the default (dpi 0) means the source had none.
struct PdfRenderInfo {
  int32_t dpi = 0;
  bool first_page_only = false;  // pack --pages 1
  std::string renderer;          // e.g. "poppler 22.12.0"

  bool rendered() const { return dpi > 0; }
  bool operator==(const PdfRenderInfo&) const = default;
};

// A part of a pack split over several runs (`pack --part I/N`; docs/format.md section 16): the
// dataset holds the samples of the contiguous slice [first, end) of the source's listing
// (source_samples entries, packed or rejected, in the order a whole pack takes them). `merge`
// joins the N parts into the dataset one pack would have written. count 0: not a part.
struct PartInfo {
  uint32_t index = 0;           // 0-based, < count
  uint32_t count = 0;           // N
  uint64_t source_samples = 0;  // entries the source lists (the whole source, not the slice)
  uint64_t first = 0;           // the slice of them this part holds
  uint64_t end = 0;
  uint64_t source_xxh3 = 0;  // of the listing (names, pages, rows, column values): same source
  // The pack settings that decide the stored rows, as a JSON object text (codec, validate,
  // preprocess, labels, pages, dpi, strict, skip_bad...): parts must agree on every key.
  std::string settings;

  bool is_part() const { return count > 0; }
  bool operator==(const PartInfo&) const = default;
};

// How a merged dataset was made (`merge`; docs/format.md section 16): from `parts` parts whose
// manifest checksums, in part order, hash to parts_xxh3. A rerun of the same merge finds it.
struct MergeInfo {
  uint32_t parts = 0;  // 0: not a merge
  uint64_t parts_xxh3 = 0;

  bool merged() const { return parts > 0; }
  bool operator==(const MergeInfo&) const = default;
};

struct Manifest {
  int format_version = kFormatVersion;
  std::string created_by;
  uint64_t num_samples = 0;
  std::vector<ColumnSpec> columns;  // non-image columns, in Arrow schema order after "image"
  std::string label_column;         // column whose length the index records; "" if none
  std::string codec;                // pack option: keep | png | webp | jpeg
  int jpeg_quality = 0;             // when codec == jpeg
  std::string compression;          // Arrow IPC body compression: none | zstd | lz4_frame
  std::map<std::string, uint64_t> stored_codecs;  // e.g. {"jpeg": 12, "png": 3}
  uint64_t source_bytes = 0;                      // bytes of the source images
  uint64_t stored_image_bytes = 0;                // bytes of the stored images
  uint64_t rejected = 0;                          // samples written to rejects.jsonl (--skip-bad)
  PreprocessInfo preprocess;  // "preprocess" in docfeed.json; absent there = original images
  // "normalization" in docfeed.json; absent there (nullopt) = the loader's default (0.5 / 0.5).
  std::optional<NormalizationInfo> normalization;
  // Name of the extra column holding the untouched source bytes (pack --keep-original), or "".
  std::string original_column;
  // "chat_labels" in docfeed.json, kept as its JSON object text (the token columns' pad id and
  // the settings they were computed with; docs/format.md section 9); "" = absent.
  std::string chat_labels;
  PdfRenderInfo pdf;                   // "pdf" in docfeed.json; absent there = no PDF pages
  PartInfo part;                       // "part" in docfeed.json; absent there = a whole pack
  MergeInfo merged;                    // "merged" in docfeed.json; absent there = not a merge
  std::vector<FileEntry> data_files;   // data-NNNNN-of-NNNNN.arrow, in order
  std::vector<FileEntry> other_files;  // docfeed.index, dataset_info.json, state.json, ...
};

// JSON text with a trailing "manifest_xxh3" over the text (see docs/format.md).
std::string EncodeManifest(const Manifest& manifest);
// Parses and checks the self-checksum; errors name `name` and the field.
Result<Manifest> DecodeManifest(const std::string& text, const std::string& name);

// The manifest's "preprocess" record (docs/format.md section 10) of a preprocessed dataset, as
// JSON text: the preset and the settings its pages depend on, as docfeed.json stores them.
std::string PreprocessJsonText(const PreprocessInfo& p);

std::string Hex64(uint64_t v);

// The column whose per-sample length the index records (Manifest::label_column): "labels" (token
// ids) when present, else "ground_truth", else the first string or int64-list column; "" if none.
std::string PickLabelColumn(const std::vector<ColumnSpec>& columns);

}  // namespace docfeed::internal

#endif  // DOCFEED_FORMAT_MANIFEST_H_
