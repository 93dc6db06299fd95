// `docfeed pack SAVED_DATASET -o OUT`: the migration of a `save_to_disk` dataset of normalized
// float pixel_values (src/migrate/). pack_command.cc dispatches here.
#ifndef DOCFEED_TOOLS_MIGRATE_COMMAND_H_
#define DOCFEED_TOOLS_MIGRATE_COMMAND_H_

#include "commands.h"

namespace docfeed::tools {

// True when the source argument of `pack` (its first positional argument) is a Hugging Face
// save_to_disk directory (a Dataset or a DatasetDict).
bool IsSavedDatasetSource(const Args& args);

// True when it is a save_to_disk directory with an Image column (docfeed::IsSavedImageDataset),
// which `pack` packs instead of migrating.
bool IsSavedImageDatasetSource(const Args& args);

// Runs the migration; exit code as for every command.
int RunPackSavedDataset(const Args& args);

}  // namespace docfeed::tools

#endif  // DOCFEED_TOOLS_MIGRATE_COMMAND_H_
