// docfeed's PDF reader: the page count, each page's size and each page rendered to 8-bit RGB, of
// a PDF held in memory, through poppler's core API (PDFDoc, SplashOutputDev) called as pdftoppm
// calls it, so a rendered page is byte-identical to `pdftoppm -r DPI` of the same poppler.
// src/pdf/README.md says what was verified and what is refused.
//
// Thread safety: one PdfDocument is used by one thread at a time (RenderPage is not const: it
// keeps the document's rendering device, see there); different PdfDocuments, even of the same
// bytes, may be used on different threads at once. Opening, rendering and closing are serialized
// process-wide (one mutex, which also guards each document's device): ThreadSanitizer found two
// threads rendering at once racing inside liblcms2 (cmsMLUfree), which poppler's colour management
// calls, so poppler's own notes on threaded rendering were not enough here. poppler's messages
// never reach stderr: its one error callback, installed with the global parameters, hands them to
// the calling thread.
#ifndef DOCFEED_PDF_PDF_DOCUMENT_H_
#define DOCFEED_PDF_PDF_DOCUMENT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "codec/codec.h"
#include "docfeed/status.h"

namespace docfeed::internal {

// The dpi range RenderPage accepts (pdftoppm accepts any positive value; past 2400 dpi an A4
// page is over 500 megapixels, far past DecodeLimits' default).
inline constexpr int32_t kMinPdfDpi = 1;
inline constexpr int32_t kMaxPdfDpi = 2400;

// True when `bytes` start with the PDF header "%PDF-" (ISO 32000-1, 7.5.2).
bool IsPdf(std::span<const uint8_t> bytes);

// The renderer and its version, e.g. "poppler 22.12.0" (recorded in a pack's manifest).
std::string PdfRendererName();

// A page's geometry as the PDF states it: the MediaBox (what pdftoppm renders without -cropbox) in
// points (1/72 inch), and the page's /Rotate.
struct PdfPageGeometry {
  double width_pt = 0;
  double height_pt = 0;
  int32_t rotation_degrees = 0;  // 0, 90, 180 or 270
};

// The pixel size of a page rendered at a dpi (after /Rotate).
struct PdfPixelSize {
  int32_t width = 0;
  int32_t height = 0;
};

// An open PDF document. Not copyable; see the file comment for thread safety.
class PdfDocument {
 public:
  // Opens the PDF in `bytes`, which poppler reads in place.
  // REQUIRES: `bytes` outlive the returned document.
  // Errors: InvalidArgument for empty input; Unsupported for data without the "%PDF-" header and
  // for an encrypted PDF that needs a password to open; ResourceExhausted when the input exceeds
  // limits.max_input_bytes; Corruption when poppler cannot open it (the message quotes poppler's
  // first complaint) or it has no pages.
  static Result<std::unique_ptr<PdfDocument>> Open(std::span<const uint8_t> bytes,
                                                   const DecodeLimits& limits = {});

  PdfDocument(const PdfDocument&) = delete;
  PdfDocument& operator=(const PdfDocument&) = delete;
  ~PdfDocument();

  // At least 1.
  int32_t page_count() const;

  // Page `index` (0-based). Errors: Corruption for a page poppler cannot read.
  // REQUIRES: 0 <= index < page_count().
  Result<PdfPageGeometry> PageGeometry(int32_t index) const;

  // The size RenderPage gives page `index` at `dpi`, computed as pdftoppm does:
  // ceil(side_pt * dpi / 72) for each side, the sides swapped for /Rotate 90 and 270.
  // Errors: InvalidArgument for a dpi outside [kMinPdfDpi, kMaxPdfDpi]; Corruption for an
  // unreadable page, a side that is not a positive finite number or a zero pixel size;
  // ResourceExhausted when width * height exceeds `limits.max_pixels`.
  // REQUIRES: 0 <= index < page_count().
  Result<PdfPixelSize> RenderedSize(int32_t index, int32_t dpi,
                                    const DecodeLimits& limits = {}) const;

  // Renders page `index` at `dpi` to 8-bit RGB (3 channels, rows top to bottom, no padding): the
  // raster `pdftoppm -r DPI` writes to its PPM. Antialiased text and vector graphics, no font
  // hinting, white paper: pdftoppm's defaults. The pixel limit is checked from the page size
  // before anything is rendered.
  // The first call makes the document's rendering device and later calls reuse it, as pdftoppm
  // uses one device for all the pages it writes: fonts and their glyphs rasterized for one page
  // serve the next, and the device's bitmap (one page's pixels) stays allocated for the next page
  // of the same size until the document is destroyed. The pixels do not depend on which pages
  // were rendered before (tests/pdf).
  // Errors: those of RenderedSize; Corruption when poppler reports a syntax error, I/O error,
  // unimplemented feature or internal error while drawing the page (it may be incomplete; the
  // message quotes poppler; its warnings are ignored) or returns no bitmap.
  // REQUIRES: 0 <= index < page_count().
  Result<Image> RenderPage(int32_t index, int32_t dpi, const DecodeLimits& limits = {});

 private:
  struct Impl;
  explicit PdfDocument(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One row of a rendered page merged with white paper, exactly as poppler's
// Splash::compositeBackground merges an RGB8 bitmap with paper (255, 255, 255): `width` pixels of
// `rgb` (3 bytes each) under their `alpha` (1 byte each) into `out` (3 bytes each). RenderPage
// uses it; it is declared here so that tests can compare it with poppler's own function.
void CompositeRowOnWhite(const uint8_t* rgb, const uint8_t* alpha, size_t width, uint8_t* out);

}  // namespace docfeed::internal

#endif  // DOCFEED_PDF_PDF_DOCUMENT_H_
