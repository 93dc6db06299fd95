// One unit of migration work: one input Arrow file -> one "piece", a complete docfeed dataset
// (written by ShardWriter) plus piece.json with what recovery and padding detection found.
// A piece is written into DIR.tmp and renamed to DIR when complete, so a directory named DIR is
// always whole; the assembly step (assemble.h) then moves the pieces' data files into the final
// dataset. Internal to src/migrate.
#ifndef DOCFEED_MIGRATE_PIECE_H_
#define DOCFEED_MIGRATE_PIECE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "docfeed/status.h"
#include "migrate/migrate.h"
#include "migrate/recover.h"
#include "migrate/source.h"

namespace docfeed::internal::migrate {

inline constexpr char kPieceInfoFile[] = "piece.json";

struct PieceTask {
  std::string input;  // the source Arrow file
  std::string
      label;        // how messages and image paths name it, e.g. "train/data-00000-of-00002.arrow"
  std::string dir;  // the piece directory to produce
};

struct PieceConfig {
  const GridInverter* inverter = nullptr;
  SourceLayout layout;  // of the split's first file; every file must match it
  std::string pixel_column;
  std::vector<std::string> drop_columns;
  BoxPolicy box = BoxPolicy::kCentred;
  bool allow_lossy = false;
  std::string compression = "lz4_frame";
  uint64_t max_file_bytes = 500'000'000;
  Env* env = nullptr;  // reads the input, writes the piece (Env::Default() when null)
};

// What a piece holds, saved as piece.json.
struct PieceInfo {
  uint64_t rows = 0;
  int32_t height = 0;  // tensor size (0 when rows == 0)
  int32_t width = 0;
  uint64_t off_grid = 0;
  double max_deviation = 0;
  uint64_t cropped = 0;
  uint64_t off_centre = 0;
  uint64_t grayscale = 0;
  // Per row: the stored box then the tight content box, each top, left, height, width.
  std::vector<std::array<int32_t, 8>> boxes;
};

std::string EncodePieceInfo(const PieceInfo& info);
Result<PieceInfo> DecodePieceInfo(const std::string& text, const std::string& name);

// Called after each row with the tensor bytes it read; a non-OK status stops the piece.
using RowHook = std::function<Status(uint64_t tensor_bytes)>;

// Converts task.input into task.dir (via task.dir + ".tmp"). Errors name task.label, the record
// batch and row; the .tmp directory is left for the caller to remove.
Status ProcessPiece(const PieceTask& task, const PieceConfig& config, const RowHook& after_row);

// The PieceInfo of a finished piece directory, after checking that its manifest, index and every
// data file are present with the manifest's sizes. Error if the piece is incomplete.
Result<PieceInfo> LoadFinishedPiece(const std::string& dir, Env* env = nullptr);

// Counts the rows of an Arrow file, validating every record batch (so a truncated or corrupt
// file is refused before any work starts); returns the schema's layout too.
struct FileScan {
  uint64_t rows = 0;
  SourceLayout layout;
};
Result<FileScan> ScanFile(const std::string& path, const std::string& label,
                          const std::string& pixel_column, const std::vector<std::string>& drop,
                          Env* env = nullptr);

}  // namespace docfeed::internal::migrate

#endif  // DOCFEED_MIGRATE_PIECE_H_
