// Read access to a packed docfeed dataset: the manifest, the Arrow schema, and any sample by id
// in O(1) through the index (no scan of the Arrow files).
//
// Open() checks the manifest's own checksum, the index checksum, every data file's size, region
// list and schema; it does not re-hash the data (that is `verify`). The index is read into memory;
// the data files stay open and every sample is read with positioned reads (Env's
// RandomAccessFile) into the caller's buffers, never through a mapping: a data file truncated or
// rewritten in place while the Dataset is open gives an error naming the file and sample, never
// a signal (SIGBUS). Every index entry is checked against the manifest's record batch list (the
// batch it names starts there and holds that sample id at that row, the image range lies in the
// batch) before it is used, and the bytes read are re-hashed, so a damaged or changing dataset
// gives an error, never a bad read or another sample's pixels.
// Thread-safe for concurrent reads after Open().
#ifndef DOCFEED_FORMAT_DATASET_H_
#define DOCFEED_FORMAT_DATASET_H_

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/file.h"
#include "base/mutex.h"
#include "docfeed/status.h"
#include "format/arrow/reader.h"
#include "format/arrow/schema.h"
#include "format/index.h"
#include "format/manifest.h"
#include "format/value.h"

namespace docfeed::internal {

// One sample as ReadSample returns it. Movable; moving keeps `image` valid (it points into
// `owned`, whose heap buffer a std::vector move keeps in place, or into the caller's ReadScratch).
// Do not copy it: a copy's `image` would still point into the original's `owned`.
struct SampleBytes {
  std::span<const uint8_t> image;  // the stored image bytes (for preprocessed datasets: a PPM)
  // Backing store when ReadSample had no scratch: `image` points into it.
  std::vector<uint8_t> owned;
  std::vector<Value> labels;  // manifest column order; empty unless requested
};

// A reading thread's reusable memory for Dataset::ReadSample: the bytes read from the data file
// (an image, or a whole record batch message) and the record batch whose decompressed buffers
// the next read decompresses into (no allocation, no zero fill once they are large enough). One
// per thread; never shared.
struct ReadScratch {
  std::vector<uint8_t> bytes;
  // The record batch message last read: `bytes`, or the part of a FetchedRange that holds it
  // (not copied; `batch` may view it, so the range must outlive the use of what was read).
  std::span<const uint8_t> message;
  arrow::RecordBatch batch;
};

// A byte range of data file `file` (the manifest's data_files order).
struct FileRange {
  uint32_t file = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t end() const { return offset + length; }
};

// The bytes a reader fetches ahead for one sample (pipeline/range_prefetcher.h): the range
// ReadSample reads the sample from, and the XXH3-64 the manifest or the index gives for exactly
// those bytes, so they are checked on arrival, before anything parses them.
struct SamplePlan {
  FileRange range;
  uint64_t xxh3 = 0;
  // The whole record batch (its region's checksum) rather than the image alone (the index's
  // image_hash).
  bool whole_batch = false;
};

// Bytes of a data file already in memory: ReadSample serves its reads that lie inside from
// here instead of the file, and checks everything it checks on a file's bytes, except one: an
// image read in place from within `checked`, or decompressed from a record batch that lies
// there, is not hashed again (decompression is a function of the checked bytes; the row's
// labels are still checked). A whole record batch inside is read in place, not copied: what
// ReadSample returns may view these bytes, so they must outlive its use.
struct FetchedRange {
  uint32_t file = 0;
  uint64_t offset = 0;
  std::span<const uint8_t> bytes;
  // The part of `bytes` (file offsets) the caller has checked against the stored checksum that
  // PlanSample named for it (the manifest's region checksum of the whole record batch, or the
  // index's image hash itself); empty when none was. The index was checked whole at open and
  // the image's place in the batch is still checked, so those bytes are the image the index
  // names.
  uint64_t checked_offset = 0;
  uint64_t checked_length = 0;
};

class Dataset {
 public:
  // Reads and maps the files through `env` (null: EnvForPath(dir), docfeed/remote.h: the remote
  // Env for a URL, else Env::Default()), which must outlive the
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

  // The stored image bytes of sample `id` (ReadSample without labels, copied out). Errors name
  // the file and sample.
  Result<std::vector<uint8_t>> ReadImage(uint64_t id) const;
  // The non-image column values of sample `id`, in manifest column order.
  Result<std::vector<Value>> ReadLabels(uint64_t id) const;

  // The loader's read: the stored image bytes and (when `with_labels`) the labels of sample
  // `id`, reading and decoding the record batch at most once. Uncompressed bodies without labels:
  // one positioned read of the image's byte range. Otherwise the batch's whole message is read
  // (its range from the manifest) and parsed (compressed bodies: decompressed once; 1-row batches
  // for preprocessed datasets, so that is one sample); with an uncompressed body the row's image
  // must lie exactly at the index's byte range.
  // Errors, each naming the file and sample: Corruption for an index entry that disagrees with
  // the batch list or the row, or bytes that do not match their checksums; IOError for a read
  // that fails or comes up short (the file was truncated since Open). Thread-safe.
  // With a `scratch` (the caller thread's own), the bytes are read (and decompressed) into its
  // buffers, and `image` points there (`owned` stays empty): the result is valid until the next
  // ReadSample with the same scratch. Without one, `owned` holds the image.
  // With `fetched` (bytes of the sample's data file fetched ahead, see PlanSample), the reads
  // that lie inside it are copied from there; any other read goes to the file as usual.
  Result<SampleBytes> ReadSample(uint64_t id, bool with_labels, ReadScratch* scratch = nullptr,
                                 const FetchedRange* fetched = nullptr) const;

  // What ReadSample(id, with_labels) reads the bulk of the sample from, with its checksum: the
  // whole record batch (with labels, with a compressed body, or when the batch holds this one
  // row: preprocessed datasets) or else the image's byte range (the small reads of the batch's
  // metadata that check the image's location still go to the file). The record is checked
  // against the batch list first (Corruption naming the sample otherwise).
  Result<SamplePlan> PlanSample(uint64_t id, bool with_labels) const;
  // The whole record batch sample `id` lies in, with its region's checksum: every read of the
  // sample lies inside, so bytes checked against it leave nothing unchecked.
  Result<SamplePlan> PlanBatch(uint64_t id) const;
  // Data file `file` (REQUIRES: file < manifest().data_files.size()), for reading a planned
  // range; its path() names it in errors.
  const RandomAccessFile& data_file(uint32_t file) const { return *data_files_[file].file; }

  // Nothing is mapped, so reading a dataset larger than RAM keeps the resident set at the
  // callers' buffers (the page cache holds the file pages, outside the process).

 private:
  // A record batch of a data file, from the manifest's region list.
  struct BatchSpan {
    uint64_t offset = 0;  // of its message (the 0xFFFFFFFF marker)
    uint64_t length = 0;  // message and body
    uint64_t first_sample = 0;
    uint64_t num_rows = 0;
    uint64_t xxh3 = 0;  // the region's checksum: the message and body
  };
  struct DataFile {
    std::unique_ptr<RandomAccessFile> file;
    std::vector<uint8_t> schema_bytes;  // the schema message, which `reader` views
    std::vector<BatchSpan> batches;     // in file order
  };

  Dataset() = default;
  Status OpenDataFile(Env* env, const FileEntry& entry, uint64_t* next_sample);
  // The batch that record `r` of sample `id` names, once the record agrees with the batch list.
  Result<const BatchSpan*> CheckRecord(uint64_t id, const IndexRecord& r) const;
  // Reads the whole message of `batch` of data file `file_index` into scratch->bytes and parses
  // it into scratch->batch.
  Status ReadBatch(uint32_t file_index, const BatchSpan& batch, ReadScratch* scratch,
                   const FetchedRange* fetched) const;
  // A positioned read of data file `file_index`, from `fetched` when it covers the range.
  Status ReadAt(uint32_t file_index, uint64_t offset, std::span<uint8_t> out,
                const FetchedRange* fetched) const;
  // For an uncompressed body read without its batch: the Arrow row `r` names holds its image at
  // exactly the index's byte range (reads the batch's metadata and the row's two value offsets,
  // not the body). Corruption otherwise, naming the file and sample.
  // With `fetched` (reading ahead by ranges) the batch's offsets come from BatchImageOffsets.
  Status CheckImageLocation(uint64_t id, const IndexRecord& r, const BatchSpan& span,
                            ReadScratch* scratch, const FetchedRange* fetched) const;
  // The record batch's metadata, parsed (its image column must hold row r.row).
  Result<arrow::BatchLayout> ReadBatchLayout(uint64_t id, const IndexRecord& r,
                                             const BatchSpan& span, ReadScratch* scratch,
                                             const FetchedRange* fetched) const;
  // A record batch's image column: where its values lie and every row's value offsets, read
  // once per batch (its metadata and offsets buffer) and kept.
  struct ImageOffsets {
    uint64_t values_offset = 0;
    uint64_t values_length = 0;
    std::vector<int32_t> offsets;  // num_rows + 1
  };
  Result<std::shared_ptr<const ImageOffsets>> BatchImageOffsets(uint64_t id, const IndexRecord& r,
                                                                const BatchSpan& span,
                                                                ReadScratch* scratch,
                                                                const FetchedRange* fetched) const;
  Status SampleError(uint64_t id, const Status& cause) const;
  // Columns after the label columns (the `original` image column), which RowValues skips.
  size_t TrailingColumns() const { return manifest_.original_column.empty() ? 0 : 1; }

  std::string dir_;
  Manifest manifest_;
  arrow::Schema schema_;
  std::vector<uint8_t> index_bytes_;  // the whole docfeed.index, which index_ views
  IndexView index_;
  std::vector<DataFile> data_files_;
  std::vector<arrow::StreamReader> readers_;  // one per data file, over its schema_bytes
  mutable Mutex offsets_mu_;
  // (file, batch offset) -> its image offsets, for reads ahead by ranges (CheckImageLocation).
  mutable std::map<std::pair<uint32_t, uint64_t>, std::shared_ptr<const ImageOffsets>>
      offsets_cache_ DOCFEED_GUARDED_BY(offsets_mu_);
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
