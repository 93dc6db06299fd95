// docfeed/dataset.h: the public view of format/dataset.h, format/inspect.h and format/verify.h.
#include "docfeed/dataset.h"
#include "format/dataset.h"
#include "format/inspect.h"
#include "format/verify.h"

namespace docfeed {

namespace {

// The manifest's facts every view shares (total_bytes is left to the caller).
DatasetInfo InfoFromManifest(const std::string& path, const internal::Manifest& m) {
  DatasetInfo info;
  info.path = path;
  info.num_samples = m.num_samples;
  info.preset = m.preprocess.preset;
  info.height = m.preprocess.height;
  info.width = m.preprocess.width;
  info.align_long_axis = m.preprocess.align_long_axis;
  info.hf_version = m.preprocess.hf_version;
  info.backend = m.preprocess.backend;
  info.min_pixels = m.preprocess.min_pixels;
  info.max_pixels = m.preprocess.max_pixels;
  info.patch_size = m.preprocess.patch_size;
  info.merge_size = m.preprocess.merge_size;
  info.longest_edge = m.preprocess.longest_edge;
  info.max_image_size = m.preprocess.max_image_size;
  info.do_image_splitting = m.preprocess.do_image_splitting;
  info.stored_form =
      m.preprocess.patches_form() ? internal::kStoredFormPatches : internal::kStoredFormPage;
  info.max_patches = m.preprocess.max_patches;
  info.patch_height = m.preprocess.patch_height;
  info.patch_width = m.preprocess.patch_width;
  info.codec = m.codec;
  info.compression = m.compression;
  info.stored_codecs = m.stored_codecs;
  for (const internal::ColumnSpec& c : m.columns) {
    info.columns.push_back({c.name, std::string(internal::ColumnTypeName(c.type))});
  }
  info.label_column = m.label_column;
  if (m.normalization) {
    info.image_mean = m.normalization->mean;
    info.image_std = m.normalization->std;
  }
  info.original_column = m.original_column;
  info.chat_labels = m.chat_labels;
  info.rejected = m.rejected;
  info.source_bytes = m.source_bytes;
  info.stored_image_bytes = m.stored_image_bytes;
  return info;
}

}  // namespace

Result<DatasetInfo> ReadDatasetInfo(const std::string& path) {
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<internal::Dataset> ds, internal::Dataset::Open(path));
  const internal::Manifest& m = ds->manifest();
  DatasetInfo info = InfoFromManifest(path, m);
  info.num_samples = ds->size();
  for (const internal::FileEntry& f : m.data_files) info.total_bytes += f.size_bytes;
  for (const internal::FileEntry& f : m.other_files) info.total_bytes += f.size_bytes;
  return info;
}

Status VerifyDataset(const std::string& path) { return internal::VerifyDataset(path); }

Result<VerifyReport> VerifyDatasetReport(const std::string& path, size_t max_problems) {
  return internal::VerifyDatasetReport(path, max_problems);
}

Result<DatasetStats> InspectDataset(const std::string& path) {
  DOCFEED_ASSIGN_OR_RETURN(internal::DatasetStats s, internal::InspectDataset(path));
  const internal::Manifest& m = s.manifest;
  DatasetStats out;
  out.info = InfoFromManifest(s.dir, m);
  out.info.total_bytes = s.total_bytes;
  out.format_version = m.format_version;
  out.created_by = m.created_by;
  out.num_data_files = m.data_files.size();
  out.arrow_columns = s.arrow_columns;
  out.channels = s.channels;
  out.width = s.width;
  out.height = s.height;
  out.megapixels = s.megapixels;
  out.image_bytes = s.image_bytes;
  out.common_sizes = s.common_sizes;
  out.label_length = s.label_length;
  out.longest_label_sample = s.longest_label_sample;
  out.samples_without_label = s.samples_without_label;
  out.json = internal::StatsToJson(s);
  return out;
}

}  // namespace docfeed
