// pdf_render_bench: renders every page of a PDF with PdfDocument on one thread, ROUNDS times, and
// prints one JSON line: pages rendered, wall seconds and this process's CPU seconds. With
// --png it also encodes each page as `docfeed pack` stores it (PNG, zlib level 6, or
// --png-level N), and reports the PNG bytes.
// bench/pdf/pdf_vs_pdftoppm.py runs it next to `pdftoppm -r DPI` on the same file.
//
// usage: pdf_render_bench FILE.pdf [--dpi 200] [--rounds 3] [--png] [--png-level 6]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "base/file.h"
#include "codec/codec.h"
#include "pdf/pdf_document.h"

namespace docfeed::internal {
namespace {

// The process's CPU time (std::clock: user + system, every thread, on Linux).
double CpuSeconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

int Run(const std::string& path, int dpi, int rounds, int png_level) {
  Result<std::vector<uint8_t>> bytes = ReadFile(path);
  if (!bytes.ok()) {
    std::fprintf(stderr, "%s\n", bytes.status().ToString().c_str());
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = CpuSeconds();
  uint64_t pages = 0;
  uint64_t checksum = 0;
  uint64_t png_bytes = 0;
  for (int r = 0; r < rounds; ++r) {
    Result<std::unique_ptr<PdfDocument>> doc = PdfDocument::Open(*bytes);  // as pdftoppm: once
    if (!doc.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), doc.status().ToString().c_str());
      return 1;
    }
    for (int32_t i = 0; i < (*doc)->page_count(); ++i) {
      Result<Image> page = (*doc)->RenderPage(i, dpi);
      if (!page.ok()) {
        std::fprintf(stderr, "page %d: %s\n", i + 1, page.status().ToString().c_str());
        return 1;
      }
      checksum += page->pixels[page->pixels.size() / 2];
      if (png_level >= 0) png_bytes += EncodePng(*page, png_level)->size();
      ++pages;
    }
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "{\"pages\": %llu, \"wall_s\": %.4f, \"cpu_s\": %.4f, \"png_bytes\": %llu, "
      "\"checksum\": %llu}\n",
      static_cast<unsigned long long>(pages), wall, CpuSeconds() - cpu_start,
      static_cast<unsigned long long>(png_bytes), static_cast<unsigned long long>(checksum));
  return 0;
}

}  // namespace
}  // namespace docfeed::internal

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: pdf_render_bench FILE.pdf [--dpi 200] [--rounds 3] [--png] "
                 "[--png-level N]\n");
    return 2;
  }
  int dpi = 200;
  int rounds = 3;
  int png_level = -1;  // no PNG
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--dpi") == 0 && i + 1 < argc) {
      dpi = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--png") == 0) {
      png_level = 6;
    } else if (std::strcmp(argv[i], "--png-level") == 0 && i + 1 < argc) {
      png_level = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  return docfeed::internal::Run(argv[1], dpi, rounds, png_level);
}
