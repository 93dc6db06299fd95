// docfeed pack: argument handling, progress bar and the closing summary.
#include <cstdio>
#include <string>

#include "args.h"
#include "commands.h"
#include "docfeed/pack.h"
#include "migrate_command.h"
#include "progress.h"

namespace docfeed::tools {
namespace {

constexpr char kPackHelp[] =
    "usage: docfeed pack SRC -o OUT [options]\n"
    "\n"
    "SRC is an image folder in the layout of Hugging Face datasets' imagefolder: images at any\n"
    "depth and an optional metadata.jsonl whose rows name an image by file_name and carry any\n"
    "other columns. Samples keep metadata.jsonl order (sorted paths without one).\n"
    "Only regular files inside SRC are read: FIFOs, devices, dangling symlinks, symlinks to\n"
    "directories and symlinks leading outside SRC are skipped and listed in the summary.\n"
    "One run writes OUT at a time (OUT.lock); what appears at OUT meanwhile is never replaced\n"
    "without --overwrite.\n"
    "SRC may also be a Hugging Face dataset on disk (save_to_disk output: a Dataset, or a\n"
    "DatasetDict packed split by split into OUT/<split>/) whose images are an Image column\n"
    "'image': one sample per row, every other column kept with its type and feature; with no\n"
    "'image' column but one List(Image) column, one sample per page with page and pages.\n"
    "SRC may be Parquet: a file, or a folder in the Hub's layouts (data/train-00000-of-00004\n"
    ".parquet; splits from the file names, packed into OUT/<split>/), rows as above.\n"
    "SRC may be WebDataset shards: a tar file (or tar.gz), or a directory of them, whose\n"
    "members are grouped into samples by key (0001.jpg + 0001.json + 0001.txt): the image,\n"
    "one column per other extension, __key__ and __url__.\n"
    "A save_to_disk directory with a float pixel_values column is migrated instead\n"
    "(docfeed pack SAVED_DATASET --help lists those options).\n"
    "PDF documents (files named *.pdf whose bytes are a PDF) become one sample per page,\n"
    "rendered by poppler exactly as `pdftoppm -r DPI` renders them and stored as PNG,\n"
    "with the int64 columns page (1-based) and pages (the page count), null for\n"
    "images. A metadata.jsonl row naming a PDF gives its columns to every page, or with an\n"
    "integer \"page\" names that page only. Encrypted or damaged PDFs are bad samples.\n"
    "A TIFF is an image by default (stored as it is; Pillow, datasets and the loader show its\n"
    "first page); with --pages all or 1 each *.tif/*.tiff file is a document like a PDF:\n"
    "a page of a multi-page TIFF is stored as a PNG of its pixels, a one-page TIFF as it is.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT       output directory (written atomically)\n"
    "  --codec C              keep (default: store the file's bytes), png, webp (lossless), jpeg\n"
    "  --validate V           how --codec keep checks the stored bytes: full decodes them as a\n"
    "                         trainer will (a JPEG entropy-decoded, a PNG inflated), refusing\n"
    "                         and warning exactly as that decode; structure checks only the\n"
    "                         container of a JPEG or PNG (PNG: chunk lengths, CRC-32s, chunk\n"
    "                         order; JPEG: marker segments, scan extents, EOI) without decoding\n"
    "                         pixels, so damage inside a JPEG scan or a PNG's deflate stream\n"
    "                         under a valid CRC is not seen; other formats: full. auto\n"
    "                         (default): structure for the images of a Hugging Face dataset\n"
    "                         (save_to_disk, the datasets cache, Parquet), full for files and\n"
    "                         with --strict\n"
    "  --quality Q            JPEG quality for --codec jpeg (1-100, default 90)\n"
    "  --threads N            encoding threads (default: all cores)\n"
    "  --skip-bad             write bad samples (unreadable images, bad metadata.jsonl rows)\n"
    "                         to OUT/rejects.jsonl instead of stopping\n"
    "  --strict               refuse what is otherwise tolerated and reported: an image that\n"
    "                         decodes only with warnings (a corrupt JPEG that libjpeg-turbo,\n"
    "                         and so Pillow, decodes anyway, e.g. a bad Huffman code) and,\n"
    "                         with --tokenizer, a target longer than --max-length\n"
    "  --overwrite            replace OUT if it is a docfeed dataset or an empty directory\n"
    "  --follow-symlinks      read through symlinks that lead outside SRC (by default such a\n"
    "                         link is skipped, and a metadata.jsonl row naming one is bad)\n"
    "  --compression C        Arrow IPC buffer compression: none (default), zstd, lz4_frame\n"
    "  --max-file-mb N        start a new data file after N MB (default 500)\n"
    "  --dpi N                render PDF pages at N dpi (1-2400, default 200)\n"
    "  --pages auto|all|1     which pages become samples: auto (default) every page of a\n"
    "                         PDF, a TIFF as one image; all: every page of a PDF and of a\n"
    "                         TIFF; 1: the first page of each (image folders only)\n"
    "  --part I/N             pack only part I (0..N-1) of N: the I-th of N contiguous slices\n"
    "                         of the samples (PDF/TIFF pages counted one by one), the same\n"
    "                         slice on any machine; `docfeed merge` joins the N parts into\n"
    "                         the dataset one pack writes. A rerun finding OUT already this\n"
    "                         part, verified, keeps it (also at an s3:// OUT, read back)\n"
    "\n"
    "Hugging Face datasets on disk:\n"
    "  --split NAME           pack only this split of a DatasetDict (default: every split)\n"
    "  --image-root DIR       read images whose cells hold only a path from DIR (confined to\n"
    "                         it; by default such a row is a bad sample)\n"
    "\n"
    "Pack-time preprocessing (docs/format.md, \"Preprocessed datasets\"):\n"
    "  --preprocess donut     store the Donut preset's deterministic stages (EXIF orientation,\n"
    "                         align, resize, thumbnail) as PGM/PPM, so loading only pads;\n"
    "                         default --compression lz4_frame, one sample per record batch\n"
    "  --size HxW             the DonutImageProcessor size, e.g. 1553x1200 (height x width)\n"
    "  --align-long-axis      the processor's do_align_long_axis\n" DOCFEED_GENERATION_HELP
    "  --keep-original        also store the source file in an Image column `original`\n"
    "  --preprocess nougat    store NougatImageProcessor's resized pages (crop_margin, align,\n"
    "                         resize, thumbnail; docs/nougat-preprocessing.md); --size HxW\n"
    "                         (default 896x672), --align-long-axis, --hf-version (pil only)\n"
    "  --preprocess idefics3  store Idefics3ImageProcessor's resized pages (the tile grid and\n"
    "                         the global image; docs/idefics3-preprocessing.md), with\n"
    "                         --longest-edge N (default 2048) --max-image-size N (default\n"
    "                         512, SmolDocling's) --no-image-splitting, --hf-version (pil only)\n"
    "  --preprocess qwen2-vl  (or qwen2.5-vl) store Qwen2VLImageProcessor's smart_resize'd\n"
    "                         pages (docs/qwen-vl-preprocessing.md), with --min-pixels N\n"
    "                         --max-pixels N --patch-size N --merge-size N (defaults: the\n"
    "                         checkpoints' 3136, 12845056, 14, 2) and --hf-version/--backend\n"
    "  --preprocess pix2struct store the pages Pix2StructImageProcessor starts from (decoded,\n"
    "                         EXIF-oriented, RGB as --hf-version converts them) at their own\n"
    "                         size, so loading skips the decode; any max_patches loads them\n"
    "                         (docs/pix2struct-preprocessing.md)\n"
    "  --stored-form page|patches  pix2struct only: page (default, as above) or patches: the\n"
    "                         processor's whole output, each page's real flattened_patches\n"
    "                         rows (no zero rows) as a float PFM (Pillow mode F), for\n"
    "                         --max-patches N (default 2048) --patch-size N|HxW (default 16);\n"
    "                         loading only copies them, and a loader must ask for the same\n"
    "                         max_patches, patch size and --hf-version\n"
    "\n"
    "Donut labels (the columns labels and target_sequence, and OUT/tokenizer/):\n"
    "  --tokenizer DIR        XLM-RoBERTa tokenizer folder: tokenizer.json (wins) or\n"
    "                         sentencepiece.bpe.model (src/labels/README.md)\n"
    "  --target-field F       column holding the JSON ground truth (default ground_truth)\n"
    "  --task-token T         start token of every target (default <s>)\n"
    "  --prompt-end-token T   mask labels up to this token (Donut's DocVQA recipe)\n"
    "  --recipe R             notebook (default) or donut: token order and categorical rule\n"
    "  --max-length N         truncate labels to N tokens and pad to N with -100 (default 512)\n"
    "  --no-pad-labels        store labels without padding to --max-length\n"
    "  (--strict              reject a target longer than --max-length instead of truncating)\n";

// "HxW" with both sides in 1..65535.
Status ParseSize(const std::string& text, PackPreprocess* p) {
  const size_t x = text.find('x');
  if (x == std::string::npos) return InvalidArgumentError("--size must be HxW, e.g. 1553x1200");
  DOCFEED_ASSIGN_OR_RETURN(p->height, ParseInt("--size height", text.substr(0, x), 1, 65535));
  DOCFEED_ASSIGN_OR_RETURN(p->width, ParseInt("--size width", text.substr(x + 1), 1, 65535));
  return Status::Ok();
}

bool HasIdefics3Flags(const ParsedArgs& parsed) {
  return parsed.options.count("--longest-edge") > 0 ||
         parsed.options.count("--max-image-size") > 0 || parsed.Has("--no-image-splitting");
}

// --preprocess idefics3: the processor's sizes under its names (the bounds of
// ValidateIdefics3Config and of `docfeed preprocess --preset idefics3`); the other presets' sizes
// are refused.
Status ParseIdefics3Sizes(const ParsedArgs& parsed, bool has_qwen_flags, PackPreprocess* p) {
  if (parsed.options.count("--size") > 0 || parsed.Has("--align-long-axis") || has_qwen_flags) {
    return InvalidArgumentError(
        "--size, --align-long-axis and the Qwen2-VL sizes are other presets', not idefics3's "
        "(it takes --longest-edge, --max-image-size and --no-image-splitting)");
  }
  DOCFEED_ASSIGN_OR_RETURN(
      p->longest_edge, ParseInt("--longest-edge", parsed.Get("--longest-edge", "2048"), 1, 8192));
  DOCFEED_ASSIGN_OR_RETURN(
      p->max_image_size,
      ParseInt("--max-image-size", parsed.Get("--max-image-size", "512"), 1, 8192));
  p->do_image_splitting = !parsed.Has("--no-image-splitting");
  return Status::Ok();
}

bool HasPix2StructFlags(const ParsedArgs& parsed) {
  return parsed.options.count("--stored-form") > 0 || parsed.options.count("--max-patches") > 0;
}

// --preprocess pix2struct: --stored-form page (the page at its own size; max_patches is the
// loader's) or patches, with --max-patches and --patch-size N|HxW (the bounds of
// ValidatePix2StructConfig and of `docfeed preprocess --preset pix2struct`).
Status ParsePix2StructForm(const ParsedArgs& parsed, PackPreprocess* p) {
  if (parsed.options.count("--size") > 0 || parsed.Has("--align-long-axis") ||
      parsed.options.count("--min-pixels") > 0 || parsed.options.count("--max-pixels") > 0 ||
      parsed.options.count("--merge-size") > 0) {
    return InvalidArgumentError(
        "--size, --align-long-axis and the Qwen2-VL sizes are other presets', not pix2struct's "
        "(it stores the decoded page at its own size, or with --stored-form patches its "
        "patches for --max-patches and --patch-size)");
  }
  p->stored_form = parsed.Get("--stored-form", "page");
  if (p->stored_form != "page" && p->stored_form != "patches") {
    return InvalidArgumentError("--stored-form must be page or patches, not " + p->stored_form);
  }
  const bool patches = p->stored_form == "patches";
  if (!patches &&
      (parsed.options.count("--max-patches") > 0 || parsed.options.count("--patch-size") > 0)) {
    return InvalidArgumentError(
        "--max-patches and --patch-size need --stored-form patches (the page form serves any "
        "max_patches: give it to the loader)");
  }
  if (!patches) return Status::Ok();
  DOCFEED_ASSIGN_OR_RETURN(
      p->max_patches, ParseInt("--max-patches", parsed.Get("--max-patches", "2048"), 1, 65536));
  const std::string patch = parsed.Get("--patch-size", "16");
  const size_t x = patch.find('x');
  DOCFEED_ASSIGN_OR_RETURN(p->patch_height,
                           ParseInt("--patch-size height", patch.substr(0, x), 1, 256));
  p->patch_width = p->patch_height;
  if (x != std::string::npos) {
    DOCFEED_ASSIGN_OR_RETURN(p->patch_width,
                             ParseInt("--patch-size width", patch.substr(x + 1), 1, 256));
  }
  return Status::Ok();
}

Status ParsePreprocess(const ParsedArgs& parsed, PackPreprocess* p) {
  const std::string preset = parsed.Get("--preprocess", "");
  const bool has_size = parsed.options.count("--size") > 0;
  const bool has_qwen_flags =
      parsed.options.count("--min-pixels") > 0 || parsed.options.count("--max-pixels") > 0 ||
      parsed.options.count("--patch-size") > 0 || parsed.options.count("--merge-size") > 0;
  const bool has_flags = has_size || has_qwen_flags || HasIdefics3Flags(parsed) ||
                         parsed.Has("--align-long-axis") || parsed.Has("--keep-original") ||
                         parsed.options.count("--hf-version") > 0 ||
                         parsed.options.count("--backend") > 0 || HasPix2StructFlags(parsed);
  if (preset.empty()) {
    if (has_flags) {
      return InvalidArgumentError(
          "--size, --align-long-axis, --hf-version, --backend, --keep-original, --stored-form and "
          "the Qwen2-VL, Idefics3 and Pix2Struct sizes need --preprocess");
    }
    return Status::Ok();
  }
  const bool qwen = preset == kPackPresetQwen2VL || preset == kPackPresetQwen25VL;
  const bool nougat = preset == kPackPresetNougat;
  const bool idefics3 = preset == kPackPresetIdefics3;
  const bool pix2struct = preset == kPackPresetPix2Struct;
  if (preset != kPackPresetDonut && !qwen && !nougat && !idefics3 && !pix2struct) {
    return InvalidArgumentError(
        "--preprocess must be donut, nougat, qwen2-vl, qwen2.5-vl, idefics3 or pix2struct, not " +
        preset);
  }
  if (parsed.options.count("--codec") > 0) {
    return InvalidArgumentError(
        "--codec does not apply with --preprocess (pages are stored as "
        "PGM/PPM)");
  }
  if (!pix2struct && HasPix2StructFlags(parsed)) {
    return InvalidArgumentError(
        "--stored-form and --max-patches are the pix2struct preset's, not " + preset + "'s");
  }
  if (!idefics3 && HasIdefics3Flags(parsed)) {
    return InvalidArgumentError(
        "--longest-edge, --max-image-size and --no-image-splitting are the idefics3 preset's, "
        "not " +
        preset + "'s");
  }
  p->preset = preset;
  if (idefics3) {
    DOCFEED_RETURN_IF_ERROR(ParseIdefics3Sizes(parsed, has_qwen_flags, p));
  } else if (pix2struct) {
    DOCFEED_RETURN_IF_ERROR(ParsePix2StructForm(parsed, p));
  } else if (qwen) {
    if (has_size || parsed.Has("--align-long-axis")) {
      return InvalidArgumentError("--size and --align-long-axis are Donut's, not " + preset +
                                  "'s (it takes --min-pixels and --max-pixels)");
    }
    constexpr int64_t kMaxArea = int64_t{1} << 40;
    DOCFEED_ASSIGN_OR_RETURN(
        p->min_pixels, ParseInt64("--min-pixels", parsed.Get("--min-pixels", "3136"), 1, kMaxArea));
    DOCFEED_ASSIGN_OR_RETURN(
        p->max_pixels,
        ParseInt64("--max-pixels", parsed.Get("--max-pixels", "12845056"), 1, kMaxArea));
    DOCFEED_ASSIGN_OR_RETURN(p->patch_size,
                             ParseInt("--patch-size", parsed.Get("--patch-size", "14"), 1, 1024));
    DOCFEED_ASSIGN_OR_RETURN(p->merge_size,
                             ParseInt("--merge-size", parsed.Get("--merge-size", "2"), 1, 1024));
  } else {
    if (has_qwen_flags) {
      return InvalidArgumentError(
          "--min-pixels, --max-pixels, --patch-size and --merge-size "
          "are the Qwen2-VL presets', not " +
          preset + "'s");
    }
    if (!has_size && !nougat) return InvalidArgumentError("--preprocess donut needs --size HxW");
    // Nougat's default is the processor's (and facebook/nougat-base's) 896x672.
    DOCFEED_RETURN_IF_ERROR(ParseSize(parsed.Get("--size", "896x672"), p));
    p->align_long_axis = parsed.Has("--align-long-axis");
  }
  DOCFEED_ASSIGN_OR_RETURN(const Generation generation, ParseGeneration(parsed));
  p->hf_version = generation.hf_version;
  p->backend = generation.backend;
  if ((nougat || idefics3 || pix2struct) && p->backend != "pil") {
    return InvalidArgumentError("--backend torchvision is not offered for " + preset +
                                " (the preset reproduces the PIL processors)");
  }
  p->keep_original = parsed.Has("--keep-original");
  return Status::Ok();
}

Result<PackOptions> ToOptions(const ParsedArgs& parsed) {
  PackOptions o;
  if (parsed.positional.size() != 1) {
    return InvalidArgumentError("pack takes exactly one source folder");
  }
  o.source = parsed.positional[0];
  o.output = parsed.Get("-o", parsed.Get("--output", ""));
  if (o.output.empty()) return InvalidArgumentError("pack needs -o OUT");
  DOCFEED_ASSIGN_OR_RETURN(o.codec, ParsePackCodec(parsed.Get("--codec", "keep")));
  Result<PackValidation> validate = ParsePackValidation(parsed.Get("--validate", "auto"));
  if (!validate.ok()) return validate.status().WithContext("--validate");
  o.validate = *validate;
  DOCFEED_ASSIGN_OR_RETURN(o.jpeg_quality,
                           ParseInt("--quality", parsed.Get("--quality", "90"), 1, 100));
  DOCFEED_ASSIGN_OR_RETURN(o.threads, ParseInt("--threads", parsed.Get("--threads", "0"), 0, 1024));
  DOCFEED_ASSIGN_OR_RETURN(
      int max_mb, ParseInt("--max-file-mb", parsed.Get("--max-file-mb", "500"), 1, 1 << 20));
  o.max_file_bytes = static_cast<uint64_t>(max_mb) * 1'000'000;
  DOCFEED_RETURN_IF_ERROR(ParsePreprocess(parsed, &o.preprocess));
  if (o.validate == PackValidation::kStructure &&
      (o.codec != PackCodec::kKeep || !o.preprocess.preset.empty())) {
    return InvalidArgumentError(
        "--validate structure applies to --codec keep only (re-encoding and --preprocess "
        "decode every image)");
  }
  o.compression = parsed.Get(
      "--compression", o.preprocess.preset.empty() ? "none" : kPreprocessedDefaultCompression);
  if (o.compression != "none" && o.compression != "zstd" && o.compression != "lz4_frame") {
    return InvalidArgumentError("--compression must be none, zstd or lz4_frame");
  }
  o.labels.tokenizer_dir = parsed.Get("--tokenizer", "");
  o.labels.target_field = parsed.Get("--target-field", "ground_truth");
  o.labels.task_token = parsed.Get("--task-token", "<s>");
  o.labels.prompt_end_token = parsed.Get("--prompt-end-token", "");
  DOCFEED_ASSIGN_OR_RETURN(o.labels.recipe, ParseLabelRecipe(parsed.Get("--recipe", "notebook")));
  DOCFEED_ASSIGN_OR_RETURN(o.labels.max_length,
                           ParseInt("--max-length", parsed.Get("--max-length", "512"), 1, 1 << 20));
  o.labels.pad_to_max_length = !parsed.Has("--no-pad-labels");
  o.labels.strict = parsed.Has("--strict");
  o.strict = parsed.Has("--strict");
  o.skip_bad = parsed.Has("--skip-bad");
  o.overwrite = parsed.Has("--overwrite");
  o.follow_symlinks = parsed.Has("--follow-symlinks");
  DOCFEED_ASSIGN_OR_RETURN(o.pdf_dpi, ParseInt("--dpi", parsed.Get("--dpi", "200"), 1, 2400));
  Result<PackPages> pages = ParsePackPages(parsed.Get("--pages", "auto"));
  if (!pages.ok()) return pages.status().WithContext("--pages");
  o.pages = *pages;
  o.split = parsed.Get("--split", "");
  o.image_root = parsed.Get("--image-root", "");
  if (parsed.options.count("--part") > 0) {
    DOCFEED_RETURN_IF_ERROR(ParsePackPart(parsed.Get("--part", ""), &o.part_index, &o.part_count));
  }
  return o;
}

void PrintSummary(const PackOptions& o, const PackSummary& s) {
  double ratio = s.output_bytes > 0
                     ? static_cast<double>(s.source_bytes) / static_cast<double>(s.output_bytes)
                     : 0;
  std::printf("packed %llu samples from %s into %s in %s\n",
              static_cast<unsigned long long>(s.samples), o.source.c_str(), o.output.c_str(),
              FormatSeconds(s.seconds).c_str());
  std::printf("  bytes in   %s (source images)\n", FormatBytes(s.source_bytes).c_str());
  std::printf("  bytes out  %s (every file of the dataset; images %s)\n",
              FormatBytes(s.output_bytes).c_str(), FormatBytes(s.stored_image_bytes).c_str());
  std::printf("  ratio      %.2fx (in / out)\n", ratio);
  std::printf("  codecs    ");
  for (const auto& [codec, n] : s.stored_codecs) {
    std::printf(" %s=%llu", codec.c_str(), static_cast<unsigned long long>(n));
  }
  std::printf("\n  files      %zu data file(s)\n", s.data_files.size());
  if (s.pdf_documents > 0) {
    std::printf("  pdf        %llu document(s), %llu page(s) rendered at %d dpi\n",
                static_cast<unsigned long long>(s.pdf_documents),
                static_cast<unsigned long long>(s.pdf_pages), s.pdf_dpi);
  }
  if (s.tiff_documents > 0) {
    std::printf("  tiff       %llu file(s) split into %llu page(s)\n",
                static_cast<unsigned long long>(s.tiff_documents),
                static_cast<unsigned long long>(s.tiff_pages));
  }
  if (!s.splits.empty()) {
    std::string names;
    for (const std::string& split : s.splits) names += (names.empty() ? "" : ", ") + split;
    std::printf("  splits     %s (a DatasetDict: OUT/<split>/ each)\n", names.c_str());
  }
  if (s.uploaded_objects > 0) {
    PrintUpload(s.uploaded_objects, s.uploaded_bytes, s.upload_requests, s.upload_retries,
                s.upload_seconds);
    std::printf(
        "  streamed   %llu data file(s) sent while packing; staging held at most %s "
        "(%llu bytes) of them\n",
        static_cast<unsigned long long>(s.streamed_files), FormatBytes(s.staged_peak_bytes).c_str(),
        static_cast<unsigned long long>(s.staged_peak_bytes));
  }
  if (!o.labels.tokenizer_dir.empty()) {
    std::printf("  labels     %llu new token(s), tokenizer size %llu (saved in %s/tokenizer)\n",
                static_cast<unsigned long long>(s.new_tokens),
                static_cast<unsigned long long>(s.tokenizer_size), o.output.c_str());
    if (s.labels_truncated > 0) {
      std::printf("  truncated  %llu target(s) longer than --max-length %d\n",
                  static_cast<unsigned long long>(s.labels_truncated), o.labels.max_length);
    }
    if (!s.tokenizer_warning.empty()) {
      std::fprintf(stderr, "warning: %s\n", s.tokenizer_warning.c_str());
    }
  }
  if (s.rejected > 0) {
    std::printf("  rejected   %llu sample(s), listed with reasons in %s/%srejects.jsonl\n",
                static_cast<unsigned long long>(s.rejected), o.output.c_str(),
                s.splits.empty() ? "" : "<split>/");
  }
  if (!s.unlisted_images.empty()) {
    std::printf(
        "  note       %zu image file(s) not named in metadata.jsonl were not packed, e.g. %s\n",
        s.unlisted_images.size(), s.unlisted_images[0].c_str());
  }
  if (s.other_files > 0) {
    std::printf("  note       %llu non-image file(s) in the source were ignored\n",
                static_cast<unsigned long long>(s.other_files));
  }
  for (const SkippedEntry& e : s.skipped) {
    std::printf("  skipped    %s: %s\n", e.path.c_str(), e.reason.c_str());
  }
  if (!s.decode_warnings.empty()) {
    std::printf(
        "  warnings   %zu image(s) decoded only with warnings (packed, as Pillow decodes "
        "them; --strict refuses them)\n",
        s.decode_warnings.size());
  }
  for (const DecodeWarning& w : s.decode_warnings) {
    std::printf("  warned     %s: %d warning(s), first: %s\n", w.file_name.c_str(), w.warnings,
                w.first.c_str());
  }
}

}  // namespace

int RunPack(const Args& args) {
  // A save_to_disk directory of float pixel_values tensors: the migration (src/migrate/).
  if (IsSavedDatasetSource(args) && !IsSavedImageDatasetSource(args)) {
    return RunPackSavedDataset(args);
  }
  auto start =
      StartCommand("pack", args,
                   {"--skip-bad", "--overwrite", "--follow-symlinks", "--strict", "--no-pad-labels",
                    "--align-long-axis", "--keep-original", "--no-image-splitting"},
                   {"-o",
                    "--output",
                    "--codec",
                    "--validate",
                    "--quality",
                    "--threads",
                    "--compression",
                    "--max-file-mb",
                    "--tokenizer",
                    "--target-field",
                    "--task-token",
                    "--prompt-end-token",
                    "--recipe",
                    "--max-length",
                    "--preprocess",
                    "--min-pixels",
                    "--max-pixels",
                    "--patch-size",
                    "--merge-size",
                    "--size",
                    "--hf-version",
                    "--backend",
                    "--split",
                    "--image-root",
                    "--dpi",
                    "--pages",
                    "--part",
                    "--longest-edge",
                    "--max-image-size",
                    "--stored-form",
                    "--max-patches"},
                   kPackHelp, &ToOptions);
  if (const int* exit_code = std::get_if<int>(&start)) return *exit_code;
  PackOptions* options = &std::get<PackOptions>(start);
  ProgressBar bar("packing");
  options->on_progress = [&bar](const PackProgress& p) {
    bar.Update(p.done, p.total, p.source_bytes, p.elapsed_seconds);
  };
  Result<PackSummary> summary = Pack(*options);
  bar.Finish();
  if (!summary.ok()) {
    std::fprintf(stderr, "docfeed pack: %s\n", summary.status().ToString().c_str());
    return 1;
  }
  if (summary->already_complete) {
    std::printf("%s already holds part %u/%u of %s (verified; kept)\n", options->output.c_str(),
                options->part_index, options->part_count, options->source.c_str());
    return 0;
  }
  PrintSummary(*options, *summary);
  return 0;
}

}  // namespace docfeed::tools
