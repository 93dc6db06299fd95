// `docfeed pack`: turns samples into a docfeed dataset. The samples come from a SampleSource:
// an image folder (Hugging Face `imagefolder` layout; Pack) or any caller-supplied source
// (PackFrom; the Python binding feeds the rows of an in-memory dataset this way). Both share
// the rest: samples are read and encoded on worker threads, written in id order, and the output
// appears atomically: everything goes to a temporary sibling directory that is verified and then
// renamed to the output path, so an interrupted pack leaves nothing that looks like a finished
// dataset.
#ifndef DOCFEED_PACK_PACKER_H_
#define DOCFEED_PACK_PACKER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/env.h"
#include "docfeed/pack.h"
#include "docfeed/status.h"
#include "format/shard_writer.h"
#include "pack/document_pages.h"
#include "pack/image_folder.h"
#include "pack/labeler.h"
#include "pack/part.h"
#include "pack/sample_encoder.h"

namespace docfeed::internal {

// The progress, summary and default compression are public (docfeed/pack.h).
using docfeed::kPreprocessedDefaultCompression;
using docfeed::PackProgress;
using docfeed::PackSummary;

struct PackOptions {
  std::string source;  // Pack: the image folder; PackFrom: unused
  std::string output;
  EncodeOptions encode;   // encode.preprocess / encode.keep_original: pack --preprocess
  int threads = 0;        // 0: one per hardware thread
  bool skip_bad = false;  // reject bad samples into rejects.jsonl instead of stopping
  // Treat an image that decodes only with warnings (EncodedImage::decode_report) as a bad
  // sample; otherwise it is packed and listed in PackSummary::decode_warnings.
  bool strict = false;
  bool overwrite = false;        // replace an existing docfeed dataset (or empty directory)
  bool follow_symlinks = false;  // Pack: read through symlinks leading outside options.source
  std::string split;             // Pack of a saved DatasetDict: only this split ("" every split)
  std::string image_root;        // Pack of a saved dataset: where path-only image cells are read
  std::string compression = "none";
  uint64_t max_file_bytes = 500'000'000;
  LabelOptions labels;  // with a tokenizer_dir: `labels` and `target_sequence` columns
  // The manifest's chat_labels record (JSON object text, "" for none): docfeed/pack.h.
  std::string chat_labels;
  // Pack of an image folder: how its documents (PDF; TIFF with --pages all or 1) become page
  // samples.
  DocumentOptions documents;
  // Write only part `part.index` of `part.count` (pack/part.h): the samples of that slice of the
  // listing, with the part record in the manifest. An output that already holds this very part,
  // verified, is kept (PackSummary::already_complete) instead of refused.
  PackPart part;
  // Set by a part's `-o s3://` run (PackToRemote) when that URL already holds a manifest: the run
  // only checks the part there (KeepCompletePart through the RemoteEnv, once the source is
  // listed) and writes nothing.
  std::string check_part_at;
  // Set by an s3:// output (PackToRemote): each data file goes to it once written and checked
  // (format/shard_writer.h DataFileSink); the rest of the verify is left to StreamToRemote (the
  // data files are no longer here: VerifyDatasetWithDataSent, before any manifest goes up).
  DataFileSink* data_sink = nullptr;
  std::function<void(const PackProgress&)> on_progress;  // called from the writing thread
  // Every file the pack reads or writes goes through this Env (Env::Default() when null); it
  // must outlive the call.
  Env* env = nullptr;
};

// Where PackFrom's samples come from. The listing (columns with their types, and every sample's
// stored name and column values) is known before any image is read, because the shard schema
// is written first; the images are then asked for by sample id.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  // Columns and samples (SourceSample::relative_path is the name stored with the image; line > 0
  // adds metadata_line to rejects.jsonl), and for the summary the unlisted images and other
  // files. Must hold at least one sample; stays valid and unchanged during PackFrom.
  virtual const ImageFolder& listing() const = 0;
  // The encoded image file of sample `i` (< listing().samples.size()). Called once per sample
  // from the encode workers: concurrently for different samples, in increasing order of first
  // call within a window of a few samples per thread. Errors need not name the sample.
  virtual Result<std::vector<uint8_t>> ReadImage(size_t i) = 0;
  // How errors name sample `i`, e.g. "SRC/a.png (metadata.jsonl line 3)" or "row 3".
  virtual std::string Where(size_t i) const = 0;
  // How errors name the whole source, e.g. "source folder SRC".
  virtual std::string Name() const = 0;
};

// The image folder at `root` as a SampleSource (ScanImageFolder and ExpandDocumentPages, then
// ReadFile per sample, of at most the decoders' byte limit, or ReadDocumentPage per page of a
// document).
Result<std::unique_ptr<SampleSource>> OpenImageFolderSource(const std::string& root,
                                                            Env* env = nullptr,
                                                            bool follow_symlinks = false,
                                                            const DocumentOptions& documents = {});

// Packs options.source: an image folder, or a save_to_disk Dataset / DatasetDict with an Image
// column `image` (pack/saved_dataset_source.h; a DatasetDict gives OUT/<split>/ per split and
// OUT/dataset_dict.json, placed as one directory). Errors name the file (and metadata.jsonl line)
// of the first bad sample unless skip_bad. AlreadyExists if the output exists and !overwrite (also
// when it appears during the run: nothing there is touched); FailedPrecondition when another
// run holds OUT.lock or when overwrite would replace something that is not a docfeed dataset
// or an empty directory.
Result<PackSummary> Pack(const PackOptions& options);

// Packs `source` (options.source is ignored); the same encoder, writer, verification and
// atomic placement as Pack. Errors name the sample by source.Where(i) unless skip_bad.
// ValidationMode::kAuto is kFull here (the caller knows where the images come from: the Python
// binding passes kStructure for the images of an in-memory `datasets` dataset).
Result<PackSummary> PackFrom(SampleSource& source, const PackOptions& options);

// What `--validate auto` (the default) means for kept images: kStructure for images that already
// sit in a Hugging Face dataset (save_to_disk, the datasets cache, Parquet), which `datasets`
// wrote and reads back without decoding and whose own copy checks nothing; kFull for files
// (image folders, tars, documents) and whenever `strict` (only a decode sees the warnings
// --strict refuses). An explicit kFull or kStructure is kept.
ValidationMode ResolveValidation(ValidationMode mode, bool dataset_images, bool strict);

}  // namespace docfeed::internal

#endif  // DOCFEED_PACK_PACKER_H_
