// Read access to a packed docfeed dataset: the manifest, the Arrow schema, and any sample by id
// in O(1) through the index (no scan of the Arrow files). Files are memory-mapped.
//
// Open() checks the manifest's own checksum, the index checksum and every data file's schema;
// it does not re-hash the data (that is `verify`). Every index entry is bounds-checked against
// the mapped file before it is used, so a damaged dataset gives an error, never a bad read.
// Thread-safe for concurrent reads after Open().
#ifndef DOCFEED_FORMAT_DATASET_H_
#define DOCFEED_FORMAT_DATASET_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/file.h"
#include "docfeed/status.h"
#include "format/arrow/reader.h"
#include "format/arrow/schema.h"
#include "format/index.h"
#include "format/manifest.h"
#include "format/value.h"

namespace docfeed::internal {

class Dataset {
 public:
  static Result<std::unique_ptr<Dataset>> Open(const std::string& dir);
  ~Dataset();
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  const std::string& dir() const { return dir_; }
  const Manifest& manifest() const { return manifest_; }
  const arrow::Schema& schema() const { return schema_; }
  uint64_t size() const { return index_.size(); }
  // REQUIRES: id < size().
  IndexRecord record(uint64_t id) const { return index_.Get(id); }

  // The stored image bytes of sample `id`. For uncompressed bodies this is a view into the
  // mapped file located by the index alone; for compressed ones it is a copy taken from the
  // decompressed record batch. Errors name the file and sample.
  Result<std::vector<uint8_t>> ReadImage(uint64_t id) const;
  // The non-image column values of sample `id`, in manifest column order.
  Result<std::vector<Value>> ReadLabels(uint64_t id) const;

 private:
  Dataset() = default;
  Status CheckRecord(uint64_t id, const IndexRecord& r) const;

  std::string dir_;
  Manifest manifest_;
  arrow::Schema schema_;
  MappedFile index_file_;
  IndexView index_;
  std::vector<MappedFile> data_files_;
  std::vector<arrow::StreamReader> readers_;  // one per data file, over data_files_
};

// The Arrow schema docfeed writes for these columns (image struct first), with the
// `huggingface` features metadata that `datasets` reads.
arrow::Schema DatasetSchema(const std::vector<ColumnSpec>& columns);
// The `features` object of dataset_info.json for these columns, as JSON text.
std::string FeaturesJson(const std::vector<ColumnSpec>& columns);

}  // namespace docfeed::internal

#endif  // DOCFEED_FORMAT_DATASET_H_
