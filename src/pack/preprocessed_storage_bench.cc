// preprocessed_storage: how to store the Donut "resized" stage (pack --preprocess donut).
//
// For every page of a sample folder it runs the Donut preset's Prepare once (preset/preset.h:
// decode, EXIF orientation, colour conversion, resize at HxW), then measures, on one thread, each
// storage candidate: stored bytes per page, encode time per page (what pack adds), and decode time
// per page, i.e. what a loader pays to get from the stored body to pixels: decompress the Arrow IPC
// body buffer (docfeed's own arrow::DecompressBuffer, as a reader does) and parse the container
// (ViewPpm for PPM, a full decode for PNG/WebP). Ratios are against PNG, measured in the same
// run. Prints the Markdown table recorded in docs/benchmarks.md ("Preprocessed storage").
//
// usage: preprocessed_storage SRC [--size HxW] [--repeats N]
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "base/file.h"
#include "codec/codec.h"
#include "format/arrow/compression.h"
#include "imaging/donut.h"
#include "pack/image_folder.h"
#include "preset/preset.h"

namespace docfeed::internal {
namespace {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<uint8_t>;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One storage candidate: `encode` turns resized pixels into the stored body buffer (with the
// Arrow compression framing when compressed); `decode` gets pixels back and returns their count.
struct Candidate {
  std::string name;
  std::function<Result<Bytes>(const Image&)> encode;
  std::function<Result<size_t>(const Bytes&, Bytes* scratch)> decode;
};

Result<Bytes> Frame(arrow::CompressionCodec codec, const Bytes& raw) {
  Bytes out;
  DOCFEED_RETURN_IF_ERROR(arrow::CompressBuffer(codec, raw, &out));
  return out;
}

// Arrow's framing (int64 length + one zstd frame) at a chosen level; the writer uses level 1.
Result<Bytes> FrameZstdLevel(const Bytes& raw, int level) {
  Bytes out(8 + ZSTD_compressBound(raw.size()));
  const size_t n = ZSTD_compress(out.data() + 8, out.size() - 8, raw.data(), raw.size(), level);
  if (ZSTD_isError(n)) return InternalError(ZSTD_getErrorName(n));
  const auto declared = static_cast<int64_t>(raw.size());
  std::memcpy(out.data(), &declared, 8);
  out.resize(8 + n);
  return out;
}

Result<size_t> ViewPixels(std::span<const uint8_t> ppm) {
  DOCFEED_ASSIGN_OR_RETURN(ImageView view, ViewPpm(ppm));
  return static_cast<size_t>(view.width) * static_cast<size_t>(view.height) *
         static_cast<size_t>(view.channels);
}

Result<size_t> DecodePixels(std::span<const uint8_t> bytes) {
  DOCFEED_ASSIGN_OR_RETURN(Image image, DecodeImage(bytes));
  return image.pixels.size();
}

Result<Bytes> Ppm(const Image& image) { return EncodePpm(ViewOf(image)); }

std::vector<Candidate> Candidates() {
  using arrow::CompressionCodec;
  auto decompress_then_view = [](CompressionCodec codec) {
    return [codec](const Bytes& stored, Bytes* scratch) -> Result<size_t> {
      DOCFEED_ASSIGN_OR_RETURN(std::span<const uint8_t> ppm,
                               arrow::DecompressBuffer(codec, stored, scratch));
      return ViewPixels(ppm);
    };
  };
  auto zstd_level = [](int level) {
    return [level](const Image& image) -> Result<Bytes> {
      DOCFEED_ASSIGN_OR_RETURN(Bytes ppm, Ppm(image));
      return FrameZstdLevel(ppm, level);
    };
  };
  std::vector<Candidate> c;
  c.push_back({"png (level 6), uncompressed body",
               [](const Image& image) { return EncodePng(image, 6); },
               [](const Bytes& stored, Bytes*) { return DecodePixels(stored); }});
  c.push_back({"webp lossless, uncompressed body", EncodeWebpLossless,
               [](const Bytes& stored, Bytes*) { return DecodePixels(stored); }});
  c.push_back({"ppm, uncompressed body (view)", Ppm,
               [](const Bytes& stored, Bytes*) { return ViewPixels(stored); }});
  c.push_back({"ppm, uncompressed body (DecodeImage copy)", Ppm,
               [](const Bytes& stored, Bytes*) { return DecodePixels(stored); }});
  c.push_back({"ppm + lz4_frame body",
               [](const Image& image) -> Result<Bytes> {
                 DOCFEED_ASSIGN_OR_RETURN(Bytes ppm, Ppm(image));
                 return Frame(CompressionCodec::kLz4Frame, ppm);
               },
               decompress_then_view(CompressionCodec::kLz4Frame)});
  for (int level : {1, 3, 9, 19}) {
    c.push_back({"ppm + zstd body, level " + std::to_string(level) +
                     (level == 1 ? " (docfeed's writer)" : ""),
                 zstd_level(level), decompress_then_view(CompressionCodec::kZstd)});
  }
  return c;
}

struct Page {
  Image resized;
};

Result<std::vector<Page>> LoadPages(const std::string& src, const DonutConfig& config,
                                    double* preprocess_ms) {
  DOCFEED_ASSIGN_OR_RETURN(ImageFolder folder, ScanImageFolder(src));
  PresetParams params;
  params.donut = config;
  DOCFEED_ASSIGN_OR_RETURN(const std::unique_ptr<const Preset> preset, MakePreset(params));
  std::vector<Page> pages;
  double total_s = 0;
  for (const SourceSample& s : folder.samples) {
    DOCFEED_ASSIGN_OR_RETURN(Bytes bytes, ReadFile(JoinPath(folder.root, s.relative_path)));
    const auto start = Clock::now();
    DOCFEED_ASSIGN_OR_RETURN(ImageInfo info, ProbeImage(bytes));
    PrepareRequest request;
    request.orientation = info.exif_orientation;
    Image resized;
    DOCFEED_RETURN_IF_ERROR(preset->Prepare(bytes, request, &resized));
    total_s += Seconds(start);
    pages.push_back({std::move(resized)});
  }
  if (pages.empty()) return InvalidArgumentError(src + " holds no images");
  *preprocess_ms = total_s * 1e3 / static_cast<double>(pages.size());
  return pages;
}

struct Row {
  std::string name;
  double kb_per_page = 0;
  double encode_ms = 0;
  double decode_ms = 0;
};

Result<Row> Measure(const Candidate& c, const std::vector<Page>& pages, int repeats) {
  std::vector<Bytes> stored;
  std::vector<double> encode_runs, decode_runs;
  for (int r = 0; r < repeats; ++r) {
    stored.clear();
    const auto start = Clock::now();
    for (const Page& p : pages) {
      DOCFEED_ASSIGN_OR_RETURN(Bytes b, c.encode(p.resized));
      stored.push_back(std::move(b));
    }
    encode_runs.push_back(Seconds(start));
  }
  Bytes scratch;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    for (size_t i = 0; i < pages.size(); ++i) {
      DOCFEED_ASSIGN_OR_RETURN(size_t n, c.decode(stored[i], &scratch));
      // Sanity: every candidate must give back all the pixels (WebP may widen gray to RGB).
      if (n < pages[i].resized.pixels.size()) return InternalError(c.name + ": short decode");
    }
    decode_runs.push_back(Seconds(start));
  }
  Row row;
  row.name = c.name;
  double total_bytes = 0;
  for (const Bytes& b : stored) total_bytes += static_cast<double>(b.size());
  const auto n = static_cast<double>(pages.size());
  row.kb_per_page = total_bytes / n / 1e3;
  row.encode_ms = Median(encode_runs) * 1e3 / n;
  row.decode_ms = Median(decode_runs) * 1e3 / n;
  return row;
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: preprocessed_storage SRC [--size HxW] [--repeats N]\n");
    return 2;
  }
  DonutConfig config;
  config.height = 1553;
  config.width = 1200;
  int repeats = 3;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--size") == 0) {
      std::sscanf(argv[i + 1], "%dx%d", &config.height, &config.width);
    } else if (std::strcmp(argv[i], "--repeats") == 0) {
      repeats = std::max(1, std::atoi(argv[i + 1]));
    }
  }
  double preprocess_ms = 0;
  Result<std::vector<Page>> pages = LoadPages(argv[1], config, &preprocess_ms);
  if (!pages.ok()) {
    std::fprintf(stderr, "%s\n", pages.status().ToString().c_str());
    return 1;
  }
  double raw_kb = 0;
  for (const Page& p : *pages) raw_kb += static_cast<double>(p.resized.pixels.size()) / 1e3;
  std::printf(
      "%zu pages resized to fit %dx%d (HxW); raw pixels %.1f KB/page; decode + resize "
      "(paid once at pack time) %.1f ms/page; %d repeats, median\n\n",
      pages->size(), config.height, config.width, raw_kb / static_cast<double>(pages->size()),
      preprocess_ms, repeats);
  std::printf(
      "| stored as | KB/page | size vs png | encode ms/page | decode ms/page | decode vs png |\n"
      "|---|---:|---:|---:|---:|---:|\n");
  std::vector<Row> rows;
  for (const Candidate& c : Candidates()) {
    Result<Row> row = Measure(c, *pages, repeats);
    if (!row.ok()) {
      std::fprintf(stderr, "%s: %s\n", c.name.c_str(), row.status().ToString().c_str());
      return 1;
    }
    rows.push_back(*row);
    const Row& base = rows.front();
    std::printf("| %s | %.1f | %.2fx | %.2f | %.3f | %.3fx |\n", row->name.c_str(),
                row->kb_per_page, row->kb_per_page / base.kb_per_page, row->encode_ms,
                row->decode_ms, row->decode_ms / base.decode_ms);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace docfeed::internal

int main(int argc, char** argv) { return docfeed::internal::Main(argc, argv); }
