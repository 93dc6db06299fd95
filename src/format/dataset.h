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

// One sample as ReadSample returns it. Movable; moving keeps `image` valid (it points into the
// dataset's mapping, which lives as long as the Dataset, or into `owned`, whose heap buffer a
// std::vector move keeps in place). Do not copy it: a copy's `image` would still point into the
// original's `owned`.
struct SampleBytes {
  std::span<const uint8_t> image;  // the stored image bytes (for preprocessed datasets: a PPM)
  // Backing store when the record batch body was compressed: `image` points into it (or into the
  // mapping when the writer stored that buffer uncompressed because compression did not help).
  std::vector<uint8_t> owned;
  std::vector<Value> labels;  // manifest column order; empty unless requested
};

// A reading thread's reusable memory for Dataset::ReadSample: the record batch whose decompressed
// buffers the next read decompresses into (no allocation, no zero fill once they are large
// enough). One per thread; never shared.
struct ReadScratch {
  arrow::RecordBatch batch;
};

class Dataset {
 public:
  // Reads and maps the files through `env` (Env::Default() when null), which must outlive the
  // Dataset.
  static Result<std::unique_ptr<Dataset>> Open(const std::string& dir, Env* env = nullptr);
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

  // The loader's read: the stored image bytes and (when `with_labels`) the labels of sample
  // `id`, decoding the record batch at most once and copying nothing but the labels. Uncompressed
  // bodies: the image is a view into the mapping, and the batch is read only for labels.
  // Compressed bodies: the batch is decompressed once (1-row batches for preprocessed datasets,
  // so that is one sample) and the image's decompressed buffer is moved into `owned`.
  // Checks the image and label checksums as ReadImage/ReadLabels do; errors name the file and
  // sample. Thread-safe.
  // With a `scratch` (the caller thread's own), compressed bodies are decompressed into its
  // buffers instead of fresh ones, and `image` points there (`owned` stays empty): the result is
  // valid until the next ReadSample with the same scratch.
  Result<SampleBytes> ReadSample(uint64_t id, bool with_labels,
                                 ReadScratch* scratch = nullptr) const;

  // Drops the mapped pages that hold sample `id`'s stored bytes (its image for uncompressed
  // bodies, its record batch otherwise) from this process's resident set; the page cache keeps
  // them and a later read faults them back in. Call after the sample's bytes were used, so that
  // reading a dataset larger than RAM keeps the resident set flat. Safe while other threads read
  // the same pages. Advisory: cannot fail; out-of-range ids are ignored.
  void DropPages(uint64_t id) const;

 private:
  Dataset() = default;
  Status CheckRecord(uint64_t id, const IndexRecord& r) const;
  // Columns after the label columns (the `original` image column), which RowValues skips.
  size_t TrailingColumns() const { return manifest_.original_column.empty() ? 0 : 1; }

  std::string dir_;
  Manifest manifest_;
  arrow::Schema schema_;
  MappedFile index_file_;
  IndexView index_;
  std::vector<MappedFile> data_files_;
  std::vector<arrow::StreamReader> readers_;  // one per data file, over data_files_
};

// The Arrow schema docfeed writes for these columns (image struct first), with the
// `huggingface` features metadata that `datasets` reads. With `keep_original`, a second Image
// column kOriginalColumn (struct<bytes, path>, the untouched source file) comes last.
arrow::Schema DatasetSchema(const std::vector<ColumnSpec>& columns, bool keep_original = false);
// The `features` object of dataset_info.json for these columns, as JSON text.
std::string FeaturesJson(const std::vector<ColumnSpec>& columns, bool keep_original = false);

// What `pack --overwrite` and `migrate --overwrite` may replace at `path`: an empty directory,
// a docfeed dataset (its manifest decodes) or, with `allow_dict`, a dataset dictionary
// (dataset_dict.json beside directories that are each a docfeed dataset: migrate's output of a
// DatasetDict). OK for those; otherwise FailedPrecondition naming `path` and what is there (a
// file, a directory that is not a docfeed dataset and one of its entries), so that a mistyped
// -o cannot delete unrelated data.
Status CheckReplaceableOutput(const std::string& path, bool allow_dict, Env* env = nullptr);

}  // namespace docfeed::internal

#endif  // DOCFEED_FORMAT_DATASET_H_
