#include "migrate/migrate.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "base/file.h"
#include "base/json.h"
#include "base/output_dir.h"
#include "format/arrow/reader.h"
#include "format/dataset.h"
#include "migrate/assemble.h"
#include "migrate/piece.h"
#include "migrate/source.h"
#include "migrate/source_stream.h"

namespace docfeed::internal::migrate {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kJournalFile[] = "journal.json";

// One input file and the piece it becomes.
struct Job {
  size_t split = 0;
  std::string path;
  std::string label;  // "<split>/<file name>" or "<file name>"
  uint64_t bytes = 0;
  uint64_t rows = 0;
  std::string piece_dir;
  bool finished = false;  // found complete in the work directory
};

struct Plan {
  SavedDataset source;
  std::vector<SourceLayout> layouts;  // per split
  std::vector<Job> jobs;              // split by split, in state.json order
  uint64_t total_rows = 0;
};

std::string SplitLabel(const SplitSource& split, const std::string& path) {
  return split.name.empty() ? BaseName(path) : split.name + "/" + BaseName(path);
}

Result<Plan> ScanSource(const MigrateOptions& options) {
  Plan plan;
  DOCFEED_ASSIGN_OR_RETURN(plan.source, OpenSavedDataset(options.source, options.env));
  for (size_t s = 0; s < plan.source.splits.size(); ++s) {
    const SplitSource& split = plan.source.splits[s];
    for (size_t f = 0; f < split.data_files.size(); ++f) {
      Job job;
      job.split = s;
      job.path = split.data_files[f];
      job.label = SplitLabel(split, job.path);
      job.bytes = split.file_bytes[f];
      DOCFEED_ASSIGN_OR_RETURN(FileScan scan, ScanFile(job.path, job.label, options.pixel_column,
                                                       options.drop_columns, options.env));
      if (f == 0) plan.layouts.push_back(scan.layout);
      job.rows = scan.rows;
      plan.total_rows += scan.rows;
      job.piece_dir = std::to_string(s) + "-" + std::to_string(f);
      plan.jobs.push_back(std::move(job));
    }
  }
  return plan;
}

// Every value of `tensor` recovered with `inverter` (scratch holds 3 bytes a pixel).
RecoveryStats RecoverRow(const GridInverter& inverter, const TensorRow& tensor, FloatType type,
                         std::vector<uint8_t>& scratch) {
  const size_t plane = static_cast<size_t>(tensor.height) * static_cast<size_t>(tensor.width);
  const size_t bytes = FloatTypeBytes(type);
  scratch.resize(plane * 3);
  RecoveryStats all;
  for (int c = 0; c < 3; ++c) {
    all.Merge(
        inverter.Recover(c, type, tensor.values.data() + static_cast<size_t>(c) * plane * bytes,
                         plane, scratch.data() + c, 3),
        0);
  }
  return all;
}

// The first file's rows, one tensor at a time (values fetched), `row` counting from 0.
class FirstRows {
 public:
  FirstRows(SourceStream stream, const SourceLayout& layout, const MigrateOptions& options,
            std::string label)
      : stream_(std::move(stream)), layout_(layout), options_(options), label_(std::move(label)) {
    stream_.set_deferred_buffer(
        TensorValuesBuffer(stream_.schema(), static_cast<size_t>(layout_.pixel_column)));
  }

  // The next tensor, or nullopt at the end of the file.
  Result<std::optional<TensorRow>> Next() {
    while (next_in_batch_ >= batch_.num_rows) {
      DOCFEED_ASSIGN_OR_RETURN(bool more, stream_.Next(&batch_));
      if (!more) return std::optional<TensorRow>();
      next_in_batch_ = 0;
    }
    const std::string where = label_ + ": row " + std::to_string(row_);
    Result<TensorRow> tensor =
        ReadTensorRow(batch_.columns[static_cast<size_t>(layout_.pixel_column)], next_in_batch_++,
                      layout_.float_type);
    if (!tensor.ok()) return tensor.status().WithContext(where);
    DOCFEED_ASSIGN_OR_RETURN(tensor->values, stream_.Fetch(tensor->values));
    if (tensor->channels != 3) {
      return InvalidArgumentError(where + ": column '" + options_.pixel_column + "' holds " +
                                  std::to_string(tensor->channels) +
                                  " channels; Donut pixel_values have 3 (C x H x W)");
    }
    ++row_;
    return std::optional<TensorRow>(std::move(*tensor));
  }

 private:
  SourceStream stream_;
  const SourceLayout& layout_;
  const MigrateOptions& options_;
  std::string label_;
  arrow::RecordBatch batch_;
  int64_t next_in_batch_ = 0;
  int64_t row_ = 0;
};

// Rows of the first file looked at, at most, to tell apart normalizations that all hold row 0
// (a blank page is on numpy's and torchvision's grid alike).
constexpr int kMaxRowsToDisambiguate = 256;

// Tries each normalization on the dataset's first tensor and returns the first that holds all
// of its values (or, with allow_lossy, the closest). When several hold it, the next rows of the
// same file decide: the first candidate that holds every row looked at wins.
Result<NormalizeCandidate> ChooseNormalization(const Plan& plan, const MigrateOptions& options) {
  const std::vector<NormalizeCandidate> candidates =
      WithBothArithmetics(options.candidates.empty() ? DefaultCandidates() : options.candidates);
  const auto job =
      std::find_if(plan.jobs.begin(), plan.jobs.end(), [](const Job& j) { return j.rows > 0; });
  if (job == plan.jobs.end()) return candidates.front();
  const SourceLayout& layout = plan.layouts[job->split];
  DOCFEED_ASSIGN_OR_RETURN(SourceStream stream,
                           SourceStream::Open(EnvOrDefault(options.env), job->path, job->label));
  FirstRows rows(std::move(stream), layout, options, job->label);
  DOCFEED_ASSIGN_OR_RETURN(std::optional<TensorRow> first, rows.Next());
  if (!first) return InternalError(job->label + ": rows vanished");
  std::vector<GridInverter> inverters;
  for (const NormalizeCandidate& c : candidates) {
    DOCFEED_ASSIGN_OR_RETURN(GridInverter inv, GridInverter::Create(c));
    inverters.push_back(std::move(inv));
  }
  std::vector<uint8_t> scratch;
  std::vector<size_t> holding;
  std::string tried;
  std::optional<std::pair<double, size_t>> closest;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const RecoveryStats all = RecoverRow(inverters[i], *first, layout.float_type, scratch);
    if (all.off_grid == 0) {
      holding.push_back(i);
      continue;
    }
    tried += "; " + CandidateLabel(candidates[i]) + ": " + std::to_string(all.off_grid) + " of " +
             std::to_string(all.values) + " values off the grid, largest deviation " +
             std::to_string(all.max_deviation);
    if (!closest || all.max_deviation < closest->first) closest = {all.max_deviation, i};
  }
  for (int n = 1; holding.size() > 1 && n < kMaxRowsToDisambiguate; ++n) {
    DOCFEED_ASSIGN_OR_RETURN(std::optional<TensorRow> row, rows.Next());
    if (!row) break;
    std::vector<size_t> still;
    for (size_t i : holding) {
      if (RecoverRow(inverters[i], *row, layout.float_type, scratch).off_grid == 0) {
        still.push_back(i);
      }
    }
    // A row on no grid is the migration's to report (naming it); keep what row 0 allowed.
    if (still.empty()) break;
    holding = std::move(still);
  }
  if (!holding.empty()) return candidates[holding.front()];
  if (options.allow_lossy && closest && std::isfinite(closest->first)) {
    return candidates[closest->second];
  }
  return InvalidArgumentError(
      job->label + ": row 0 of column '" + options.pixel_column +
      "' is not on the normalization grid of any known mean/std (" + tried.substr(2) +
      "). Pass --mean/--std for the processor's image_mean/image_std, or --allow-lossy");
}

std::string JournalText(const MigrateOptions& options, const Plan& plan) {
  Json j;
  j["format"] = "docfeed-migrate-journal";
  j["version"] = 1;
  Result<std::string> real = EnvOrDefault(options.env)->RealPath(options.source);
  j["source"] = real.ok() ? *real : options.source;
  Json files = Json::array();
  for (const Job& job : plan.jobs) files.push_back({job.label, job.bytes});
  j["files"] = files;
  Json o;
  o["pixel_column"] = options.pixel_column;
  Json cands = Json::array();
  for (const NormalizeCandidate& c : options.candidates) cands.push_back({c.name, c.mean, c.std});
  o["candidates"] = cands;
  o["allow_lossy"] = options.allow_lossy;
  o["box"] = static_cast<int>(options.box);
  o["compression"] = options.compression;
  o["max_file_bytes"] = options.max_file_bytes;
  o["drop_columns"] = options.drop_columns;
  j["options"] = o;
  return j.dump(1) + "\n";
}

void Note(const MigrateOptions& options, const std::string& text) {
  if (options.on_note) options.on_note(text);
}

// Creates or reuses OUT.partial: reused only when its journal equals this run's (same source
// files and sizes, same options), so finished pieces are valid for this run. REQUIRES: OUT's
// lock is held, so no live run is writing OUT.partial.
Status PrepareWorkDirectory(const std::string& work, const std::string& journal,
                            const MigrateOptions& options) {
  Env* env = EnvOrDefault(options.env);
  if (env->IsDirectory(work)) {
    Result<std::string> old = env->ReadTextFile(JoinPath(work, kJournalFile));
    if (old.ok() && *old == journal) {
      Note(options, "resuming the interrupted migration in " + work);
    } else {
      Note(options, "discarding " + work + " (left by a run with other inputs or options)");
      DOCFEED_RETURN_IF_ERROR(env->RemoveAll(work));
    }
  }
  if (!env->IsDirectory(work)) {
    DOCFEED_RETURN_IF_ERROR(env->CreateDirectory(work));
    DOCFEED_RETURN_IF_ERROR(env->CreateDirectory(JoinPath(work, "pieces")));
    DOCFEED_RETURN_IF_ERROR(env->WriteTextFile(JoinPath(work, kJournalFile), journal));
  }
  return env->RemoveAll(JoinPath(work, "final"));  // an interrupted assembly
}

// Shared state of the worker threads.
class Runner {
 public:
  Runner(const MigrateOptions& options, const Plan& plan, Clock::time_point start)
      : options_(options), plan_(plan), start_(start) {
    const char* kill = std::getenv("DOCFEED_MIGRATE_KILL_AFTER_ROWS");  // test hook: resume
    kill_after_rows_ = kill != nullptr ? std::strtoull(kill, nullptr, 10) : 0;
  }

  Status Run(const std::vector<PieceConfig>& configs, int threads) {
    for (const Job& job : plan_.jobs) {
      if (job.finished) rows_done_ += job.rows;
    }
    Report(0);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) workers.emplace_back([&] { Work(configs); });
    for (std::thread& w : workers) w.join();
    return first_error_index_ == SIZE_MAX ? Status::Ok() : first_error_;
  }

 private:
  void Work(const std::vector<PieceConfig>& configs) {
    while (!stop_.load()) {
      const size_t i = next_.fetch_add(1);
      if (i >= plan_.jobs.size()) return;
      const Job& job = plan_.jobs[i];
      if (job.finished) continue;
      Status status = ProcessPiece({job.path, job.label, job.piece_dir}, configs[job.split],
                                   [this](uint64_t bytes) { return AfterRow(bytes); });
      if (!status.ok()) Fail(i, status);
    }
  }

  Status AfterRow(uint64_t bytes) {
    if (stop_.load()) return CancelledError("stopped after an error in another file");
    const uint64_t run_rows = ++rows_this_run_;
    rows_done_ += 1;
    bytes_done_ += bytes;
    if (kill_after_rows_ > 0 && run_rows >= kill_after_rows_) std::raise(SIGKILL);
    if (options_.should_stop && options_.should_stop()) {
      return CancelledError("stopped on request; rerun to resume");
    }
    Report(bytes);
    return Status::Ok();
  }

  void Report(uint64_t) {
    if (!options_.on_progress) return;
    std::lock_guard<std::mutex> lock(mu_);
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    options_.on_progress({rows_done_.load(), plan_.total_rows, bytes_done_.load(), elapsed});
  }

  // Keeps the error of the earliest input file, so the message does not depend on timing.
  void Fail(size_t index, const Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    if (status.code() == StatusCode::kCancelled && first_error_index_ != SIZE_MAX) return;
    if (index < first_error_index_ || first_error_.code() == StatusCode::kCancelled) {
      first_error_index_ = index;
      first_error_ = status;
    }
  }

  const MigrateOptions& options_;
  const Plan& plan_;
  Clock::time_point start_;
  uint64_t kill_after_rows_ = 0;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rows_done_{0};
  std::atomic<uint64_t> rows_this_run_{0};
  std::atomic<uint64_t> bytes_done_{0};
  std::mutex mu_;
  size_t first_error_index_ = SIZE_MAX;
  Status first_error_ = Status::Ok();
};

std::string BoxPolicyName(BoxPolicy box) {
  switch (box) {
    case BoxPolicy::kCentred:
      return "centred";
    case BoxPolicy::kTight:
      return "tight";
    case BoxPolicy::kKeep:
      return "keep";
  }
  return "?";
}

// migration.json: where the samples came from and what recovery and padding detection found.
std::string MigrationJson(const SplitSource& split, const SourceLayout& layout,
                          const NormalizeCandidate& norm, const MigrateOptions& options,
                          const std::vector<PieceInfo>& infos) {
  PieceInfo all;
  Json boxes = Json::array();
  for (const PieceInfo& p : infos) {
    all.rows += p.rows;
    if (p.rows > 0 && all.height == 0) all.height = p.height, all.width = p.width;
    all.off_grid += p.off_grid;
    all.max_deviation = std::max(all.max_deviation, p.max_deviation);
    all.cropped += p.cropped;
    all.off_centre += p.off_centre;
    all.grayscale += p.grayscale;
    for (const auto& b : p.boxes) boxes.push_back(b);
  }
  Json j;
  Result<std::string> real = EnvOrDefault(options.env)->RealPath(split.dir);
  j["source"] = real.ok() ? *real : split.dir;
  j["pixel_column"] = options.pixel_column;
  j["tensor_type"] = layout.pixel_type;
  j["array3d"] = layout.array3d;
  j["normalization"] = {{"name", norm.name},
                        {"mean", norm.mean},
                        {"std", norm.std},
                        {"backend", DonutBackendName(norm.backend)}};
  j["box_policy"] = BoxPolicyName(options.box);
  j["samples"] = all.rows;
  j["tensor_height"] = all.height;
  j["tensor_width"] = all.width;
  j["off_grid_values"] = all.off_grid;
  j["max_deviation"] = all.max_deviation;
  j["cropped"] = all.cropped;
  j["off_centre"] = all.off_centre;
  j["grayscale"] = all.grayscale;
  j["box_fields"] = {"top",       "left",       "height",       "width",
                     "tight_top", "tight_left", "tight_height", "tight_width"};
  // One box per line: readable, and far smaller than one number per line.
  std::string text = j.dump(1);
  text.resize(text.size() - 2);  // "\n}"
  text += ",\n \"boxes\": [";
  for (size_t i = 0; i < boxes.size(); ++i) text += (i ? ",\n  " : "\n  ") + boxes[i].dump();
  return text + (boxes.empty() ? "]\n}\n" : "\n ]\n}\n");
}

Status AssembleAll(const Plan& plan, const std::string& work, const NormalizeCandidate& norm,
                   const MigrateOptions& options, MigrateSummary* summary) {
  Env* env = EnvOrDefault(options.env);
  const std::string final_dir = JoinPath(work, "final");
  if (plan.source.is_dict) DOCFEED_RETURN_IF_ERROR(env->CreateDirectory(final_dir));
  for (size_t s = 0; s < plan.source.splits.size(); ++s) {
    const SplitSource& split = plan.source.splits[s];
    std::vector<std::string> dirs;
    std::vector<PieceInfo> infos;
    for (const Job& job : plan.jobs) {
      if (job.split != s) continue;
      dirs.push_back(JoinPath(JoinPath(work, "pieces"), job.piece_dir));
      DOCFEED_ASSIGN_OR_RETURN(PieceInfo info, LoadFinishedPiece(dirs.back(), env));
      infos.push_back(std::move(info));
    }
    const std::string out = split.name.empty() ? final_dir : JoinPath(final_dir, split.name);
    DOCFEED_ASSIGN_OR_RETURN(
        uint64_t bytes,
        AssembleSplit(
            dirs, out, MigrationJson(split, plan.layouts[s], norm, options, infos),
            NormalizationInfo{norm.mean, norm.std, std::string(DonutBackendName(norm.backend))},
            env));
    SplitSummary ss;
    ss.name = split.name;
    ss.output = split.name.empty() ? options.output : JoinPath(options.output, split.name);
    ss.output_bytes = bytes;
    for (const PieceInfo& p : infos) {
      ss.samples += p.rows;
      if (p.rows > 0) ss.height = p.height, ss.width = p.width;
      summary->off_grid_values += p.off_grid;
      summary->max_deviation = std::max(summary->max_deviation, p.max_deviation);
      summary->cropped += p.cropped;
      summary->off_centre += p.off_centre;
      summary->grayscale += p.grayscale;
    }
    summary->rows += ss.samples;
    summary->output_bytes += bytes;
    summary->splits.push_back(ss);
  }
  if (plan.source.is_dict) {
    DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> dict,
                             env->ReadFile(JoinPath(plan.source.root, "dataset_dict.json")));
    DOCFEED_RETURN_IF_ERROR(env->WriteFile(JoinPath(final_dir, "dataset_dict.json"), dict));
    summary->output_bytes += dict.size();
  }
  return Status::Ok();
}

// OK when OUT may be written: nothing there, or --overwrite and a docfeed output there.
Status CheckOutput(Env* env, const MigrateOptions& options) {
  if (env->PathExists(options.output) && !options.overwrite) {
    return AlreadyExistsError(options.output + " already exists; pass --overwrite to replace it");
  }
  if (!options.overwrite) return Status::Ok();
  DOCFEED_RETURN_IF_ERROR(CheckOverwriteKeepsSource(options.source, options.output, env));
  return CheckReplaceableOutput(options.output, /*allow_dict=*/true, env);
}

Result<MigrateSummary> MigrateLocked(const MigrateOptions& options) {
  const Clock::time_point start = Clock::now();
  Env* env = EnvOrDefault(options.env);
  DOCFEED_RETURN_IF_ERROR(CheckOutput(env, options));  // again: made before the lock was taken
  DOCFEED_ASSIGN_OR_RETURN(Plan plan, ScanSource(options));
  DOCFEED_ASSIGN_OR_RETURN(NormalizeCandidate norm, ChooseNormalization(plan, options));
  DOCFEED_ASSIGN_OR_RETURN(GridInverter inverter, GridInverter::Create(norm));
  const std::string work = WorkDirectory(options.output);
  DOCFEED_RETURN_IF_ERROR(PrepareWorkDirectory(work, JournalText(options, plan), options));
  MigrateSummary summary;
  for (Job& job : plan.jobs) {
    job.piece_dir = JoinPath(JoinPath(work, "pieces"), job.piece_dir);
    job.finished = LoadFinishedPiece(job.piece_dir, env).ok();
    summary.resumed_files += job.finished ? 1 : 0;
  }
  std::vector<PieceConfig> configs;
  for (const SourceLayout& layout : plan.layouts) {
    configs.push_back({&inverter, layout, options.pixel_column, options.drop_columns, options.box,
                       options.allow_lossy, options.compression, options.max_file_bytes, env});
  }
  const int threads = options.threads > 0
                          ? options.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  Runner runner(options, plan, start);
  DOCFEED_RETURN_IF_ERROR(
      runner.Run(configs, std::min<int>(threads, static_cast<int>(plan.jobs.size()))));
  for (Job& job : plan.jobs) job.piece_dir = BaseName(job.piece_dir);
  DOCFEED_RETURN_IF_ERROR(AssembleAll(plan, work, norm, options, &summary));
  DOCFEED_RETURN_IF_ERROR(PlaceOutput(
      env, JoinPath(work, "final"), options.output, options.overwrite,
      [env](const std::string& path) { return CheckReplaceableOutput(path, true, env); }));
  // OUT is complete from here on: failing to clean up must not report the migration as failed.
  if (Status cleaned = env->RemoveAll(work); !cleaned.ok()) {
    Note(options, "could not remove " + work + " (the next migration to " + options.output +
                      " removes it): " + cleaned.ToString());
  }
  summary.normalization = norm;
  summary.float_type = plan.layouts.front().float_type;
  summary.pixel_type = plan.layouts.front().pixel_type;
  summary.array3d = plan.layouts.front().array3d;
  summary.input_bytes = plan.source.total_bytes;
  summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return summary;
}

}  // namespace

std::string WorkDirectory(const std::string& output) { return output + ".partial"; }

namespace {

Result<MigrateSummary> RunMigration(const MigrateOptions& options_in) {
  MigrateOptions options = options_in;
  while (options.output.size() > 1 && options.output.back() == '/') options.output.pop_back();
  if (options.output.empty()) return InvalidArgumentError("no output directory given (-o OUT)");
  Env* env = EnvOrDefault(options.env);
  DOCFEED_RETURN_IF_ERROR(CheckOutput(env, options));
  // One writer of OUT (and of OUT.partial) at a time, across pack, migrate and synth.
  DOCFEED_ASSIGN_OR_RETURN(OutputLock lock, OutputLock::Acquire(env, options.output));
  Result<MigrateSummary> summary = MigrateLocked(options);
  lock.Release().IgnoreError();  // a lock file left behind is only taken by the next run
  return summary;
}

}  // namespace
}  // namespace docfeed::internal::migrate

namespace docfeed {

Result<MigrateSummary> Migrate(const MigrateOptions& options) {
  return internal::migrate::RunMigration(options);
}

}  // namespace docfeed
