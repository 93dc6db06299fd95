// `docfeed inspect`: what a packed dataset holds, computed from the manifest and the index
// alone (no image is decoded and no Arrow body is read), so it is instant at any size.
#ifndef DOCFEED_FORMAT_INSPECT_H_
#define DOCFEED_FORMAT_INSPECT_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/env.h"
#include "docfeed/dataset.h"
#include "docfeed/status.h"
#include "format/manifest.h"

namespace docfeed::internal {

using docfeed::Distribution;  // public (docfeed/dataset.h)

// Nearest-rank percentiles of `values` (sorted in place).
Distribution Summarize(std::vector<double>& values);

struct DatasetStats {
  std::string dir;
  Manifest manifest;
  std::vector<std::pair<std::string, std::string>> arrow_columns;  // name, pyarrow type string
  uint64_t total_bytes = 0;                  // every file listed by the manifest
  std::map<std::string, uint64_t> channels;  // "L", "LA", "RGB", "RGBA" -> samples
  Distribution width, height, megapixels, image_bytes;
  std::vector<std::pair<std::string, uint64_t>> common_sizes;  // "WxH" -> samples, top 5
  Distribution label_length;  // over samples with a non-empty label
  uint64_t longest_label_sample = 0;
  uint64_t samples_without_label = 0;
};

// Reads through `env` (null: EnvForPath(dir), so URLs work).
Result<DatasetStats> InspectDataset(const std::string& dir, Env* env = nullptr);
std::string StatsToJson(const DatasetStats& stats);

}  // namespace docfeed::internal

#endif  // DOCFEED_FORMAT_INSPECT_H_
