// docfeed/dataset.h: the public view of format/dataset.h and format/verify.h.
#include "docfeed/dataset.h"
#include "format/dataset.h"
#include "format/verify.h"

namespace docfeed {

Result<DatasetInfo> ReadDatasetInfo(const std::string& path) {
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<internal::Dataset> ds, internal::Dataset::Open(path));
  const internal::Manifest& m = ds->manifest();
  DatasetInfo info;
  info.path = path;
  info.num_samples = ds->size();
  info.preset = m.preprocess.preset;
  info.height = m.preprocess.height;
  info.width = m.preprocess.width;
  info.align_long_axis = m.preprocess.align_long_axis;
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
  for (const internal::FileEntry& f : m.data_files) info.total_bytes += f.size_bytes;
  for (const internal::FileEntry& f : m.other_files) info.total_bytes += f.size_bytes;
  return info;
}

Status VerifyDataset(const std::string& path) { return internal::VerifyDataset(path); }

}  // namespace docfeed
