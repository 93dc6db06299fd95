// `docfeed verify`: re-checks a packed dataset against its manifest and index. Every file's
// size and XXH3; for an Arrow file that fails, which region (schema, record batch N covering
// samples a..b, end of stream) holds the bad bytes; every record batch parses; every index
// record points at the row and byte range it claims; every sample's image and label checksums.
#ifndef DOCFEED_FORMAT_VERIFY_H_
#define DOCFEED_FORMAT_VERIFY_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/env.h"
#include "docfeed/dataset.h"
#include "docfeed/status.h"
#include "format/index.h"
#include "format/manifest.h"

namespace docfeed::internal {

using docfeed::VerifyReport;  // public (docfeed/dataset.h)

// Returns a report; an error Status only when the directory cannot be examined at all
// (missing, unreadable manifest file). Files are read through `env` (null: EnvForPath(dir), so URLs
// work).
Result<VerifyReport> VerifyDatasetReport(const std::string& dir, size_t max_problems = 20,
                                         Env* env = nullptr);

// OK if intact, else Corruption whose message lists the first problems.
Status VerifyDataset(const std::string& dir, Env* env = nullptr);

// For a writer that sends each data file away once it is written (`pack -o s3://`), verify in
// two steps: VerifyDataFile checks one file as VerifyDataset would (size, checksums, every
// record batch parses, every row against its index record, the image and label checksums)
// against the writer's index records in memory; VerifyDatasetWithDataSent then checks the
// finished directory without its data files: the manifest, index and other files as
// VerifyDataset does, each data file the manifest lists one of `sent` (same size, XXH3 and
// regions), every sample in exactly one of them, and the manifest's totals.
// `manifest` holds the columns, the preprocessing and the file's entry at data_files[file_index];
// `records` every sample's index record written so far. Errors name the file.
Status VerifyDataFile(const Manifest& manifest, size_t file_index, const std::string& path,
                      std::span<const IndexRecord> records, Env* env = nullptr);
Status VerifyDatasetWithDataSent(const std::string& dir, Env* env,
                                 const std::vector<FileEntry>& sent);

}  // namespace docfeed::internal

#endif  // DOCFEED_FORMAT_VERIFY_H_
