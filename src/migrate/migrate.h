// `docfeed pack SAVED_DATASET -o OUT`: migrates a Hugging Face `save_to_disk` dataset whose
// pixel_values column holds normalized float tensors (the "preprocessed" kind a `dataset.map`
// over DonutImageProcessor produces) into docfeed datasets of Donut-preprocessed images: exact
// uint8 pixels recovered from the normalization grid, baked-in padding cut off, every other
// column kept. See src/migrate/README.md for the invariants and the resume protocol.
//
// Output: a saved Dataset gives one docfeed dataset at OUT; a DatasetDict gives OUT/<split> for
// every split plus OUT/dataset_dict.json, so `datasets.load_from_disk(OUT)` still opens it.
//
// Thread safety: Migrate() runs its own worker threads; the callbacks are called from them,
// one at a time.
#ifndef DOCFEED_MIGRATE_MIGRATE_H_
#define DOCFEED_MIGRATE_MIGRATE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/env.h"
#include "docfeed/status.h"
#include "migrate/recover.h"

namespace docfeed::internal::migrate {

// Which box of a padded tensor is stored.
enum class BoxPolicy {
  kCentred,  // smallest box that centred padding places exactly (default): Loader reproduces
             // the tensor with centred padding
  kTight,    // every all-zero border row/column cut off (for datasets made with random padding)
  kKeep,     // the whole tensor (--keep-padding)
};

struct MigrateProgress {
  uint64_t rows_done = 0;
  uint64_t rows_total = 0;
  uint64_t bytes_done = 0;  // tensor bytes read
  double elapsed_seconds = 0;
};

struct MigrateOptions {
  std::string source;
  std::string output;
  std::string pixel_column = "pixel_values";
  // Normalizations to try, in order; empty means DefaultCandidates().
  std::vector<NormalizeCandidate> candidates;
  bool allow_lossy = false;  // off-grid values become the nearest grid value instead of an error
  BoxPolicy box = BoxPolicy::kCentred;
  // Arrow IPC body compression of the output; lz4_frame as `pack --preprocess` (packer.h).
  std::string compression = "lz4_frame";
  uint64_t max_file_bytes = 500'000'000;
  int threads = 0;  // 0: one per hardware thread
  bool overwrite = false;
  std::vector<std::string> drop_columns;
  std::function<void(const MigrateProgress&)> on_progress;
  std::function<void(const std::string&)> on_note;  // one-line notes (resuming, restarting)
  // Polled after every row; returning true stops the run with Cancelled and leaves OUT.partial,
  // so the same call later resumes (e.g. on Ctrl-C).
  std::function<bool()> should_stop;
  // Every file the migration reads or writes goes through this Env (Env::Default() when null);
  // it must outlive the call.
  Env* env = nullptr;
};

struct SplitSummary {
  std::string name;    // "" for a saved Dataset
  std::string output;  // the docfeed dataset directory
  uint64_t samples = 0;
  int32_t height = 0;  // tensor size
  int32_t width = 0;
  uint64_t output_bytes = 0;
};

struct MigrateSummary {
  std::vector<SplitSummary> splits;
  NormalizeCandidate normalization;
  FloatType float_type = FloatType::kFloat32;
  std::string pixel_type;  // pyarrow spelling of the tensor column
  bool array3d = false;
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

// Errors name the file, record batch and row (and channel/position for an off-grid value).
// AlreadyExists if OUT exists and !overwrite.
Result<MigrateSummary> Migrate(const MigrateOptions& options);

// The directory an interrupted Migrate() leaves its finished work in: OUT + ".partial".
std::string WorkDirectory(const std::string& output);

}  // namespace docfeed::internal::migrate

#endif  // DOCFEED_MIGRATE_MIGRATE_H_
