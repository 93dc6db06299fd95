// Migrating a Hugging Face `save_to_disk` dataset of normalized float pixel tensors into docfeed
// datasets, as `docfeed pack SAVED -o OUT` does: the "preprocessed" kind a `dataset.map` over
// DonutImageProcessor produces (a pixel_values column of 3 x H x W float16/32/64 nested lists or
// an Array3D). Every value is mapped back to its exact uint8 pixel through the normalization grid
// of the processor's mean/std, padding baked in at preprocessing is cut off (so the loader pads
// afresh), and every other column is kept. docs/format.md and src/migrate/README.md give the
// details and the resume protocol.
//
// Output: a saved Dataset gives one docfeed dataset at OUT; a DatasetDict gives OUT/<split> for
// every split plus OUT/dataset_dict.json, so `datasets.load_from_disk(OUT)` still opens it. The
// output appears atomically; an interrupted run leaves its finished work in OUT.partial, which
// the same call later resumes from.
//
// Thread safety: Migrate() runs its own worker threads (MigrateOptions::threads) and calls the
// callbacks from them, one at a time. Distinct outputs may be migrated concurrently.
#ifndef DOCFEED_MIGRATE_H_
#define DOCFEED_MIGRATE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "docfeed/env.h"
#include "docfeed/preprocess.h"
#include "docfeed/status.h"

namespace docfeed {

// The element type of a pixel_values column.
enum class TensorFloatType { kFloat16, kFloat32, kFloat64 };

// A mean/std pair the tensors may have been normalized with (rescale 1/255 always), per channel
// R, G, B, as the processor's image_mean / image_std, and the arithmetic that computed them:
// kPil is numpy's (transformers 4.x, and 5.x's PIL backend), kTorchvision the fused float32
// rescale-and-normalize of 5.x's torchvision DonutImageProcessor (docs/donut-preprocessing.md
// section 7). The two differ by one float32 ulp on some values.
struct MigrateNormalization {
  std::string name;  // "imagenet_standard", "imagenet_default", "user"
  std::array<double, 3> mean = {0.5, 0.5, 0.5};
  std::array<double, 3> std = {0.5, 0.5, 0.5};
  DonutBackend backend = DonutBackend::kPil;
};

// Which box of a padded tensor is stored.
enum class MigrateBox {
  kCentred,  // the smallest box that centred padding places exactly (default): the loader
             // reproduces the tensor with centred padding
  kTight,    // every all-zero border row/column cut off (for datasets made with random padding)
  kKeep,     // the whole tensor, padding included
};

struct MigrateProgress {
  uint64_t rows_done = 0;
  uint64_t rows_total = 0;
  uint64_t bytes_done = 0;  // tensor bytes read
  double elapsed_seconds = 0;
};

struct MigrateOptions {
  std::string source;  // the save_to_disk directory (Dataset or DatasetDict)
  std::string output;  // the docfeed dataset (or DatasetDict) directory to create
  std::string pixel_column = "pixel_values";
  // Normalizations to try, in order; empty: IMAGENET_STANDARD (0.5 / 0.5, Donut's Hub configs),
  // then IMAGENET_DEFAULT (0.485, 0.456, 0.406 / 0.229, 0.224, 0.225). Each is tried with
  // numpy's arithmetic first, then (every candidate again) with torchvision's, whatever the
  // candidate's `backend` says.
  std::vector<MigrateNormalization> candidates;
  bool allow_lossy = false;  // off-grid values become the nearest grid value instead of an error
  MigrateBox box = MigrateBox::kCentred;
  // Arrow IPC body compression of the output: "lz4_frame" (as `pack --preprocess`), "zstd" or
  // "none".
  std::string compression = "lz4_frame";
  uint64_t max_file_bytes = 500'000'000;  // start a new data file after this many bytes
  int threads = 0;                        // input files converted in parallel; 0: one per core
  bool overwrite = false;                 // replace an existing output
  std::vector<std::string> drop_columns;  // source columns left out
  std::function<void(const MigrateProgress&)> on_progress;  // may be empty
  std::function<void(const std::string&)> on_note;          // one-line notes (resuming, restarting)
  // Polled after every row; returning true stops the run with Cancelled and leaves OUT.partial,
  // so the same call later resumes (e.g. on Ctrl-C). May be empty.
  std::function<bool()> should_stop;
  // Every file the migration reads or writes goes through this Env (Env::Default() when null);
  // not owned, it must outlive the call.
  Env* env = nullptr;
};

// One output dataset.
struct MigrateSplitSummary {
  std::string name;    // "" for a saved Dataset, else the split's name
  std::string output;  // the docfeed dataset directory
  uint64_t samples = 0;
  int32_t height = 0;  // tensor size, pixels
  int32_t width = 0;
  uint64_t output_bytes = 0;
};

struct MigrateSummary {
  std::vector<MigrateSplitSummary> splits;
  MigrateNormalization normalization;  // the one every value was found on
  TensorFloatType float_type = TensorFloatType::kFloat32;
  std::string pixel_type;  // pyarrow spelling of the tensor column
  bool array3d = false;    // a datasets Array3D column
  uint64_t rows = 0;
  uint64_t input_bytes = 0;   // every data file of the source
  uint64_t output_bytes = 0;  // every file of the output
  uint64_t off_grid_values = 0;
  double max_deviation = 0;    // largest distance of a stored value to the grid (0: exact)
  uint64_t cropped = 0;        // samples stored smaller than their tensor
  uint64_t off_centre = 0;     // samples whose tight content box is not centred
  uint64_t grayscale = 0;      // samples stored with 1 channel (R == G == B everywhere)
  uint64_t resumed_files = 0;  // input files whose output an earlier run had finished
  double seconds = 0;
};

// Runs the migration. Errors name the file, record batch and row (and channel/position for an
// off-grid value): InvalidArgument for bad options, NotFound / Corruption for a malformed source,
// Unsupported for a column docfeed cannot store, AlreadyExists if OUT exists and !overwrite,
// Cancelled when should_stop asked, IOError / ResourceExhausted from the file system.
Result<MigrateSummary> Migrate(const MigrateOptions& options);

// True when `path` is a directory with dataset_dict.json, or with state.json and
// dataset_info.json (what `save_to_disk` writes): the probe `docfeed pack` dispatches on.
bool IsSavedDataset(const std::string& path, Env* env = nullptr);

}  // namespace docfeed

#endif  // DOCFEED_MIGRATE_H_
