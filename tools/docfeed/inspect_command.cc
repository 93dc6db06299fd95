// docfeed inspect: a human-readable (or --json) description of a packed dataset.
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "docfeed/dataset.h"
#include "progress.h"

namespace docfeed::tools {
namespace {

// `scale` divides every value (e.g. 1e3 for KB); `decimals` digits after the point.
void PrintDistribution(const char* name, const Distribution& d, double scale, int decimals,
                       const char* unit) {
  std::printf("  %-13s min %.*f  p50 %.*f  p90 %.*f  p99 %.*f  max %.*f  mean %.*f%s\n", name,
              decimals, d.min / scale, decimals, d.p50 / scale, decimals, d.p90 / scale, decimals,
              d.p99 / scale, decimals, d.max / scale, decimals, d.mean / scale, unit);
}

void PrintText(const DatasetStats& s) {
  const DatasetInfo& m = s.info;
  std::printf("%s: docfeed dataset, format version %d (%s)\n", m.path.c_str(), s.format_version,
              s.created_by.c_str());
  std::printf("samples         %llu", static_cast<unsigned long long>(m.num_samples));
  if (s.info.rejected > 0)
    std::printf(" (%llu rejected at pack time)", static_cast<unsigned long long>(s.info.rejected));
  std::printf("\ncolumns\n");
  for (const auto& [name, type] : s.arrow_columns)
    std::printf("  %-13s %s\n", name.c_str(), type.c_str());
  std::printf("codecs          stored with --codec %s:", m.codec.c_str());
  for (const auto& [codec, n] : m.stored_codecs) {
    std::printf(" %s=%llu", codec.c_str(), static_cast<unsigned long long>(n));
  }
  const std::string originals = s.info.original_column.empty()
                                    ? ""
                                    : ", originals in column \"" + s.info.original_column + "\"";
  if (m.preset == "idefics3") {
    std::printf(
        "\npreprocessing   idefics3 prepared pages (tile grid + global image) for longest_edge "
        "%d, max_image_size %d%s, transformers %d.x %s, stored as PGM/PPM%s",
        m.longest_edge, m.max_image_size, m.do_image_splitting ? "" : ", no image splitting",
        m.hf_version, m.backend.c_str(), originals.c_str());
  } else if (m.min_pixels > 0) {  // Qwen2-VL, Qwen2.5-VL
    std::printf(
        "\npreprocessing   %s smart_resize pages (min_pixels %lld, max_pixels %lld, patch_size "
        "%d, merge_size %d), transformers %d.x %s, stored as PGM/PPM%s",
        m.preset.c_str(), static_cast<long long>(m.min_pixels),
        static_cast<long long>(m.max_pixels), m.patch_size, m.merge_size, m.hf_version,
        m.backend.c_str(), originals.c_str());
  } else if (m.preset == "pix2struct" && m.stored_form == "patches") {
    std::printf(
        "\npreprocessing   pix2struct flattened_patches rows (the processor's output without its "
        "zero rows) for max_patches %d, patch %dx%d, transformers %d.x %s, stored as float "
        "PFM%s",
        m.max_patches, m.patch_height, m.patch_width, m.hf_version, m.backend.c_str(),
        originals.c_str());
  } else if (m.preset == "pix2struct") {
    std::printf(
        "\npreprocessing   pix2struct decoded pages at their own size (patches are cut at load "
        "time for any max_patches), transformers %d.x %s, stored as PGM/PPM%s",
        m.hf_version, m.backend.c_str(), originals.c_str());
  } else if (!m.preset.empty()) {
    std::printf(
        "\npreprocessing   %s resized stage for size %dx%d (HxW)%s, transformers %d.x %s, "
        "stored as PGM/PPM%s",
        m.preset.c_str(), m.height, m.width, m.align_long_axis ? ", align_long_axis" : "",
        m.hf_version, m.backend.c_str(), originals.c_str());
  } else {
    std::printf("\npreprocessing   none (original images)");
  }
  if (m.image_mean && m.image_std) {
    const auto& mean = *m.image_mean;
    const auto& sd = *m.image_std;
    std::printf("\nnormalization   mean %g,%g,%g std %g,%g,%g (the loader's default)", mean[0],
                mean[1], mean[2], sd[0], sd[1], sd[2]);
  }
  std::printf("\nchannels       ");
  for (const auto& [mode, n] : s.channels) {
    std::printf(" %s=%llu", mode.c_str(), static_cast<unsigned long long>(n));
  }
  std::printf(
      "\nbytes           source images %s, stored images %s, all files %s (%zu data file(s), "
      "compression %s)\n",
      FormatBytes(s.info.source_bytes).c_str(), FormatBytes(s.info.stored_image_bytes).c_str(),
      FormatBytes(m.total_bytes).c_str(), s.num_data_files, m.compression.c_str());
  std::printf("images\n");
  PrintDistribution("width", s.width, 1, 0, " px");
  PrintDistribution("height", s.height, 1, 0, " px");
  PrintDistribution("megapixels", s.megapixels, 1, 2, " MP");
  PrintDistribution("stored size", s.image_bytes, 1e3, 1, " KB");
  std::printf("  common sizes ");
  for (const auto& [wh, n] : s.common_sizes) {
    std::printf(" %s (%llu)", wh.c_str(), static_cast<unsigned long long>(n));
  }
  std::printf("\n");
  if (m.label_column.empty()) {
    std::printf("labels          none\n");
    return;
  }
  std::printf("labels          column \"%s\" (length = %s)\n", m.label_column.c_str(),
              "UTF-8 bytes for strings, elements for lists, not counting -100 padding");
  PrintDistribution("length", s.label_length, 1, 0, "");
  std::printf("  longest       sample %llu; %llu sample(s) without a label\n",
              static_cast<unsigned long long>(s.longest_label_sample),
              static_cast<unsigned long long>(s.samples_without_label));
  if (m.label_column == "labels") {
    // The recipes set decoder.max_length from the longest label, loading every label to find
    // it; the index already holds every length.
    std::printf("  decoder       max_length %.0f covers every label (p99 %.0f)\n",
                s.label_length.max, s.label_length.p99);
  }
}

}  // namespace

int RunInspect(const Args& args) {
  Result<ParsedArgs> parsed = ParseArgs(args, {"--json", "--help", "-h"}, {});
  if (!parsed.ok() || parsed->positional.size() != 1 || parsed->Has("--help")) {
    std::fputs("usage: docfeed inspect OUT [--json]\n",
               parsed.ok() && parsed->Has("--help") ? stdout : stderr);
    return parsed.ok() && parsed->Has("--help") ? 0 : 2;
  }
  Result<DatasetStats> stats = InspectDataset(parsed->positional[0]);
  if (!stats.ok()) {
    std::fprintf(stderr, "docfeed inspect: %s\n", stats.status().ToString().c_str());
    return 1;
  }
  if (parsed->Has("--json")) {
    std::fputs(stats->json.c_str(), stdout);
  } else {
    PrintText(*stats);
  }
  return 0;
}

}  // namespace docfeed::tools
