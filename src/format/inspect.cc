#include "format/inspect.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

#include "format/arrow/schema.h"
#include "format/dataset.h"

namespace docfeed::internal {
namespace {

const char* ChannelName(uint8_t channels) {
  switch (channels) {
    case 1:
      return "L";
    case 2:
      return "LA";
    case 3:
      return "RGB";
    case 4:
      return "RGBA";
  }
  return "?";
}

double Rank(const std::vector<double>& sorted, double q) {
  // Nearest-rank: the smallest value with at least q of the data at or below it.
  size_t n = sorted.size();
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
  return sorted[std::clamp<size_t>(rank, 1, n) - 1];
}

nlohmann::ordered_json DistributionJson(const Distribution& d) {
  return {{"count", d.count}, {"min", d.min}, {"p50", d.p50},  {"p90", d.p90},
          {"p99", d.p99},     {"max", d.max}, {"mean", d.mean}};
}

void CountSizes(const Dataset& ds, DatasetStats* stats) {
  std::vector<double> w, h, mp, bytes, labels;
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> sizes;
  uint32_t longest = 0;
  for (uint64_t i = 0; i < ds.size(); ++i) {
    IndexRecord r = ds.record(i);
    w.push_back(r.width);
    h.push_back(r.height);
    mp.push_back(static_cast<double>(r.width) * r.height / 1e6);
    bytes.push_back(r.image_length);
    ++stats->channels[ChannelName(r.channels)];
    ++sizes[{r.width, r.height}];
    if (r.label_length == 0) {
      ++stats->samples_without_label;
      continue;
    }
    labels.push_back(r.label_length);
    if (r.label_length > longest) {
      longest = r.label_length;
      stats->longest_label_sample = i;
    }
  }
  stats->width = Summarize(w);
  stats->height = Summarize(h);
  stats->megapixels = Summarize(mp);
  stats->image_bytes = Summarize(bytes);
  stats->label_length = Summarize(labels);
  std::vector<std::pair<uint64_t, std::string>> by_count;
  for (const auto& [wh, n] : sizes) {
    by_count.emplace_back(n, std::to_string(wh.first) + "x" + std::to_string(wh.second));
  }
  std::stable_sort(by_count.begin(), by_count.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < by_count.size() && i < 5; ++i) {
    stats->common_sizes.emplace_back(by_count[i].second, by_count[i].first);
  }
}

}  // namespace

Distribution Summarize(std::vector<double>& values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.min = values.front();
  d.max = values.back();
  d.p50 = Rank(values, 0.50);
  d.p90 = Rank(values, 0.90);
  d.p99 = Rank(values, 0.99);
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  return d;
}

Result<DatasetStats> InspectDataset(const std::string& dir, Env* env) {
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<Dataset> ds, Dataset::Open(dir, env));
  DatasetStats stats;
  stats.dir = dir;
  stats.manifest = ds->manifest();
  for (const arrow::Field& f : ds->schema().fields) {
    stats.arrow_columns.emplace_back(f.name, arrow::TypeToString(f));
  }
  for (const FileEntry& f : stats.manifest.data_files) stats.total_bytes += f.size_bytes;
  for (const FileEntry& f : stats.manifest.other_files) stats.total_bytes += f.size_bytes;
  CountSizes(*ds, &stats);
  return stats;
}

std::string StatsToJson(const DatasetStats& s) {
  nlohmann::ordered_json j;
  j["path"] = s.dir;
  j["samples"] = s.manifest.num_samples;
  nlohmann::ordered_json cols = nlohmann::ordered_json::array();
  for (const auto& [name, type] : s.arrow_columns) cols.push_back({{"name", name}, {"type", type}});
  j["columns"] = cols;
  j["codec_option"] = s.manifest.codec;
  j["stored_codecs"] = s.manifest.stored_codecs;
  j["channels"] = s.channels;
  j["compression"] = s.manifest.compression;
  // As docfeed.json records it: each preset's own settings.
  if (s.manifest.preprocess.preprocessed()) {
    j["preprocess"] = nlohmann::ordered_json::parse(PreprocessJsonText(s.manifest.preprocess));
  } else {
    j["preprocess"] = nullptr;  // original images
  }
  if (s.manifest.normalization) {
    j["normalization"] = {{"mean", s.manifest.normalization->mean},
                          {"std", s.manifest.normalization->std}};
  }
  if (!s.manifest.original_column.empty()) j["original_column"] = s.manifest.original_column;
  j["source_bytes"] = s.manifest.source_bytes;
  j["stored_image_bytes"] = s.manifest.stored_image_bytes;
  j["total_bytes"] = s.total_bytes;
  j["data_files"] = s.manifest.data_files.size();
  j["width"] = DistributionJson(s.width);
  j["height"] = DistributionJson(s.height);
  j["megapixels"] = DistributionJson(s.megapixels);
  j["image_bytes"] = DistributionJson(s.image_bytes);
  nlohmann::ordered_json sizes = nlohmann::ordered_json::array();
  for (const auto& [wh, n] : s.common_sizes) sizes.push_back({{"size", wh}, {"samples", n}});
  j["common_sizes"] = sizes;
  if (!s.manifest.label_column.empty()) {
    j["label_column"] = s.manifest.label_column;
    j["label_length"] = DistributionJson(s.label_length);
    j["longest_label_sample"] = s.longest_label_sample;
    j["samples_without_label"] = s.samples_without_label;
  }
  j["rejected"] = s.manifest.rejected;
  return j.dump(2) + "\n";
}

}  // namespace docfeed::internal
