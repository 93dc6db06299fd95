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
#include "docfeed/migrate.h"
#include "docfeed/status.h"
#include "migrate/recover.h"

namespace docfeed::internal::migrate {

// The options, progress and summary are the public ones (docfeed/migrate.h), as is Migrate()
// itself (defined in migrate.cc).
using BoxPolicy = docfeed::MigrateBox;
using docfeed::Migrate;
using docfeed::MigrateOptions;
using docfeed::MigrateProgress;
using docfeed::MigrateSummary;
using SplitSummary = docfeed::MigrateSplitSummary;

// The directory an interrupted Migrate() leaves its finished work in: OUT + ".partial".
std::string WorkDirectory(const std::string& output);

}  // namespace docfeed::internal::migrate

#endif  // DOCFEED_MIGRATE_MIGRATE_H_
