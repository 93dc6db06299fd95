#include "pdf/pdf_document.h"

#include <GlobalParams.h>
#include <PDFDoc.h>
#include <Page.h>
#include <SplashOutputDev.h>
#include <Stream.h>
#include <poppler-config.h>
#include <splash/SplashBitmap.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/check.h"

#if defined(__SANITIZE_ADDRESS__)
#define DOCFEED_PDF_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DOCFEED_PDF_ASAN 1
#endif
#endif

#ifdef DOCFEED_PDF_ASAN
// fontconfig allocates part of its configuration once per process, the first time poppler looks
// up a substitute for a font a PDF does not embed, and keeps it where LeakSanitizer cannot see
// it: 288 bytes after one document or after a thousand (measured), so not a per-document leak.
// Without this every sanitized program that renders such a page would fail at exit.
// Weak: the same hook is defined wherever fontconfig may be used (the CLI, the synth test, the
// PDF reader), and a program that links several of them takes one.
extern "C" __attribute__((weak)) const char* __lsan_default_suppressions() {
  return "leak:libfontconfig.so\n";
}
#endif

namespace docfeed::internal {
namespace {

// Serializes poppler (see pdf_document.h, "Thread safety"). Recursive: a document closed on an
// error path of Open is closed under the lock Open holds.
std::recursive_mutex& PopplerMutex() {
  static std::recursive_mutex mu;
  return mu;
}

// Enough to quote the first complaint; the rest are only counted.
constexpr size_t kKeptMessages = 4;

struct Collected {
  std::vector<std::string> first;  // of the messages that count (Damaging)
  size_t count = 0;
};

// The messages poppler reports on this thread while a MessageScope is alive. poppler calls its
// error callback synchronously on the thread that hit the problem, so a thread_local collector
// keeps concurrent documents apart without a lock.
thread_local Collected* t_collected = nullptr;

// poppler's categories (Error.h): a syntax warning means "output will probably be correct"; a
// syntax error "output will probably be incorrect", an unimplemented feature "display will be
// incorrect". Configuration, permission and command-line messages say nothing about the pixels.
bool Damaging(ErrorCategory category) {
  return category == errSyntaxError || category == errIO || category == errUnimplemented ||
         category == errInternal;
}

const char* CategoryName(ErrorCategory category) {
  switch (category) {
    case errSyntaxError:
      return "syntax error";
    case errIO:
      return "I/O error";
    case errUnimplemented:
      return "unimplemented feature";
    case errInternal:
      return "internal error";
    default:
      return "message";
  }
}

// The error callback poppler gets (through GlobalParamsIniter, below): nothing is printed.
void CollectMessage(ErrorCategory category, Goffset pos, const char* message) {
  if (t_collected == nullptr || !Damaging(category)) return;
  if (t_collected->first.size() < kKeptMessages) {
    std::string text = std::string(CategoryName(category)) +
                       (pos >= 0 ? " at byte " + std::to_string(pos) : std::string()) + ": " +
                       (message == nullptr ? "" : message);
    t_collected->first.push_back(std::move(text));
  }
  ++t_collected->count;
}

// Collects poppler's damaging messages on this thread for its lifetime (scopes nest).
class MessageScope {
 public:
  MessageScope() : previous_(t_collected) { t_collected = &collected_; }
  ~MessageScope() { t_collected = previous_; }
  MessageScope(const MessageScope&) = delete;
  MessageScope& operator=(const MessageScope&) = delete;

  bool empty() const { return collected_.count == 0; }
  // "poppler: <first message>" plus how many more there were.
  std::string Quote() const {
    if (collected_.first.empty()) return "poppler gave no reason";
    std::string text = "poppler: " + collected_.first.front();
    if (collected_.count > 1) {
      text += " (and " + std::to_string(collected_.count - 1) + " more)";
    }
    return text;
  }

 private:
  Collected collected_;
  Collected* previous_;
};

std::string PageName(int32_t index) { return "page " + std::to_string(index + 1); }

}  // namespace

bool IsPdf(std::span<const uint8_t> bytes) {
  constexpr char kHeader[] = "%PDF-";
  return bytes.size() >= sizeof(kHeader) - 1 &&
         std::memcmp(bytes.data(), kHeader, sizeof(kHeader) - 1) == 0;
}

std::string PdfRendererName() { return std::string("poppler ") + POPPLER_VERSION; }

namespace {

// pdftoppm's device, except that the page is left unmerged with the paper at its end:
// SplashOutputDev::endPage does nothing but Splash::compositeBackground (poppler 22.12), a pass
// over the whole bitmap that CopyRgb makes while it copies the rows out (CompositeRowOnWhite), so
// each pixel is read and written once instead of twice. The bitmap is cleared to the paper colour
// with alpha 0 at startPage either way, so everything drawn is the same.
class UnmergedSplashOutputDev final : public SplashOutputDev {
 public:
  using SplashOutputDev::SplashOutputDev;
  void endPage() override {}
};

}  // namespace

struct PdfDocument::Impl {
  // poppler's global parameters exist while any document does; the first one in the process
  // also installs CollectMessage (under poppler's lock), before the document is parsed.
  GlobalParamsIniter global_params{&CollectMessage};
  std::unique_ptr<PDFDoc> document;
  int32_t page_count = 0;
  // The device every RenderPage draws with, made by the first one (see pdf_document.h); declared
  // after `document` so that it goes first. Used only under PopplerMutex().
  std::unique_ptr<SplashOutputDev> device;

  // The device, made on first use with pdftoppm's settings (utils/pdftoppm.cc, poppler 22.12): an
  // RGB8 Splash device on white paper with font and vector antialiasing (its -aa yes -aaVector
  // yes defaults), FreeType on without hinting, and startDoc once for the document; the page is
  // merged with the paper by CopyRgb (UnmergedSplashOutputDev).
  // REQUIRES: PopplerMutex() held.
  SplashOutputDev* Device() {
    if (device == nullptr) {
      SplashColor paper;
      paper[0] = paper[1] = paper[2] = 255;
      auto made = std::make_unique<UnmergedSplashOutputDev>(splashModeRGB8, 4, false, paper, true,
                                                            splashThinLineDefault, false);
      made->setFontAntialias(true);
      made->setVectorAntialias(true);
      made->setEnableFreeType(true);
      made->startDoc(document.get());
      device = std::move(made);
    }
    return device.get();
  }

  // Page `index` (0-based), or Corruption. poppler's messages go to the caller's scope.
  Result<::Page*> GetPage(int32_t index) const {
    DOCFEED_CHECK(index >= 0 && index < page_count);
    ::Page* page = document->getPage(index + 1);
    if (page == nullptr) return CorruptionError(PageName(index) + " cannot be read");
    return page;
  }
};

PdfDocument::PdfDocument(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PdfDocument::~PdfDocument() {
  std::lock_guard<std::recursive_mutex> lock(PopplerMutex());
  MessageScope quiet;  // what poppler says while closing is of no use to anyone
  impl_.reset();
}

int32_t PdfDocument::page_count() const { return impl_->page_count; }

Result<std::unique_ptr<PdfDocument>> PdfDocument::Open(std::span<const uint8_t> bytes,
                                                       const DecodeLimits& limits) {
  if (bytes.empty()) return InvalidArgumentError("empty PDF data");
  if (!IsPdf(bytes)) return UnsupportedError("not a PDF (no %PDF- header)");
  std::lock_guard<std::recursive_mutex> lock(PopplerMutex());
  if (bytes.size() > limits.max_input_bytes || bytes.size() > static_cast<size_t>(INT_MAX)) {
    return ResourceExhaustedError("PDF of " + std::to_string(bytes.size()) +
                                  " bytes exceeds the limit of " +
                                  std::to_string(limits.max_input_bytes) + " bytes");
  }
  MessageScope messages;
  auto impl = std::make_unique<Impl>();
  try {
    // The stream reads `bytes` in place; PDFDoc owns the stream object, not the bytes.
    auto* stream = new MemStream(reinterpret_cast<const char*>(bytes.data()), 0,
                                 static_cast<Goffset>(bytes.size()), Object(objNull));
    impl->document = std::make_unique<PDFDoc>(stream);
    if (!impl->document->isOk()) {
      if (impl->document->getErrorCode() == errEncrypted) {
        return UnsupportedError("PDF is encrypted and needs a password to open");
      }
      return CorruptionError("PDF cannot be opened (" + messages.Quote() + ")");
    }
    impl->page_count = impl->document->getNumPages();
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("out of memory opening the PDF");
  } catch (const std::exception& e) {
    return InternalError(std::string("poppler failed while opening the PDF: ") + e.what());
  }
  if (impl->page_count <= 0) return CorruptionError("PDF has no pages (" + messages.Quote() + ")");
  return std::unique_ptr<PdfDocument>(new PdfDocument(std::move(impl)));
}

Result<PdfPageGeometry> PdfDocument::PageGeometry(int32_t index) const {
  MessageScope messages;
  DOCFEED_ASSIGN_OR_RETURN(::Page * page, impl_->GetPage(index));
  PdfPageGeometry geometry;
  geometry.width_pt = page->getMediaWidth();
  geometry.height_pt = page->getMediaHeight();
  geometry.rotation_degrees = page->getRotate();
  return geometry;
}

namespace {

// ceil(side_pt * dpi / 72) as pdftoppm computes it (double arithmetic, this order), or an error
// naming `side` for a side no bitmap can have.
Result<int64_t> PixelSide(double side_pt, int32_t dpi, const char* side) {
  const double pixels = side_pt * static_cast<double>(dpi) / 72.0;
  if (!std::isfinite(pixels) || pixels <= 0) {
    return CorruptionError(std::string("page ") + side + " of " + std::to_string(side_pt) +
                           " points is not a positive size");
  }
  if (pixels > static_cast<double>(INT32_MAX)) {
    return ResourceExhaustedError(std::string("page ") + side + " of " + std::to_string(side_pt) +
                                  " points at " + std::to_string(dpi) + " dpi exceeds 2^31 pixels");
  }
  return static_cast<int64_t>(std::ceil(pixels));
}

}  // namespace

Result<PdfPixelSize> PdfDocument::RenderedSize(int32_t index, int32_t dpi,
                                               const DecodeLimits& limits) const {
  if (dpi < kMinPdfDpi || dpi > kMaxPdfDpi) {
    return InvalidArgumentError("dpi " + std::to_string(dpi) + " is outside " +
                                std::to_string(kMinPdfDpi) + ".." + std::to_string(kMaxPdfDpi));
  }
  DOCFEED_ASSIGN_OR_RETURN(PdfPageGeometry geometry, PageGeometry(index));
  DOCFEED_ASSIGN_OR_RETURN(int64_t width, PixelSide(geometry.width_pt, dpi, "width"));
  DOCFEED_ASSIGN_OR_RETURN(int64_t height, PixelSide(geometry.height_pt, dpi, "height"));
  if (geometry.rotation_degrees == 90 || geometry.rotation_degrees == 270) {
    std::swap(width, height);
  }
  // Both sides are below 2^31, so the product fits in 64 bits.
  if (static_cast<uint64_t>(width) * static_cast<uint64_t>(height) > limits.max_pixels) {
    return ResourceExhaustedError(
        PageName(index) + " at " + std::to_string(dpi) + " dpi is " + std::to_string(width) + "x" +
        std::to_string(height) + " pixels, over the limit of " + std::to_string(limits.max_pixels) +
        " pixels (possible decompression bomb)");
  }
  return PdfPixelSize{static_cast<int32_t>(width), static_cast<int32_t>(height)};
}

namespace {

// The bitmap merged with white paper (what pdftoppm's device does at endPage) as tightly packed
// RGB rows, or Corruption when it is not the expected size. The page's memory is reserved once and
// grown a row at a time, each row merged in place while its zero fill is in the cache (resizing
// the whole page first would write all of its memory twice).
Result<Image> CopyRgb(SplashBitmap* bitmap, const PdfPixelSize& size) {
  if (bitmap == nullptr || bitmap->getMode() != splashModeRGB8 || bitmap->getDataPtr() == nullptr ||
      bitmap->getAlphaPtr() == nullptr || bitmap->getWidth() != size.width ||
      bitmap->getHeight() != size.height || bitmap->getRowSize() < size.width * 3) {
    return CorruptionError("poppler rendered no image of the expected " +
                           std::to_string(size.width) + "x" + std::to_string(size.height) +
                           " pixels");
  }
  Image image;
  image.width = size.width;
  image.height = size.height;
  image.channels = 3;
  const size_t row_bytes = image.stride_bytes();
  const auto width = static_cast<size_t>(size.width);
  const auto rows = static_cast<size_t>(size.height);
  image.pixels.reserve(row_bytes * rows);
  const unsigned char* source = bitmap->getDataPtr();
  const auto source_stride = static_cast<size_t>(bitmap->getRowSize());
  const unsigned char* alpha = bitmap->getAlphaPtr();  // one byte per pixel, rows of `width`
  for (size_t y = 0; y < rows; ++y) {
    // Grown a row at a time: the row's zero fill is in the cache when the merge overwrites it.
    image.pixels.resize(image.pixels.size() + row_bytes);
    CompositeRowOnWhite(source + y * source_stride, alpha + y * width, width,
                        image.pixels.data() + y * row_bytes);
  }
  return image;
}

}  // namespace

Result<Image> PdfDocument::RenderPage(int32_t index, int32_t dpi, const DecodeLimits& limits) {
  DOCFEED_ASSIGN_OR_RETURN(PdfPixelSize size, RenderedSize(index, dpi, limits));
  std::lock_guard<std::recursive_mutex> lock(PopplerMutex());
  MessageScope messages;
  try {
    // pdftoppm's call: the slice (0, 0, ceil(w), ceil(h)) of the MediaBox (useMediaBox, no crop
    // clip), drawn with the document's own cross-reference table (copyXRef off, as in pdftoppm:
    // renders are serialized, so no other thread reads it meanwhile).
    SplashOutputDev* device = impl_->Device();
    impl_->document->displayPageSlice(device, index + 1, dpi, dpi, 0, /*useMediaBox=*/true,
                                      /*crop=*/false, /*printing=*/false, 0, 0, size.width,
                                      size.height);
    if (!messages.empty()) {
      return CorruptionError(PageName(index) + " is damaged (" + messages.Quote() + ")");
    }
    return CopyRgb(device->getBitmap(), size);
  } catch (const std::bad_alloc&) {
    impl_->device.reset();  // it stopped mid-page; the next page starts from a new one
    return ResourceExhaustedError("out of memory rendering " + PageName(index));
  } catch (const std::exception& e) {
    impl_->device.reset();
    return InternalError("poppler failed rendering " + PageName(index) + ": " + e.what());
  }
}

}  // namespace docfeed::internal
