// libFuzzer target: PdfDocument (src/pdf) on arbitrary bytes behind a "%PDF-" header: open,
// page count, every page's geometry and pixel size, and a render of the first pages at a low dpi
// under a small pixel limit. Any crash, sanitizer report or broken invariant is a bug: in
// docfeed's wrapper, or in poppler (the system library, not instrumented, so only its crashes
// and hangs surface). Build and run: tests/fuzz/run_pdf_fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "pdf/pdf_document.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace docfeed::internal;
  using docfeed::Result;
  const std::span<const uint8_t> bytes(data, size);
  DecodeLimits limits;
  limits.max_pixels = 1 << 18;  // a page's worth at a low dpi; the fuzzer's time goes to parsing
  Result<std::unique_ptr<PdfDocument>> doc = PdfDocument::Open(bytes, limits);
  if (!doc.ok()) {
    // Opening succeeds or fails cleanly; data without the header never reaches poppler.
    if (!IsPdf(bytes) && doc.status().code() == docfeed::StatusCode::kCorruption) std::abort();
    return 0;
  }
  if ((*doc)->page_count() < 1) std::abort();
  const int32_t pages = (*doc)->page_count() < 4 ? (*doc)->page_count() : 4;
  for (int32_t i = 0; i < pages; ++i) {
    const Result<PdfPageGeometry> geometry = (*doc)->PageGeometry(i);
    const Result<PdfPixelSize> size = (*doc)->RenderedSize(i, 9, limits);
    if (!size.ok()) continue;
    if (!geometry.ok() || size->width < 1 || size->height < 1 ||
        static_cast<uint64_t>(size->width) * static_cast<uint64_t>(size->height) >
            limits.max_pixels) {
      std::abort();
    }
    const Result<Image> page = (*doc)->RenderPage(i, 9, limits);
    if (!page.ok()) continue;
    // A rendered page is exactly the size announced, tightly packed RGB.
    if (page->width != size->width || page->height != size->height || page->channels != 3 ||
        page->pixels.size() !=
            static_cast<size_t>(page->width) * 3 * static_cast<size_t>(page->height)) {
      std::abort();
    }
  }
  return 0;
}
