// Synthesize: options checks, the temporary-directory protocol, the parallel render loop and
// metadata.jsonl.
#include "synth/synth.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/file.h"
#include "base/ordered_parallel.h"
#include "base/output_dir.h"

namespace docfeed::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kMaxCount = 10'000'000;

Status CheckOptions(const SynthOptions& o) {
  if (o.output.empty()) return InvalidArgumentError("no output directory given (-o OUT)");
  if (o.count == 0 || o.count > kMaxCount) {
    return InvalidArgumentError("--n must be between 1 and " + std::to_string(kMaxCount));
  }
  if (o.dpi != 0 && (o.dpi < kMinDpi || o.dpi > kMaxDpi)) {
    return InvalidArgumentError("--dpi must be between " + std::to_string(kMinDpi) + " and " +
                                std::to_string(kMaxDpi) + " (or 0 for mixed)");
  }
  if (o.threads < 0) return InvalidArgumentError("--threads must be >= 0");
  return Status::Ok();
}

// A directory --overwrite may replace: empty, or what a previous synth wrote (metadata.jsonl and
// images/ and nothing else). Anything else is refused so a typo cannot delete unrelated data.
Status CheckReplaceable(Env* env, const std::string& output, bool overwrite) {
  const std::string parent = ParentPath(output);
  if (!parent.empty() && !env->IsDirectory(parent)) {
    return NotFoundError("cannot create " + output + ": its parent directory " + parent +
                         " does not exist");
  }
  if (!env->PathExists(output)) return Status::Ok();
  if (!env->IsDirectory(output)) {
    return AlreadyExistsError(output + " exists and is not a directory");
  }
  DOCFEED_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDirectory(output));
  if (names.empty()) return Status::Ok();
  if (!overwrite) {
    return AlreadyExistsError(output + " exists and is not empty; pass --overwrite to replace it");
  }
  for (const std::string& name : names) {
    if (name != "metadata.jsonl" && name != "images") {
      return InvalidArgumentError("refusing to overwrite " + output +
                                  ": it does not look like a docfeed synth output (it holds " +
                                  name + "); remove it yourself or choose another -o");
    }
  }
  return Status::Ok();
}

std::string MetadataLine(const SynthDocument& doc) {
  nlohmann::ordered_json row;
  row["file_name"] = doc.file_name;
  row["ground_truth"] = doc.ground_truth;
  return row.dump() + "\n";
}

// Renders every document on `threads` workers and writes them, in index order, under `tmp`.
Status WriteAll(const SynthOptions& o, const std::string& tmp, int threads,
                std::shared_ptr<const FontSet> fonts, SynthSummary& summary) {
  Env* env = EnvOrDefault(o.env);
  DOCFEED_RETURN_IF_ERROR(env->CreateDirectory(JoinPath(tmp, "images")));
  const std::string metadata_path = JoinPath(tmp, "metadata.jsonl");
  DOCFEED_ASSIGN_OR_RETURN(SequentialFile metadata, SequentialFile::Create(metadata_path, env));
  const auto start = Clock::now();
  auto work = [&](size_t i) -> Result<SynthDocument> {
    // One font map per worker thread (Pango font maps are per-thread objects).
    thread_local std::unique_ptr<TextEngine> engine;
    if (!engine) engine = std::make_unique<TextEngine>(fonts);
    return RenderDocument(*engine, o, i);
  };
  auto consume = [&](size_t i, Result<SynthDocument>& doc) -> Status {
    if (!doc.ok()) return doc.status();
    const std::string path = JoinPath(tmp, doc->file_name);
    DOCFEED_RETURN_IF_ERROR(env->WriteFile(path, doc->bytes));
    DOCFEED_RETURN_IF_ERROR(metadata.Append(MetadataLine(*doc)).WithContext(metadata_path));
    ++summary.documents;
    ++(doc->kind == DocKind::kInvoice ? summary.invoices : summary.receipts);
    ++(doc->file_name.ends_with(".png") ? summary.png : summary.jpeg);
    if (doc->channels == 1) ++summary.grayscale;
    summary.image_bytes += doc->bytes.size();
    if (o.on_progress) {
      o.on_progress({i + 1, o.count, summary.image_bytes,
                     std::chrono::duration<double>(Clock::now() - start).count()});
    }
    return Status::Ok();
  };
  const size_t window = 2 * static_cast<size_t>(threads) + 2;
  DOCFEED_RETURN_IF_ERROR(OrderedParallelFor<Result<SynthDocument>>(
      static_cast<size_t>(o.count), threads, window, work, consume));
  return metadata.Close().WithContext(metadata_path);
}

// Renders into OUT.partial-PID and places it at `output`. REQUIRES: `output`'s lock is held.
// An empty directory at OUT is replaced without --overwrite, as CheckReplaceable allows.
Status WriteAndPlace(const SynthOptions& options, const std::string& output, SynthSummary& summary,
                     std::shared_ptr<const FontSet> fonts) {
  Env* env = EnvOrDefault(options.env);
  DOCFEED_RETURN_IF_ERROR(CheckReplaceable(env, output, options.overwrite));
  const std::string tmp = TempSibling(output, "partial");
  DOCFEED_RETURN_IF_ERROR(env->RemoveAll(tmp));
  DOCFEED_RETURN_IF_ERROR(env->CreateDirectory(tmp));
  Status status = WriteAll(options, tmp, summary.threads, std::move(fonts), summary);
  if (status.ok()) {
    status = PlaceOutput(env, tmp, output, /*overwrite=*/true, [&](const std::string& path) {
      return CheckReplaceable(env, path, options.overwrite);
    });
  }
  if (!status.ok()) env->RemoveAll(tmp).IgnoreError();
  return status;
}

Result<SynthSummary> RunSynthesis(const SynthOptions& options) {
  DOCFEED_RETURN_IF_ERROR(CheckOptions(options));
  std::string output = options.output;
  while (output.size() > 1 && output.back() == '/') output.pop_back();
  Env* env = EnvOrDefault(options.env);
  DOCFEED_RETURN_IF_ERROR(CheckReplaceable(env, output, options.overwrite));
  DOCFEED_ASSIGN_OR_RETURN(std::shared_ptr<const FontSet> fonts, FontSet::Get());
  SynthSummary summary;
  summary.threads = options.threads > 0
                        ? options.threads
                        : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const auto start = Clock::now();
  DOCFEED_ASSIGN_OR_RETURN(OutputLock lock, OutputLock::Acquire(env, output));
  Status status = WriteAndPlace(options, output, summary, std::move(fonts));
  lock.Release().IgnoreError();  // a lock file left behind is only taken by the next run
  DOCFEED_RETURN_IF_ERROR(status);
  summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return summary;
}

}  // namespace

Result<KindChoice> ParseKindChoice(const std::string& text) {
  if (text == "invoice") return KindChoice::kInvoice;
  if (text == "receipt") return KindChoice::kReceipt;
  if (text == "mixed") return KindChoice::kMixed;
  return InvalidArgumentError("--kind must be invoice, receipt or mixed, not \"" + text + "\"");
}

}  // namespace docfeed::internal

namespace docfeed {

Result<SynthKind> ParseSynthKind(const std::string& text) {
  return internal::ParseKindChoice(text);
}

Result<SynthSummary> Synthesize(const SynthOptions& options) {
  return internal::RunSynthesis(options);
}

}  // namespace docfeed
