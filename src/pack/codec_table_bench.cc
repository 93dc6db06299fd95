// codec_table: packs a sample folder once per `--codec` choice and measures, on one thread,
// stored bytes per sample, pack time per sample and decode time per sample of what was stored.
// Prints the Markdown table recorded in docs/benchmarks.md ("Stored size and decode cost per
// codec").
//
// usage: codec_table SRC [--repeats N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/file.h"
#include "codec/codec.h"
#include "format/dataset.h"
#include "pack/packer.h"

namespace docfeed::internal {
namespace {

using Clock = std::chrono::steady_clock;

struct Row {
  std::string name;
  double bytes_per_sample = 0;
  double ratio = 0;
  double pack_ms = 0;
  double decode_ms = 0;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Result<Row> Measure(const std::string& src, const std::string& out, const std::string& label,
                    CodecChoice codec, int quality, int repeats) {
  PackOptions o;
  o.source = src;
  o.output = out;
  o.encode.codec = codec;
  o.encode.jpeg_quality = quality;
  o.threads = 1;
  o.overwrite = true;
  auto start = Clock::now();
  DOCFEED_ASSIGN_OR_RETURN(PackSummary summary, Pack(o));
  double pack_s = std::chrono::duration<double>(Clock::now() - start).count();
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<Dataset> ds, Dataset::Open(out));
  std::vector<std::vector<uint8_t>> images;
  for (uint64_t i = 0; i < ds->size(); ++i) {
    DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ds->ReadImage(i));
    images.push_back(std::move(bytes));
  }
  std::vector<double> runs;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = Clock::now();
    for (const auto& bytes : images) {
      DOCFEED_ASSIGN_OR_RETURN(Image img, DecodeImage(bytes));
      if (img.pixels.empty()) return InternalError("empty decode");
    }
    runs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  Row row;
  row.name = label;
  auto n = static_cast<double>(summary.samples);
  row.bytes_per_sample = static_cast<double>(summary.stored_image_bytes) / n;
  row.ratio =
      static_cast<double>(summary.source_bytes) / static_cast<double>(summary.stored_image_bytes);
  row.pack_ms = pack_s * 1e3 / n;
  row.decode_ms = Median(runs) * 1e3 / n;
  return row;
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: codec_table SRC [--repeats N]\n");
    return 2;
  }
  std::string src = argv[1];
  int repeats = argc >= 4 ? std::atoi(argv[3]) : 3;
  char tmpl[] = "/tmp/docfeed_codec_table_XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  std::string out = JoinPath(tmpl, "ds");
  struct Choice {
    const char* label;
    CodecChoice codec;
    int quality;
  };
  const Choice choices[] = {
      {"keep", CodecChoice::kKeep, 0},          {"png (level 6)", CodecChoice::kPng, 0},
      {"webp lossless", CodecChoice::kWebp, 0}, {"jpeg q95", CodecChoice::kJpeg, 95},
      {"jpeg q90", CodecChoice::kJpeg, 90},     {"jpeg q75", CodecChoice::kJpeg, 75}};
  std::printf(
      "| codec | stored KB/sample | source/stored | pack ms/sample (1 thread) | "
      "decode ms/sample (1 thread) |\n|---|---:|---:|---:|---:|\n");
  for (const Choice& c : choices) {
    Result<Row> row = Measure(src, out, c.label, c.codec, c.quality, repeats);
    if (!row.ok()) {
      std::fprintf(stderr, "%s: %s\n", c.label, row.status().ToString().c_str());
      return 1;
    }
    std::printf("| %s | %.1f | %.2f | %.1f | %.1f |\n", row->name.c_str(),
                row->bytes_per_sample / 1e3, row->ratio, row->pack_ms, row->decode_ms);
    std::fflush(stdout);
  }
  RemoveAll(tmpl).IgnoreError();
  return 0;
}

}  // namespace
}  // namespace docfeed::internal

int main(int argc, char** argv) { return docfeed::internal::Main(argc, argv); }
