// `docfeed verify`: re-checks a packed dataset against its manifest and index. Every file's
// size and XXH3; for an Arrow file that fails, which region (schema, record batch N covering
// samples a..b, end of stream) holds the bad bytes; every record batch parses; every index
// record points at the row and byte range it claims; every sample's image and label checksums.
#ifndef DOCFEED_FORMAT_VERIFY_H_
#define DOCFEED_FORMAT_VERIFY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/env.h"
#include "docfeed/dataset.h"
#include "docfeed/status.h"

namespace docfeed::internal {

using docfeed::VerifyReport;  // public (docfeed/dataset.h)

// Returns a report; an error Status only when the directory cannot be examined at all
// (missing, unreadable manifest file). Files are read through `env` (null: EnvForPath(dir), so URLs
// work).
Result<VerifyReport> VerifyDatasetReport(const std::string& dir, size_t max_problems = 20,
                                         Env* env = nullptr);

// OK if intact, else Corruption whose message lists the first problems.
Status VerifyDataset(const std::string& dir, Env* env = nullptr);

// VerifyDataset with the data files read from `data_dir` through `data_env` instead of from
// `dir` (the manifest, index and other files still come from `dir` through `env`): `pack -o
// s3://` checks the uploaded data objects against the staged manifest and index before the
// manifest goes up.
Status VerifyDatasetWithDataAt(const std::string& dir, Env* env, const std::string& data_dir,
                               Env* data_env);

}  // namespace docfeed::internal

#endif  // DOCFEED_FORMAT_VERIFY_H_
