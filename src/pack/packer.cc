#include "pack/packer.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>
#include <thread>

#include "base/file.h"
#include "base/json.h"
#include "base/ordered_parallel.h"
#include "base/output_dir.h"
#include "codec/codec.h"
#include "format/dataset.h"
#include "format/shard_writer.h"
#include "format/verify.h"
#include "migrate/source.h"
#include "pack/image_folder.h"
#include "pack/parquet_source.h"
#include "pack/remote_output.h"
#include "pack/saved_dataset_source.h"
#include "pack/tar_source.h"
#include "pdf/pdf_document.h"
#include "remote/url.h"

namespace docfeed::internal {
namespace {

using Clock = std::chrono::steady_clock;

// Encoded samples allowed in flight per thread: bounds memory, absorbs uneven page sizes.
constexpr size_t kWindowPerThread = 4;

struct Slot {
  uint64_t source_bytes = 0;
  Result<EncodedImage> encoded = InternalError("not processed");
  std::vector<Value> label_values;  // `labels`, `target_sequence` with a Labeler
};

// The image folder: its listing, and each sample's file read from the folder (a page of a
// document read from its document; the pages of a PDF rendered from one open document).
class ImageFolderSource final : public SampleSource {
 public:
  ImageFolderSource(ImageFolder folder, Env* env, DocumentOptions documents)
      : folder_(std::move(folder)), env_(env), documents_(std::move(documents)), pdfs_(folder_) {}
  const ImageFolder& listing() const override { return folder_; }
  // At most the decoders' byte limit: a larger image would be refused unread anyway.
  Result<std::vector<uint8_t>> ReadImage(size_t i) override {
    const SourceSample& s = folder_.samples[i];
    if (s.page > 0) return ReadDocumentPage(folder_.root, s, env_, documents_, &pdfs_);
    return env_->ReadFile(JoinPath(folder_.root, s.relative_path), DecodeLimits().max_input_bytes);
  }
  std::string Where(size_t i) const override {
    const SourceSample& s = folder_.samples[i];
    std::string where = JoinPath(folder_.root, s.relative_path);
    if (s.page > 0) {
      where += " page " + std::to_string(s.page) + " of " + std::to_string(s.pages);
    }
    if (s.line > 0) where += " (metadata.jsonl line " + std::to_string(s.line) + ")";
    return where;
  }
  std::string Name() const override { return folder_.root; }

 private:
  ImageFolder folder_;
  Env* env_;
  DocumentOptions documents_;
  PdfDocumentCache pdfs_;  // the pages of a PDF come from one open document
};

Slot EncodeOne(SampleSource& source, size_t i, const EncodeOptions& opts, const Labeler* labeler) {
  const SourceSample& sample = source.listing().samples[i];
  Slot slot;
  if (!sample.problem.ok()) {  // a metadata row that names no readable image
    slot.encoded = sample.problem;
    return slot;
  }
  if (labeler != nullptr) {
    Result<std::vector<Value>> values = labeler->Make(i, sample);
    if (!values.ok()) {
      slot.encoded = values.status();
      return slot;
    }
    slot.label_values = std::move(values).value();
  }
  Result<std::vector<uint8_t>> bytes = source.ReadImage(i);
  if (!bytes.ok()) {
    slot.encoded = bytes.status();
    return slot;
  }
  slot.source_bytes = bytes->size();
  slot.encoded = EncodeSample(std::move(bytes).value(), opts);
  return slot;
}

struct RejectLog {
  std::optional<SequentialFile> file;
  uint64_t count = 0;
};

Status Reject(Env* env, const std::string& dir, const SourceSample& s, const Status& why,
              RejectLog* log) {
  if (!log->file) {
    DOCFEED_ASSIGN_OR_RETURN(log->file,
                             SequentialFile::Create(JoinPath(dir, kRejectsFileName), env));
  }
  nlohmann::ordered_json row;
  if (!s.relative_path.empty()) row["file_name"] = s.relative_path;  // empty: malformed row
  if (s.line > 0) row["metadata_line"] = s.line;
  if (s.row >= 0) row["row"] = s.row;
  if (s.page > 0) row["page"] = s.page;
  row["error"] = why.ToString();
  ++log->count;
  return log->file->Append(row.dump() + "\n");
}

// A sample whose image decodes only with warnings, under PackOptions::strict.
Status StrictRefusal(const DecodeReport& report) {
  return CorruptionError("image decodes only with " + std::to_string(report.warnings) +
                         " warning(s) (first: " + report.first_warning +
                         "); refused by strict (Pillow would decode it)");
}

struct WriteState {
  PackSummary summary;
  RejectLog rejects;
  Clock::time_point start;
};

// Writes one encoded sample (or rejects it); called in sample order.
Status WriteOne(const SampleSource& source, size_t i, Slot& slot, const PackOptions& options,
                const std::string& dir, ShardWriter& writer, WriteState& state) {
  const SourceSample& src = source.listing().samples[i];
  state.summary.source_bytes += slot.source_bytes;
  if (slot.encoded.ok() && options.strict && slot.encoded->decode_report.warnings > 0) {
    slot.encoded = StrictRefusal(slot.encoded->decode_report);
  }
  if (!slot.encoded.ok()) {
    // A listing problem already names metadata.jsonl and the line.
    Status why =
        src.problem.ok() ? slot.encoded.status().WithContext(source.Where(i)) : src.problem;
    if (!options.skip_bad) return why;
    return Reject(EnvOrDefault(options.env), dir, src, why, &state.rejects);
  }
  const EncodedImage& img = *slot.encoded;
  SampleToWrite sample{img.bytes,    src.relative_path, img.codec,  img.width,   img.height,
                       img.channels, img.orientation,   src.values, img.original};
  for (Value& v : slot.label_values) sample.values.push_back(std::move(v));
  DOCFEED_RETURN_IF_ERROR(writer.Add(sample));
  if (img.decode_report.warnings > 0) {
    state.summary.decode_warnings.push_back(
        // A dataset's row is named by where it is (its image path need not be unique).
        {src.row >= 0 ? source.Where(i) : src.relative_path, img.decode_report.warnings,
         img.decode_report.first_warning});
  }
  ++state.summary.samples;
  state.summary.stored_image_bytes += img.bytes.size();
  ++state.summary.stored_codecs[std::string(StoredCodecName(img.codec))];
  return Status::Ok();
}

// The error of a pack whose every sample was rejected. The rejects move out of the work
// directory (which the failed run removes) to OUT.rejects-PID.jsonl, where the message points.
Status AllRejected(Env* env, const std::string& what, const std::string& dir,
                   const std::string& output) {
  const std::string kept = TempSibling(output, "rejects") + ".jsonl";
  Status moved = env->RenameNoReplace(JoinPath(dir, kRejectsFileName), kept);
  return InvalidArgumentError("every sample of " + what + " was rejected; " +
                              (moved.ok()
                                   ? "see " + kept + " for why"
                                   : "the list of why could not be kept: " + moved.ToString()));
}

Status WriteAll(SampleSource& source, const PackOptions& options, const std::string& dir,
                WriteState& state) {
  const ImageFolder& folder = source.listing();
  Env* env = EnvOrDefault(options.env);
  std::unique_ptr<Labeler> labeler;
  ShardWriterOptions wopts;
  wopts.env = env;
  wopts.directory = dir;
  wopts.columns = folder.columns;
  if (!options.labels.tokenizer_dir.empty()) {
    LabelOptions label_options = options.labels;
    label_options.env = env;
    DOCFEED_ASSIGN_OR_RETURN(labeler, Labeler::Create(label_options, folder));
    for (const ColumnSpec& c : Labeler::Columns()) wopts.columns.push_back(c);
    wopts.extra_files = labeler->TokenizerFileNames();
  }
  if (options.encode.keep_original) {
    for (const ColumnSpec& c : wopts.columns) {
      if (c.name == kOriginalColumn) {
        return InvalidArgumentError(source.Name() + " has a column '" + c.name +
                                    "', the name --keep-original gives the source images");
      }
    }
  }
  wopts.label_column = PickLabelColumn(wopts.columns);
  if (!options.chat_labels.empty()) {
    const Json chat = Json::parse(options.chat_labels, nullptr, /*allow_exceptions=*/false);
    if (!chat.is_object()) return InvalidArgumentError("chat_labels is not a JSON object");
    wopts.chat_labels = options.chat_labels;
  }
  wopts.compression = options.compression;
  wopts.max_file_bytes = options.max_file_bytes;
  wopts.keep_original = options.encode.keep_original;
  wopts.sink = options.data_sink;
  wopts.preprocess = options.encode.preprocess;
  // Preprocessed pages are ~4 MB raw: one row per batch, so a random read decompresses one page.
  if (options.encode.preprocess.preprocessed() && options.compression != "none") {
    wopts.max_batch_rows = 1;
  }
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> writer, ShardWriter::Create(wopts));
  int threads = options.threads > 0
                    ? options.threads
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // A part writes its slice of the listing; the labeler and the columns above saw all of it, so
  // every part gets the tokens, labels and schema of the whole pack.
  const PartSlice slice = options.part.is_part() ? SliceOf(folder.samples.size(), options.part)
                                                 : PartSlice{0, folder.samples.size()};
  const size_t first = slice.first;
  const size_t total = slice.end - slice.first;
  DOCFEED_RETURN_IF_ERROR(OrderedParallelFor<Slot>(
      total, threads, kWindowPerThread * static_cast<size_t>(threads),
      [&](size_t k) { return EncodeOne(source, first + k, options.encode, labeler.get()); },
      [&](size_t k, Slot& slot) {
        DOCFEED_RETURN_IF_ERROR(WriteOne(source, first + k, slot, options, dir, *writer, state));
        if (options.on_progress) {
          std::chrono::duration<double> elapsed = Clock::now() - state.start;
          options.on_progress({k + 1, total, state.summary.source_bytes, elapsed.count()});
        }
        return Status::Ok();
      }));
  if (state.rejects.file) DOCFEED_RETURN_IF_ERROR(state.rejects.file->Close());
  if (state.summary.samples == 0) {
    // A dataset holds at least one sample, so such a part cannot be written: fewer, larger parts
    // put a packable sample in every slice.
    const std::string what = options.part.is_part()
                                 ? "part " + std::to_string(options.part.index) + "/" +
                                       std::to_string(options.part.count) + " (entries " +
                                       std::to_string(slice.first) + " to " +
                                       std::to_string(slice.end - 1) + ") of " + source.Name() +
                                       " (use fewer parts)"
                                 : source.Name();
    return AllRejected(env, what, dir, options.output);
  }
  if (labeler) {
    DOCFEED_RETURN_IF_ERROR(labeler->SaveTokenizer(dir).status());
    state.summary.labels_truncated = labeler->truncated();
    state.summary.new_tokens = labeler->new_tokens();
    state.summary.tokenizer_size = labeler->tokenizer_size();
    state.summary.tokenizer_warning = labeler->tokenizer_warning();
  }
  Manifest manifest;
  manifest.codec = std::string(CodecChoiceName(options.encode.codec));
  manifest.jpeg_quality =
      options.encode.codec == CodecChoice::kJpeg ? options.encode.jpeg_quality : 0;
  manifest.source_bytes = state.summary.source_bytes;
  manifest.preprocess = options.encode.preprocess;
  if (manifest.preprocess.preprocessed()) {
    manifest.codec = manifest.preprocess.patches_form() ? "pfm" : "ppm";
  }
  manifest.rejected = state.rejects.count;
  if (folder.pdf.documents > 0) {
    manifest.pdf = {folder.pdf.dpi, folder.pdf.first_page_only, PdfRendererName()};
  }
  if (options.part.is_part()) manifest.part = MakePartInfo(options, folder);
  DOCFEED_ASSIGN_OR_RETURN(Manifest written, writer->Finish(std::move(manifest)));
  for (const FileEntry& f : written.data_files) {
    state.summary.data_files.push_back(f.name);
    state.summary.output_bytes += f.size_bytes;
  }
  for (const FileEntry& f : written.other_files) state.summary.output_bytes += f.size_bytes;
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<SampleSource>> OpenImageFolderSource(const std::string& root, Env* env,
                                                            bool follow_symlinks,
                                                            const DocumentOptions& documents) {
  env = EnvOrDefault(env);
  DOCFEED_ASSIGN_OR_RETURN(ImageFolder folder,
                           ScanImageFolder(root, env, follow_symlinks, documents.split_tiffs()));
  DOCFEED_RETURN_IF_ERROR(ExpandDocumentPages(&folder, env, documents));
  return std::unique_ptr<SampleSource>(
      std::make_unique<ImageFolderSource>(std::move(folder), env, documents));
}

namespace {

// The checks both entry points make before reading anything.
Result<std::string> CheckOutput(const PackOptions& options) {
  Env* env = EnvOrDefault(options.env);
  std::string output = options.output;
  while (output.size() > 1 && output.back() == '/') output.pop_back();
  if (output.empty()) return InvalidArgumentError("no output directory given (-o OUT)");
  if (options.part.is_part() &&
      (options.part.index >= options.part.count || options.part.count > kMaxParts)) {
    return InvalidArgumentError(
        "part " + std::to_string(options.part.index) + " of " + std::to_string(options.part.count) +
        ": the index must be below the count, the count at most " + std::to_string(kMaxParts));
  }
  if (options.encode.keep_original && !options.encode.preprocess.preprocessed()) {
    return InvalidArgumentError(
        "--keep-original needs --preprocess (without it the original is "
        "what is stored)");
  }
  // An existing part is checked once the source is listed (KeepCompletePart).
  if (env->PathExists(output) && !options.overwrite && !options.part.is_part()) {
    return AlreadyExistsError(output + " already exists; pass --overwrite to replace it");
  }
  return output;
}

// Writes, verifies and places the pack while holding OUT's lock.
Status WriteAndPlace(SampleSource& source, const PackOptions& options, WriteState& state) {
  Env* env = EnvOrDefault(options.env);
  const std::string& output = options.output;
  if (env->PathExists(output) && !options.overwrite) {  // made before the lock was taken
    return AlreadyExistsError(output + " already exists; pass --overwrite to replace it");
  }
  const std::string tmp = TempSibling(output, "partial");
  DOCFEED_RETURN_IF_ERROR(env->RemoveAll(tmp));
  DOCFEED_RETURN_IF_ERROR(env->CreateDirectory(tmp));
  Status status = WriteAll(source, options, tmp, state);
  // With a sink each data file was checked before it went; StreamToRemote verifies the rest.
  if (status.ok() && options.data_sink == nullptr) {
    status = VerifyDataset(tmp, env).WithContext("verifying the packed output");
  }
  if (status.ok()) {
    status = PlaceOutput(env, tmp, output, options.overwrite, [env](const std::string& path) {
      return CheckReplaceableOutput(path, /*allow_dict=*/false, env);
    });
  }
  if (!status.ok()) env->RemoveAll(tmp).IgnoreError();
  return status;
}

// The checks of a source before anything is written: it holds samples, and without skip_bad
// none of its rows is a bad sample.
Status CheckSource(const SampleSource& source, const PackOptions& options) {
  if (source.listing().samples.empty()) {
    return InvalidArgumentError(source.Name() + " holds no samples");
  }
  if (!options.skip_bad) {  // the first row that cannot be a sample, before writing anything
    for (const SourceSample& s : source.listing().samples) DOCFEED_RETURN_IF_ERROR(s.problem);
  }
  return Status::Ok();
}

// A part needs at least one listed sample per part, so that no slice is empty.
Status CheckPartCount(const SampleSource& source, const PackOptions& options) {
  const size_t listed = source.listing().samples.size();
  if (options.part.is_part() && options.part.count > listed) {
    return InvalidArgumentError(
        "--part " + std::to_string(options.part.index) + "/" + std::to_string(options.part.count) +
        ": " + source.Name() + " lists " + std::to_string(listed) +
        " sample(s), fewer than the parts; use at most " + std::to_string(listed) + " parts");
  }
  return Status::Ok();
}

// `options` with the output and the preset made once for every sample.
Result<PackOptions> Placed(const PackOptions& options, const std::string& output) {
  std::shared_ptr<const Preset> preset = options.encode.preset;
  if (options.encode.preprocess.preprocessed() && preset == nullptr) {
    DOCFEED_ASSIGN_OR_RETURN(preset, PresetForStored(options.encode.preprocess));
  }
  PackOptions placed = options;
  placed.output = output;
  placed.encode.preset = std::move(preset);
  return placed;
}

void FinishSummary(const SampleSource& source, WriteState& state) {
  state.summary.rejected = state.rejects.count;
  state.summary.unlisted_images = source.listing().unlisted_images;
  state.summary.other_files = source.listing().other_files;
  state.summary.skipped = source.listing().skipped;
  state.summary.pdf_documents = source.listing().pdf.documents;
  state.summary.pdf_pages = source.listing().pdf.pages;
  state.summary.pdf_dpi = source.listing().pdf.dpi;
  state.summary.tiff_documents = source.listing().tiff.documents;
  state.summary.tiff_pages = source.listing().tiff.pages;
  state.summary.seconds = std::chrono::duration<double>(Clock::now() - state.start).count();
}

// Writes `source` into OUT.partial-PID, verifies it and places it at `output`.
Result<PackSummary> PackChecked(SampleSource& source, const PackOptions& options,
                                const std::string& output, WriteState& state) {
  Env* env = EnvOrDefault(options.env);
  if (options.overwrite) {  // refused before any work; checked again when it is replaced
    DOCFEED_RETURN_IF_ERROR(CheckReplaceableOutput(output, /*allow_dict=*/false, env));
  }
  DOCFEED_RETURN_IF_ERROR(CheckSource(source, options));
  DOCFEED_RETURN_IF_ERROR(CheckPartCount(source, options));
  if (!options.check_part_at.empty()) {  // a rerun of a part at an s3:// URL (PackToRemote)
    return KeepCompletePart(RemoteEnv::Default(), options.check_part_at,
                            MakePartInfo(options, source.listing()));
  }
  DOCFEED_ASSIGN_OR_RETURN(PackOptions placed, Placed(options, output));
  // -o PARTS/I: PARTS (and any directory above it) is made by the lock, on first use.
  DOCFEED_ASSIGN_OR_RETURN(OutputLock lock, OutputLock::Acquire(env, output));
  if (options.part.is_part() && !options.overwrite && env->PathExists(output)) {
    // A rerun of a part: keep the output when it is this part, complete and verified.
    Result<PackSummary> kept =
        KeepCompletePart(env, output, MakePartInfo(options, source.listing()));
    lock.Release().IgnoreError();
    return kept;
  }
  Status status = WriteAndPlace(source, placed, state);
  // A lock file that cannot be removed is only taken again by the next run.
  lock.Release().IgnoreError();
  DOCFEED_RETURN_IF_ERROR(status);
  FinishSummary(source, state);
  return state.summary;
}

// The splits of a saved dataset that options.split selects, each opened as a source.
Result<std::vector<std::pair<std::string, std::unique_ptr<SampleSource>>>> OpenSavedSplits(
    const migrate::SavedDataset& saved, const PackOptions& options) {
  std::vector<std::pair<std::string, std::unique_ptr<SampleSource>>> out;
  SavedSourceOptions source_options{options.image_root, options.follow_symlinks,
                                    options.documents.first_page_only(), options.env};
  std::string names;
  for (const migrate::SplitSource& split : saved.splits) {
    names += (names.empty() ? "" : ", ") + split.name;
    if (!options.split.empty() && split.name != options.split) continue;
    DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<SampleSource> source,
                             OpenSavedSplitSource(split, source_options));
    out.emplace_back(split.name, std::move(source));
  }
  if (out.empty()) {
    return NotFoundError(saved.root + " has no split '" + options.split +
                         "' (its splits: " + names + ")");
  }
  return out;
}

// Adds a split's summary into the DatasetDict's.
void AddSplit(const std::string& name, const PackSummary& s, PackSummary* total) {
  total->samples += s.samples;
  total->rejected += s.rejected;
  total->source_bytes += s.source_bytes;
  total->stored_image_bytes += s.stored_image_bytes;
  total->output_bytes += s.output_bytes;
  for (const auto& [codec, n] : s.stored_codecs) total->stored_codecs[codec] += n;
  for (const std::string& f : s.data_files) total->data_files.push_back(name + "/" + f);
  for (const DecodeWarning& w : s.decode_warnings) total->decode_warnings.push_back(w);
  total->labels_truncated += s.labels_truncated;
  total->splits.push_back(name);
}

// A saved DatasetDict: OUT.partial-PID/<split>/ for each split (each written, verified and
// placed inside the work directory as a Dataset is), dataset_dict.json, then the whole
// directory placed at OUT.
Result<PackSummary> PackSavedDict(const migrate::SavedDataset& saved, const PackOptions& options,
                                  const std::string& output) {
  Env* env = EnvOrDefault(options.env);
  if (options.part.is_part()) {
    return UnsupportedError(saved.root +
                            " is a DatasetDict; --part packs one Dataset (save one split with "
                            "save_to_disk and pack that in parts)");
  }
  if (!options.labels.tokenizer_dir.empty()) {
    return UnsupportedError(
        "--tokenizer with a DatasetDict: pack one split at a time (--split) "
        "so that every split's labels use the same extended tokenizer");
  }
  if (options.overwrite) {
    DOCFEED_RETURN_IF_ERROR(CheckReplaceableOutput(output, /*allow_dict=*/true, env));
  }
  DOCFEED_ASSIGN_OR_RETURN(auto splits, OpenSavedSplits(saved, options));
  for (const auto& [name, source] : splits) DOCFEED_RETURN_IF_ERROR(CheckSource(*source, options));
  DOCFEED_ASSIGN_OR_RETURN(OutputLock lock, OutputLock::Acquire(env, output));
  if (env->PathExists(output) && !options.overwrite) {
    return AlreadyExistsError(output + " already exists; pass --overwrite to replace it");
  }
  const std::string work = TempSibling(output, "partial");
  PackSummary total;
  const auto start = Clock::now();
  auto write = [&]() -> Status {
    DOCFEED_RETURN_IF_ERROR(env->RemoveAll(work));
    DOCFEED_RETURN_IF_ERROR(env->CreateDirectory(work));
    nlohmann::ordered_json dict = {{"splits", nlohmann::ordered_json::array()}};
    for (auto& [name, source] : splits) {
      WriteState state;
      state.start = Clock::now();
      DOCFEED_ASSIGN_OR_RETURN(PackOptions placed, Placed(options, JoinPath(work, name)));
      placed.overwrite = false;
      Status status = WriteAndPlace(*source, placed, state);
      if (!status.ok()) return status.WithContext("split '" + name + "'");
      FinishSummary(*source, state);
      AddSplit(name, state.summary, &total);
      dict["splits"].push_back(name);
    }
    DOCFEED_ASSIGN_OR_RETURN(SequentialFile file,
                             SequentialFile::Create(JoinPath(work, "dataset_dict.json"), env));
    DOCFEED_RETURN_IF_ERROR(file.Append(dict.dump()));
    DOCFEED_RETURN_IF_ERROR(file.Close());
    return PlaceOutput(env, work, output, options.overwrite, [env](const std::string& path) {
      return CheckReplaceableOutput(path, /*allow_dict=*/true, env);
    });
  };
  Status status = write();
  if (!status.ok()) env->RemoveAll(work).IgnoreError();
  lock.Release().IgnoreError();
  DOCFEED_RETURN_IF_ERROR(status);
  total.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return total;
}

// A save_to_disk directory with an Image column, a datasets cache or Parquet: a Dataset as one
// source, a DatasetDict split by split.
Result<PackSummary> PackSaved(const PackOptions& options, const std::string& output, bool parquet) {
  Env* env = EnvOrDefault(options.env);
  Result<migrate::SavedDataset> opened = parquet ? OpenParquetDataset(options.source, env)
                                         : IsDatasetsCache(options.source, env)
                                             ? OpenDatasetsCache(options.source, env)
                                             : migrate::OpenSavedDataset(options.source, env);
  DOCFEED_RETURN_IF_ERROR(opened.status());
  const migrate::SavedDataset& saved = *opened;
  if (saved.is_dict) return PackSavedDict(saved, options, output);
  if (!options.split.empty()) {
    return InvalidArgumentError(
        "--split " + options.split + ": " + options.source +
        (parquet ? " is one Parquet file, without splits" : " is a Dataset, not a DatasetDict"));
  }
  WriteState state;
  state.start = Clock::now();
  DOCFEED_ASSIGN_OR_RETURN(auto splits, OpenSavedSplits(saved, options));
  return PackChecked(*splits[0].second, options, output, state);
}

// -o s3://...: `pack` (Pack or PackFrom) into a local staging directory, then the upload
// (remote_output.h).
Result<PackSummary> PackToRemote(
    const PackOptions& options,
    const std::function<Result<PackSummary>(const PackOptions&)>& pack) {
  bool replace = options.overwrite;
  if (options.part.is_part() && !options.overwrite) {
    // A rerun of a part, as for a local one: a part already at the URL is kept when it is this
    // part and verifies (read through the RemoteEnv), refused otherwise; nothing is packed.
    // Objects without a manifest are what an interrupted upload left (nothing opens them): they
    // are replaced, as --overwrite would (only a dataset's objects; CheckS3Output).
    RemoteEnv* remote = RemoteEnv::Default();
    Status empty = CheckS3Output(remote, options.output, /*overwrite=*/false);
    if (empty.code() != StatusCode::kAlreadyExists) DOCFEED_RETURN_IF_ERROR(empty);
    if (!empty.ok()) {
      if (remote->PathExists(JoinPath(options.output, kManifestFileName))) {
        PackOptions check = options;
        check.check_part_at = options.output;
        check.output = JoinPath(DefaultStagingRoot(), "docfeed-part-check");  // never written
        return pack(check);
      }
      replace = true;
    }
  }
  const auto start = Clock::now();
  auto written = start;
  PackSummary summary;
  DOCFEED_ASSIGN_OR_RETURN(
      S3UploadSummary uploaded,
      StreamToRemote(EnvOrDefault(options.env), options.output, replace,
                     [&](const std::string& local, DataFileSink* sink) -> Status {
                       PackOptions staged = options;
                       staged.output = local;
                       staged.overwrite = false;
                       staged.data_sink = sink;
                       DOCFEED_ASSIGN_OR_RETURN(summary, pack(staged));
                       written = Clock::now();
                       return Status::Ok();
                     }));
  summary.uploaded_objects = uploaded.objects;
  summary.uploaded_bytes = uploaded.sent_bytes;
  summary.upload_requests = uploaded.requests;
  summary.upload_retries = uploaded.retries;
  summary.streamed_files = uploaded.streamed_files;
  summary.staged_peak_bytes = uploaded.staged_peak_bytes;
  summary.upload_seconds = std::chrono::duration<double>(Clock::now() - written).count();
  summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return summary;
}

}  // namespace

ValidationMode ResolveValidation(ValidationMode mode, bool dataset_images, bool strict) {
  if (mode != ValidationMode::kAuto) return mode;
  return dataset_images && !strict ? ValidationMode::kStructure : ValidationMode::kFull;
}

Result<PackSummary> Pack(const PackOptions& requested) {
  if (IsRemotePath(requested.output)) return PackToRemote(requested, Pack);
  DOCFEED_ASSIGN_OR_RETURN(std::string output, CheckOutput(requested));
  DOCFEED_RETURN_IF_ERROR(
      CheckOverwriteKeepsSource(requested.source, output, EnvOrDefault(requested.env)));
  // Decided from the names of the files, so that one that cannot be read is reported as such.
  const bool saved = IsSavedDataset(requested.source, requested.env) ||
                     IsDatasetsCache(requested.source, requested.env);
  bool parquet = false;
  if (!saved) {
    DOCFEED_ASSIGN_OR_RETURN(parquet, IsParquetSource(requested.source, requested.env));
  }
  PackOptions options = requested;
  options.encode.validation =
      ResolveValidation(requested.encode.validation, saved || parquet, requested.strict);
  if (saved || parquet) return PackSaved(options, output, parquet);
  if (!options.split.empty() || !options.image_root.empty()) {
    return InvalidArgumentError(
        "--split and --image-root are for a Hugging Face dataset on disk or Parquet; " +
        options.source + " is neither");
  }
  if (IsTarSource(options.source, options.env)) {
    WriteState state;
    state.start = Clock::now();
    DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<SampleSource> tar,
                             OpenTarSource(options.source, options.env));
    return PackChecked(*tar, options, output, state);
  }
  WriteState state;
  state.start = Clock::now();
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<SampleSource> source,
                           OpenImageFolderSource(options.source, options.env,
                                                 options.follow_symlinks, options.documents));
  return PackChecked(*source, options, output, state);
}

Result<PackSummary> PackFrom(SampleSource& source, const PackOptions& requested) {
  if (IsRemotePath(requested.output)) {
    return PackToRemote(requested, [&](const PackOptions& o) { return PackFrom(source, o); });
  }
  PackOptions options = requested;
  options.encode.validation =
      ResolveValidation(requested.encode.validation, /*dataset_images=*/false, requested.strict);
  DOCFEED_ASSIGN_OR_RETURN(std::string output, CheckOutput(options));
  WriteState state;
  state.start = Clock::now();
  return PackChecked(source, options, output, state);
}

}  // namespace docfeed::internal
