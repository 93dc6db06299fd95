// Writes a docfeed dataset directory: Arrow IPC stream files in the layout
// `datasets.save_to_disk` produces (data-NNNNN-of-NNNNN.arrow, dataset_info.json, state.json),
// plus docfeed's sidecars (docfeed.index, docfeed.json). See docs/format.md.
//
// Usage: Create(), Add() every sample in id order, Finish(). The writer writes into the
// directory it is given (the packer hands it a temporary one and renames it into place only
// after `verify` passed). Not thread-safe: one producer.
#ifndef DOCFEED_FORMAT_SHARD_WRITER_H_
#define DOCFEED_FORMAT_SHARD_WRITER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/env.h"
#include "docfeed/status.h"
#include "format/index.h"
#include "format/manifest.h"
#include "format/value.h"

namespace docfeed::internal {

// Where a closed data file goes when it does not stay in the directory (`pack -o s3://` sends
// each one up while the next is written: pack/remote_output.h). The writer calls Take once per
// data file, in order, after closing and hashing it; from then on the file belongs to the sink,
// which may remove it (the writer checked it first, as VerifyDataset would: the dataset's own
// verify then takes the entries the sink was given; verify.h VerifyDatasetWithDataSent).
// Finish then only names the files (`entry.name` is the writer's temporary
// name; the final one is in the manifest) and writes the rest of the dataset as usual.
class DataFileSink {
 public:
  virtual ~DataFileSink() = default;
  virtual Status Take(const FileEntry& entry, const std::string& path) = 0;
  // Called by Finish after the last Take: returns once the sink is done with every file taken
  // (the directory may then move), with the first failure.
  virtual Status Flush() = 0;
};

struct ShardWriterOptions {
  std::string directory;            // must exist and be empty
  std::vector<ColumnSpec> columns;  // non-image columns
  std::string label_column;         // "" for none; must name one of `columns`
  // Adds the kOriginalColumn Image column after `columns` (SampleToWrite::original).
  bool keep_original = false;
  std::string compression = "none";  // Arrow IPC body compression: none | zstd | lz4_frame
  // A new data file starts once the current one holds this many bytes (datasets' default
  // max_shard_size is 500 MB).
  uint64_t max_file_bytes = 500'000'000;
  // A record batch is cut at this many rows or image bytes, whichever comes first. Binary
  // offsets are int32 in Arrow's `binary`, so a batch must stay below 2 GiB; small batches keep
  // random access cheap when bodies are compressed.
  uint32_t max_batch_rows = 64;
  uint64_t max_batch_bytes = 64ull << 20;
  // Files (relative to `directory`, e.g. "tokenizer/added_tokens.json") the caller writes
  // before Finish(); Finish() lists them in the manifest's other_files so verify checks them.
  std::vector<std::string> extra_files;
  // The manifest's chat_labels (Manifest::chat_labels): a JSON object text, or "".
  std::string chat_labels;
  // Every file is written and read back through this Env (Env::Default() when null).
  Env* env = nullptr;
  // When set, each data file is handed to it once closed, hashed and checked as VerifyDataset
  // would check it (verify.h VerifyDataFile; DataFileSink above); not owned.
  DataFileSink* sink = nullptr;
  // With a sink: the preprocessing the stored pages are checked against (the manifest's).
  PreprocessInfo preprocess;
};

struct SampleToWrite {
  std::span<const uint8_t> image;  // stored image bytes
  std::string path;                // the Image feature's `path` (source-relative file name)
  StoredCodec codec = StoredCodec::kJpeg;
  uint32_t width = 0;
  uint32_t height = 0;
  uint8_t channels = 0;
  uint8_t orientation = 1;
  std::vector<Value> values;          // one per ShardWriterOptions::columns
  std::span<const uint8_t> original;  // with keep_original: the untouched source file
};

class ShardWriter {
 public:
  static Result<std::unique_ptr<ShardWriter>> Create(ShardWriterOptions options);
  virtual ~ShardWriter() = default;

  // Appends the next sample (its id is the number of samples added before it).
  virtual Status Add(const SampleToWrite& sample) = 0;

  // Flushes the last batch, names the data files -of-N (renamed in the directory unless a sink
  // took them), writes the index, the Hugging Face
  // metadata files and the manifest (filled from `manifest` plus what was written).
  virtual Result<Manifest> Finish(Manifest manifest) = 0;
};

// The `state.json` that `datasets.save_to_disk` writes, for these data files (docs/format.md
// section 2); the fingerprint is docfeed's (the index checksum).
std::string DatasetStateJson(const std::vector<FileEntry>& files, uint64_t fingerprint);

}  // namespace docfeed::internal

#endif  // DOCFEED_FORMAT_SHARD_WRITER_H_
