// The last step of a migration: turns the finished pieces of one split (one docfeed dataset per
// input file, see piece.h) into a single docfeed dataset. Data files are renamed, not copied
// (data-NNNNN-of-MMMMM over all pieces, in input order); the index is concatenated with file
// numbers shifted; the manifest, dataset_info.json, state.json and migration.json are written
// fresh; the result is opened and checked (the pieces were verified when written). Deterministic:
// the same pieces give the same bytes. Internal to src/migrate.
#ifndef DOCFEED_MIGRATE_ASSEMBLE_H_
#define DOCFEED_MIGRATE_ASSEMBLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "docfeed/status.h"
#include "format/manifest.h"
#include "migrate/piece.h"

namespace docfeed::internal::migrate {

inline constexpr char kMigrationFile[] = "migration.json";

// REQUIRES: every piece directory is finished (LoadFinishedPiece succeeded) and `out_dir` does not
// exist. The pieces lose their data files (moved into out_dir). `migration_json` is written as
// migration.json (listed in the manifest's other_files); `normalization` (the mean/std the
// tensors were normalized with) becomes the manifest's "normalization", which the loader applies.
// Errors: pieces that disagree on the tensor size or columns; any file error; verify failures.
Result<uint64_t> AssembleSplit(const std::vector<std::string>& piece_dirs,
                               const std::string& out_dir, const std::string& migration_json,
                               const NormalizationInfo& normalization, Env* env = nullptr);

}  // namespace docfeed::internal::migrate

#endif  // DOCFEED_MIGRATE_ASSEMBLE_H_
