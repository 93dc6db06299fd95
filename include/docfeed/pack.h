// Packing samples into a docfeed dataset (docs/format.md), as `docfeed pack` does: from an image
// folder in the layout of Hugging Face datasets' `imagefolder` (Pack), or from any caller-supplied
// source of encoded images with a JSON-lines listing of their columns (PackFrom; the Python
// binding's docfeed.pack streams a dataset's rows this way).
//
// Samples are read and encoded on worker threads and written in id order. The output appears
// atomically: everything is written to a temporary sibling directory, verified, then renamed to
// the output path, so an interrupted or failed pack leaves nothing that looks like a finished
// dataset.
//
// Errors: InvalidArgument for bad options or a bad sample (named by its file and metadata.jsonl
// line, or by SampleSource::Where), NotFound for a missing source or tokenizer, AlreadyExists if
// the output exists and !overwrite, IoError from the file system. With skip_bad, bad samples are
// listed in OUT/rejects.jsonl instead.
//
// Thread safety: Pack and PackFrom are reentrant for distinct outputs.
#ifndef DOCFEED_PACK_H_
#define DOCFEED_PACK_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "docfeed/env.h"
#include "docfeed/status.h"

namespace docfeed {

// How the stored images are encoded: the source file's own bytes, or a re-encode (PNG, lossless
// WebP, JPEG at PackOptions::jpeg_quality). Every image is validated at pack time either way: as
// a full decode would, or for kKeep with PackValidation::kStructure by its JPEG or PNG container
// structure and checksums (below; the default for images already in a Hugging Face dataset).
enum class PackCodec { kKeep, kPng, kWebp, kJpeg };

// Parses "keep", "png", "webp", "jpeg"; InvalidArgument naming the accepted values otherwise.
Result<PackCodec> ParsePackCodec(std::string_view name);

// How PackCodec::kKeep validates the stored source bytes (`pack --validate`; src/pack/README.md):
// kAuto (the default) is kStructure for images already in a Hugging Face dataset (save_to_disk,
// the datasets cache, Parquet; `datasets`' own copy of them checks nothing) and kFull for files
// (image folders, tars, documents) and with `strict`; PackFrom takes it as kFull.
// kFull decodes them as a trainer would (a JPEG entropy-decoded, a PNG inflated and unfiltered),
// refusing and warning exactly as the full decode; kStructure checks only the container
// structure and checksums of JPEG and PNG files (PNG: every chunk's length and CRC-32, the
// chunk order; JPEG: every marker segment, each scan's extent, EOI) without decoding pixels,
// so damage inside a JPEG scan or a PNG's deflate stream under a valid CRC goes unseen. Other
// formats are fully validated either way; re-encoding and preprocessing always decode fully.
enum class PackValidation { kFull, kStructure, kAuto };

// Parses "auto", "full" or "structure"; InvalidArgument naming the accepted values otherwise.
Result<PackValidation> ParsePackValidation(std::string_view name);

// Token order and categorical rule of the Donut target strings: the fine-tuning notebook's or
// the Donut repository's (src/labels/README.md).
enum class LabelRecipe { kNotebook, kDonut };

// Parses "notebook" or "donut".
Result<LabelRecipe> ParseLabelRecipe(std::string_view name);

// Which pages of the multi-page documents in an image folder become samples (`pack --pages`;
// docs/format.md section 13). A PDF is always split into pages (an image reader cannot show
// it); a TIFF is an image to `datasets`, which shows its first page, so it is split only when
// asked for.
enum class PackPages {
  kAuto,   // every page of a PDF; a TIFF stays one sample, stored as it is, loaded as page 1
  kAll,    // every page of a PDF and of a TIFF
  kFirst,  // the first page of a PDF and of a TIFF
};

// Parses "auto", "all" or "1"; InvalidArgument naming the accepted values otherwise.
Result<PackPages> ParsePackPages(std::string_view name);

// Parses `pack --part` "I/N" (0 <= I < N <= 1,000,000) into *index and *count; InvalidArgument
// naming the text otherwise.
Status ParsePackPart(std::string_view text, uint32_t* index, uint32_t* count);

// The preset names PackPreprocess::preset accepts.
inline constexpr char kPackPresetDonut[] = "donut";
inline constexpr char kPackPresetQwen2VL[] = "qwen2-vl";
inline constexpr char kPackPresetQwen25VL[] = "qwen2.5-vl";
inline constexpr char kPackPresetNougat[] = "nougat";
inline constexpr char kPackPresetIdefics3[] = "idefics3";
inline constexpr char kPackPresetPix2Struct[] = "pix2struct";

// The Arrow body compression a preprocessed pack uses unless told otherwise: LZ4_FRAME
// decompresses a 1553x1200 page ~2.4x faster than zstd for ~27% more bytes (docs/benchmarks.md,
// "Preprocessed storage").
inline constexpr char kPreprocessedDefaultCompression[] = "lz4_frame";

// Pack-time preprocessing (docs/format.md, "Preprocessed datasets"): store the preset's
// deterministic stages (EXIF orientation, align, resize, thumbnail) as PGM/PPM, so that loading
// only pads. PackOptions::codec must then stay kKeep (it does not apply).
struct PackPreprocess {
  // "" (original images), kPackPresetDonut, kPackPresetNougat, a Qwen2-VL name,
  // kPackPresetIdefics3 or kPackPresetPix2Struct (the decoded RGB page at its own size: every
  // later Pix2Struct step depends on the whole page's float statistics; hf_version as below,
  // backend "pil" only)
  std::string preset;
  // Donut and Nougat: the processor's size, in pixels (1..65535 each); Nougat's steps are the
  // processor's defaults (crop_margin, resize, thumbnail), its backend "pil" only.
  int32_t height = 0;
  int32_t width = 0;
  bool align_long_axis = false;  // the processor's do_align_long_axis
  // The processor generation (4 or 5) and backend ("pil", or "torchvision" with 5) to reproduce
  // (docfeed/preprocess.h DonutBackend); recorded in the manifest's preprocess record.
  int32_t hf_version = 4;
  std::string backend = "pil";
  bool keep_original = false;  // also store the source file in an Image column `original`
  // Qwen2-VL: smart_resize's settings (docfeed/preprocess.h QwenVLConfig; hf_version and backend
  // as above); the stored pages are the BICUBIC-resized pages.
  int64_t min_pixels = 56 * 56;
  int64_t max_pixels = 28 * 28 * 16384;
  int32_t patch_size = 14;
  int32_t merge_size = 2;
  // Idefics3: the settings its prepared pages depend on (docfeed/preprocess.h Idefics3Config;
  // defaults: SmolDocling-256M-preview's); hf_version as above, backend "pil" only.
  int32_t longest_edge = 2048;
  int32_t max_image_size = 512;
  bool do_image_splitting = true;
  // Pix2Struct: "page" (the prepared page, which any max_patches loads) or "patches" (the final
  // flattened_patches rows for these max_patches and patch sides, stored as grayscale float PFM;
  // the loader then only copies them and must ask for the same settings). docs/format.md
  // section 10.
  std::string stored_form = "page";
  int32_t max_patches = 2048;  // 1..65536
  int32_t patch_height = 16;   // 1..256
  int32_t patch_width = 16;
};

// Donut labels: the columns `labels` (list<int64>) and `target_sequence` (string), and the
// extended tokenizer saved in OUT/tokenizer/.
struct PackLabels {
  std::string tokenizer_dir;  // XLM-R folder: tokenizer.json or sentencepiece.bpe.model; "": none
  std::string target_field = "ground_truth";  // the column holding the JSON ground truth
  std::string task_token = "<s>";             // start token of every target
  std::string prompt_end_token;               // mask labels up to this token; "" for none
  LabelRecipe recipe = LabelRecipe::kNotebook;
  int max_length = 512;           // labels are truncated to this many tokens
  bool pad_to_max_length = true;  // and padded to it with -100
  bool strict = false;            // reject a longer target instead of truncating it
};

struct PackProgress {
  uint64_t done = 0;  // samples processed (packed or rejected)
  uint64_t total = 0;
  uint64_t source_bytes = 0;
  double elapsed_seconds = 0;
};

struct PackOptions {
  std::string source;  // Pack: the image folder; PackFrom: unused
  std::string output;  // the dataset directory to create
  PackCodec codec = PackCodec::kKeep;
  PackValidation validate = PackValidation::kAuto;  // for kKeep (ignored otherwise)
  int jpeg_quality = 90;                            // 1..100, for kJpeg
  PackPreprocess preprocess;
  int threads = 0;        // encoding threads; 0: one per hardware thread
  bool skip_bad = false;  // reject bad samples into OUT/rejects.jsonl instead of stopping
  // Refuse an image that decodes only with warnings (a corrupt JPEG that libjpeg-turbo, and so
  // Pillow, decodes anyway, e.g. "Corrupt JPEG data: bad Huffman code"): a bad sample (stops the
  // pack, or a reject with skip_bad). Otherwise it is packed and listed in
  // PackSummary::decode_warnings. Data that ends early is always refused, as in Pillow.
  bool strict = false;
  bool overwrite = false;  // replace an existing docfeed dataset (or empty directory) at output
  // Pack: read images through symlinks that lead outside `source` (by default such a link is
  // skipped, and a metadata.jsonl row naming one is a bad sample).
  bool follow_symlinks = false;
  // A Hugging Face dataset on disk (`save_to_disk`, with an Image column `image`): pack only
  // this split of a DatasetDict ("" packs every split); the output keeps the split layout.
  std::string split;
  // ... and read the images of cells that hold only a `path` from this directory (confined to
  // it like an image folder's files); "" refuses such rows.
  std::string image_root;
  std::string compression = "none";       // Arrow IPC body compression: none, zstd, lz4_frame
  uint64_t max_file_bytes = 500'000'000;  // start a new data file after this many bytes
  PackLabels labels;
  // Pack of an image folder: each *.pdf document whose bytes are a PDF becomes one sample per
  // page, rendered at pdf_dpi (1..2400) as pdftoppm renders it and stored as PNG, with the int64
  // columns `page` and `pages`; with kAll or kFirst so does each *.tif/*.tiff file whose bytes
  // are a TIFF (a page of a multi-page TIFF is stored as a PNG of Pillow's pixels of that page).
  // kFirst keeps only a document's first page. Other sources ignore both.
  int32_t pdf_dpi = 200;
  PackPages pages = PackPages::kAuto;
  // Pack only part `part_index` of `part_count` (`pack --part I/N`; part_count 0: the whole
  // source): the contiguous slice [floor(I * L / N), floor((I + 1) * L / N)) of the L samples the
  // source lists (packed or rejected, in the order a whole pack takes them), as a complete,
  // verified dataset whose manifest records the part, for docfeed/merge.h's Merge. The slice
  // depends only on the source and N. Requires 1 <= N <= L and I < N; a DatasetDict is refused.
  // When the output already is this part (same source, settings, I and N) and verifies, nothing
  // is written and PackSummary::already_complete is set.
  uint32_t part_index = 0;
  uint32_t part_count = 0;
  // The manifest's chat_labels record (docs/format.md section 9), a JSON object text: set by
  // docfeed.pack(processor=...), which computes the input_ids / attention_mask / labels columns
  // of the rows it lists; "" for none. Must be a JSON object.
  std::string chat_labels;
  // Every file the pack reads or writes goes through this Env (Env::Default() when null); not
  // owned, must outlive the call.
  Env* env = nullptr;
  // Called from the writing thread after each sample; may be empty.
  std::function<void(const PackProgress&)> on_progress;
};

// A packed sample whose image decoded only with warnings (PackOptions::strict).
struct DecodeWarning {
  std::string file_name;  // the sample's stored name (relative path in the source folder), or
                          // for a dataset's row where it is ("FILE row N", "SHARD: sample KEY")
  int32_t warnings = 0;   // how many the decode emitted
  std::string first;      // libjpeg's text of the first, e.g. "Corrupt JPEG data: bad Huffman code"
};

// A source entry that was not packed, and why (a FIFO, a dangling symlink, a link outside the
// source...).
struct SkippedEntry {
  std::string path;  // relative to the source folder
  std::string reason;
};

struct PackSummary {
  uint64_t samples = 0;
  uint64_t rejected = 0;
  uint64_t source_bytes = 0;        // image files read
  uint64_t stored_image_bytes = 0;  // image bytes stored
  uint64_t output_bytes = 0;        // every file of the output directory
  std::map<std::string, uint64_t> stored_codecs;
  std::vector<std::string> unlisted_images;    // images metadata.jsonl does not name
  uint64_t other_files = 0;                    // non-image files of the source (ignored)
  std::vector<SkippedEntry> skipped;           // entries of the source listing not read
  std::vector<DecodeWarning> decode_warnings;  // packed samples that decoded with warnings
  std::vector<std::string> data_files;  // relative to the output (SPLIT/... for a DatasetDict)
  std::vector<std::string> splits;      // the packed splits of a DatasetDict; empty otherwise
  uint64_t pdf_documents = 0;           // PDF documents opened while listing
  uint64_t pdf_pages = 0;               // page samples listed from them (packed or rejected)
  int32_t pdf_dpi = 0;                  // what they were rendered at; 0 without PDFs
  uint64_t tiff_documents = 0;          // TIFF files split into pages (PackPages kAll, kFirst)
  uint64_t tiff_pages = 0;              // page samples listed from them (packed or rejected)
  double seconds = 0;                   // the whole run, the upload included
  // With an s3:// output (each data file sent up as soon as it is written, the rest staged
  // locally and sent last): the objects written, the request bodies sent (retries included),
  // the HTTP requests of the upload and their retries, the seconds after the pack (the staged
  // dataset's verify, the copies into place, the index and manifests), the data files sent while
  // packing, and the most of their bytes held in the staging directory at once.
  uint64_t uploaded_objects = 0;
  uint64_t uploaded_bytes = 0;
  uint64_t upload_requests = 0;
  uint64_t upload_retries = 0;
  double upload_seconds = 0;
  uint64_t streamed_files = 0;
  uint64_t staged_peak_bytes = 0;
  // With PackOptions::part_count: the output already held this part, verified; it was kept and
  // the counts above are its manifest's (the listing fields and warnings are not filled).
  bool already_complete = false;
  // With PackLabels::tokenizer_dir:
  uint64_t labels_truncated = 0;  // targets cut at max_length
  uint64_t new_tokens = 0;        // tokens added to the tokenizer
  uint64_t tokenizer_size = 0;    // len(tokenizer) after adding them
  // Non-empty when the folder's ids are those of one transformers generation only (a BPE
  // sentencepiece.bpe.model, which transformers 5 converts to Unigram): what to do instead.
  std::string tokenizer_warning;
};

// True when `path` is a Hugging Face `save_to_disk` directory (docfeed::IsSavedDataset) whose
// features (those of its first split's dataset_info.json) hold an Image feature (Pack takes one
// Image column named "image" and says what to do with others) and no `pixel_values` column (a
// dataset of processor tensors is Migrate's input, docfeed/migrate.h). Pack reads such a directory.
bool IsSavedImageDataset(const std::string& path, Env* env = nullptr);

// Packs options.source: an image folder, or a Hugging Face dataset on disk (`save_to_disk`
// output, Dataset or DatasetDict) whose images are an Image column named `image`, detected from
// its files. A DatasetDict gives OUT/<split>/ per split plus OUT/dataset_dict.json, placed as
// one directory.
Result<PackSummary> Pack(const PackOptions& options);

// Where PackFrom's images come from; the listing of the samples is passed to PackFrom.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  // The encoded image file of sample `i` (< the number of listed rows). Called once per sample
  // from the encode workers: concurrently for different samples, in increasing order of first
  // call within a window of a few samples per thread. Errors need not name the sample.
  virtual Result<std::vector<uint8_t>> ReadImage(size_t i) = 0;
  // How errors name sample `i`, e.g. "row 3"; PackFrom appends the row's file_name, giving
  // "row 3 (a.png)".
  virtual std::string Where(size_t i) const = 0;
  // How errors name the whole source, e.g. "the dataset's rows".
  virtual std::string Name() const = 0;
};

// Packs the samples listed in `rows`: one JSON object per line, each with a string "file_name"
// (the name stored with the image) and the other columns, typed exactly as metadata.jsonl rows
// are (errors name "row N", 0-based). The images come from `source`, which must outlive the
// call. options.source is ignored; otherwise as Pack.
Result<PackSummary> PackFrom(std::string_view rows, SampleSource& source,
                             const PackOptions& options);

}  // namespace docfeed

#endif  // DOCFEED_PACK_H_
