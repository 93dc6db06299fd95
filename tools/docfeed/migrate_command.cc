// docfeed pack on a save_to_disk dataset: arguments, progress bar and the closing summary.
#include "migrate_command.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "args.h"
#include "docfeed/migrate.h"
#include "docfeed/pack.h"
#include "progress.h"

namespace docfeed::tools {
namespace {

constexpr char kHelp[] =
    "usage: docfeed pack SAVED_DATASET -o OUT [options]\n"
    "\n"
    "SAVED_DATASET is a directory written by datasets' save_to_disk (a Dataset, or a DatasetDict\n"
    "whose splits all become OUT/<split>) with a pixel_values column of normalized float tensors\n"
    "(3 x H x W nested lists of float32/float16/float64, or Array3D), as a dataset.map over\n"
    "DonutImageProcessor stores them. Every value is mapped back to its exact uint8 pixel (the\n"
    "normalization grid of the processor's mean/std); padding baked in at preprocessing is cut\n"
    "off, so docfeed's loader pads afresh (centred padding gives the original tensor back); every\n"
    "other column is kept. Streams with bounded memory; an interrupted run resumes from\n"
    "OUT.partial when rerun with the same arguments.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT        output directory\n"
    "  --mean M --std S        the processor's image_mean/image_std (one value or R,G,B); "
    "default:\n"
    "                          try 0.5/0.5 (Donut) and ImageNet's "
    "0.485,0.456,0.406/0.229,0.224,0.225\n"
    "  --allow-lossy           store the nearest pixel for values off the grid (reports the\n"
    "                          largest deviation) instead of refusing\n"
    "  --keep-padding          store the whole tensor, padding included\n"
    "  --content-box B         centred (default: the smallest box centred padding reproduces) or\n"
    "                          tight (every all-black border row/column cut: for datasets made\n"
    "                          with random_padding=True)\n"
    "  --pixel-column NAME     the tensor column (default pixel_values)\n"
    "  --drop-column A[,B]     leave these columns out\n"
    "  --compression C         lz4_frame (default, as pack --preprocess), zstd or none\n"
    "  --max-file-mb N         start a new data file after N MB (default 500)\n"
    "  --threads N             input files converted in parallel (default: all cores)\n"
    "  --overwrite             replace OUT if it exists\n";

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const size_t end = comma == std::string::npos ? text.size() : comma;
    if (end > start) out.push_back(text.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

Result<std::array<double, 3>> ParseTriple(const std::string& name, const std::string& text) {
  const std::vector<std::string> parts = SplitList(text);
  if (parts.size() != 1 && parts.size() != 3) {
    return InvalidArgumentError(name + " takes one value or three (R,G,B), got \"" + text + "\"");
  }
  std::array<double, 3> v{};
  for (size_t i = 0; i < 3; ++i) {
    const std::string& p = parts[parts.size() == 1 ? 0 : i];
    char* end = nullptr;
    v[i] = std::strtod(p.c_str(), &end);
    if (end == p.c_str() || *end != '\0') {
      return InvalidArgumentError(name + ": \"" + p + "\" is not a number");
    }
  }
  return v;
}

Result<MigrateOptions> ToOptions(const ParsedArgs& parsed) {
  MigrateOptions o;
  if (parsed.positional.size() != 1) return InvalidArgumentError("pack takes exactly one source");
  o.source = parsed.positional[0];
  o.output = parsed.Get("-o", parsed.Get("--output", ""));
  if (o.output.empty()) return InvalidArgumentError("pack needs -o OUT");
  const std::string mean = parsed.Get("--mean", "");
  const std::string std = parsed.Get("--std", "");
  if (mean.empty() != std.empty()) return InvalidArgumentError("give --mean and --std together");
  if (!mean.empty()) {
    MigrateNormalization c;
    c.name = "user";
    DOCFEED_ASSIGN_OR_RETURN(c.mean, ParseTriple("--mean", mean));
    DOCFEED_ASSIGN_OR_RETURN(c.std, ParseTriple("--std", std));
    o.candidates.push_back(c);
  }
  o.allow_lossy = parsed.Has("--allow-lossy");
  const std::string box = parsed.Get("--content-box", "centred");
  if (box != "centred" && box != "tight") {
    return InvalidArgumentError("--content-box must be centred or tight");
  }
  o.box = box == "tight" ? MigrateBox::kTight : MigrateBox::kCentred;
  if (parsed.Has("--keep-padding")) o.box = MigrateBox::kKeep;
  o.pixel_column = parsed.Get("--pixel-column", "pixel_values");
  o.drop_columns = SplitList(parsed.Get("--drop-column", ""));
  o.compression = parsed.Get("--compression", "lz4_frame");
  if (o.compression != "none" && o.compression != "zstd" && o.compression != "lz4_frame") {
    return InvalidArgumentError("--compression must be none, zstd or lz4_frame");
  }
  DOCFEED_ASSIGN_OR_RETURN(
      int max_mb, ParseInt("--max-file-mb", parsed.Get("--max-file-mb", "500"), 1, 1 << 20));
  o.max_file_bytes = static_cast<uint64_t>(max_mb) * 1'000'000;
  DOCFEED_ASSIGN_OR_RETURN(o.threads, ParseInt("--threads", parsed.Get("--threads", "0"), 0, 1024));
  o.overwrite = parsed.Has("--overwrite");
  return o;
}

void PrintSummary(const MigrateOptions& o, const MigrateSummary& s) {
  const double mb_s = s.seconds > 0 ? static_cast<double>(s.input_bytes) / 1e6 / s.seconds : 0;
  std::printf("migrated %llu samples from %s into %s in %s (%.1f MB/s of input)\n",
              static_cast<unsigned long long>(s.rows), o.source.c_str(), o.output.c_str(),
              FormatSeconds(s.seconds).c_str(), mb_s);
  std::printf("  bytes in   %s (%s%s)\n", FormatBytes(s.input_bytes).c_str(), s.pixel_type.c_str(),
              s.array3d ? ", Array3D" : "");
  std::printf("  bytes out  %s (%.1fx smaller)\n", FormatBytes(s.output_bytes).c_str(),
              s.output_bytes > 0
                  ? static_cast<double>(s.input_bytes) / static_cast<double>(s.output_bytes)
                  : 0.0);
  std::printf("  pixels     normalization %s (mean %g,%g,%g std %g,%g,%g; %s arithmetic); ",
              s.normalization.name.c_str(), s.normalization.mean[0], s.normalization.mean[1],
              s.normalization.mean[2], s.normalization.std[0], s.normalization.std[1],
              s.normalization.std[2],
              s.normalization.backend == DonutBackend::kTorchvision ? "transformers 5 torchvision"
                                                                    : "numpy");
  if (s.off_grid_values == 0) {
    std::printf("every value exact (largest deviation 0)\n");
  } else {
    std::printf("%llu value(s) off the grid rounded, largest deviation %.9g\n",
                static_cast<unsigned long long>(s.off_grid_values), s.max_deviation);
  }
  std::printf("  padding    %llu sample(s) stored without their padding, %llu grayscale\n",
              static_cast<unsigned long long>(s.cropped),
              static_cast<unsigned long long>(s.grayscale));
  if (s.off_centre > 0 && o.box == MigrateBox::kCentred) {
    std::printf(
        "  note       %llu sample(s) have off-centre padding (random_padding=True at "
        "preprocessing, or black page borders): their stored box keeps part of that padding so "
        "centred padding reproduces them; --content-box tight cuts it all (see migration.json)\n",
        static_cast<unsigned long long>(s.off_centre));
  }
  for (const MigrateSplitSummary& split : s.splits) {
    std::printf("  %-10s %llu samples, %dx%d, %s -> %s\n",
                split.name.empty() ? "dataset" : split.name.c_str(),
                static_cast<unsigned long long>(split.samples), split.height, split.width,
                FormatBytes(split.output_bytes).c_str(), split.output.c_str());
  }
  if (s.resumed_files > 0) {
    std::printf("  resumed    %llu input file(s) were already converted by an interrupted run\n",
                static_cast<unsigned long long>(s.resumed_files));
  }
}

const std::set<std::string> kFlags = {"--allow-lossy", "--keep-padding", "--overwrite", "--help",
                                      "-h"};
const std::set<std::string> kOptions = {"-o",
                                        "--output",
                                        "--mean",
                                        "--std",
                                        "--content-box",
                                        "--pixel-column",
                                        "--drop-column",
                                        "--compression",
                                        "--max-file-mb",
                                        "--threads"};

}  // namespace

namespace {

// pack's source argument (its first positional argument), or "" without one.
std::string SourceArgument(const Args& args) {
  // pack's own value-less flags, so their neighbours are not taken for option values.
  static const std::set<std::string> kValueless = {"--skip-bad",
                                                   "--overwrite",
                                                   "--help",
                                                   "-h",
                                                   "--strict",
                                                   "--no-pad-labels",
                                                   "--align-long-axis",
                                                   "--keep-original",
                                                   "--allow-lossy",
                                                   "--keep-padding"};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string arg(args[i]);
    if (arg.size() >= 2 && arg[0] == '-') {
      if (arg.find('=') == std::string::npos && kValueless.count(arg) == 0) ++i;
      continue;
    }
    return arg;
  }
  return "";
}

}  // namespace

bool IsSavedDatasetSource(const Args& args) {
  const std::string source = SourceArgument(args);
  return !source.empty() && IsSavedDataset(source);
}

bool IsSavedImageDatasetSource(const Args& args) {
  const std::string source = SourceArgument(args);
  return !source.empty() && IsSavedImageDataset(source);
}

int RunPackSavedDataset(const Args& args) {
  auto start = StartCommand("pack", args, kFlags, kOptions, kHelp, &ToOptions);
  if (const int* exit_code = std::get_if<int>(&start)) return *exit_code;
  MigrateOptions* options = &std::get<MigrateOptions>(start);
  ProgressBar bar("migrating");
  options->on_progress = [&bar](const MigrateProgress& p) {
    bar.Update(p.rows_done, p.rows_total, p.bytes_done, p.elapsed_seconds);
  };
  options->on_note = [](const std::string& note) {
    std::fprintf(stderr, "docfeed pack: %s\n", note.c_str());
  };
  Result<MigrateSummary> summary = Migrate(*options);
  bar.Finish();
  if (!summary.ok()) {
    std::fprintf(stderr, "docfeed pack: %s\n", summary.status().ToString().c_str());
    return 1;
  }
  PrintSummary(*options, *summary);
  return 0;
}

}  // namespace docfeed::tools
