#include "pdf/pdf_document.h"

#include <poppler-document.h>
#include <poppler-global.h>
#include <poppler-image.h>
#include <poppler-page-renderer.h>
#include <poppler-page.h>
#include <poppler-version.h>

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
extern "C" const char* __lsan_default_suppressions() { return "leak:libfontconfig.so\n"; }
#endif

namespace docfeed::internal {
namespace {

// Enough to quote the first complaint; the rest are only counted.
constexpr size_t kKeptMessages = 4;

struct Collected {
  std::vector<std::string> first;
  size_t count = 0;
};

// The messages poppler reports on this thread while a MessageScope is alive. poppler calls its
// error callback synchronously on the thread that hit the problem, so a thread_local collector
// keeps concurrent documents apart without a lock.
thread_local Collected* t_collected = nullptr;

void CollectMessage(const std::string& message, void* /*closure*/) {
  if (t_collected == nullptr) return;  // outside a docfeed call: dropped, never printed
  if (t_collected->first.size() < kKeptMessages) t_collected->first.push_back(message);
  ++t_collected->count;
}

// poppler-cpp prints to stderr unless given a function. The function is a process-wide setting
// read without a lock, so it is written once, before this process opens its first document.
void RoutePopplerMessages() {
  static std::once_flag once;
  std::call_once(once, [] { poppler::set_debug_error_function(&CollectMessage, nullptr); });
}

// Collects poppler's messages on this thread for its lifetime (scopes nest).
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
      text += " (and " + std::to_string(collected_.count - 1) + " more message(s))";
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

std::string PdfRendererName() { return "poppler " + poppler::version_string(); }

struct PdfDocument::Impl {
  std::unique_ptr<poppler::document> document;
  int32_t page_count = 0;

  // The page, or Corruption. poppler's messages go to the caller's scope.
  Result<std::unique_ptr<poppler::page>> Page(int32_t index) const {
    DOCFEED_CHECK(index >= 0 && index < page_count);
    std::unique_ptr<poppler::page> page(document->create_page(index));
    if (page == nullptr) return CorruptionError(PageName(index) + " cannot be read");
    return page;
  }
};

PdfDocument::PdfDocument(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PdfDocument::~PdfDocument() {
  MessageScope quiet;  // what poppler says while closing is of no use to anyone
  impl_.reset();
}

int32_t PdfDocument::page_count() const { return impl_->page_count; }

Result<std::unique_ptr<PdfDocument>> PdfDocument::Open(std::span<const uint8_t> bytes,
                                                       const DecodeLimits& limits) {
  if (bytes.empty()) return InvalidArgumentError("empty PDF data");
  if (!IsPdf(bytes)) return UnsupportedError("not a PDF (no %PDF- header)");
  if (bytes.size() > limits.max_input_bytes || bytes.size() > static_cast<size_t>(INT_MAX)) {
    return ResourceExhaustedError("PDF of " + std::to_string(bytes.size()) +
                                  " bytes exceeds the limit of " +
                                  std::to_string(limits.max_input_bytes) + " bytes");
  }
  RoutePopplerMessages();
  MessageScope messages;
  auto impl = std::make_unique<Impl>();
  try {
    impl->document.reset(poppler::document::load_from_raw_data(
        reinterpret_cast<const char*>(bytes.data()), static_cast<int>(bytes.size())));
    if (impl->document == nullptr) {
      return CorruptionError("PDF cannot be opened (" + messages.Quote() + ")");
    }
    if (impl->document->is_locked()) {
      return UnsupportedError("PDF is encrypted and needs a password to open");
    }
    impl->page_count = impl->document->pages();
  } catch (const std::exception& e) {
    return InternalError(std::string("poppler failed while opening the PDF: ") + e.what());
  }
  if (impl->page_count <= 0) return CorruptionError("PDF has no pages (" + messages.Quote() + ")");
  return std::unique_ptr<PdfDocument>(new PdfDocument(std::move(impl)));
}

Result<PdfPageGeometry> PdfDocument::PageGeometry(int32_t index) const {
  MessageScope messages;
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<poppler::page> page, impl_->Page(index));
  const poppler::rectf box = page->page_rect(poppler::crop_box);
  PdfPageGeometry geometry;
  geometry.width_pt = box.width();
  geometry.height_pt = box.height();
  switch (page->orientation()) {
    case poppler::page::landscape:
      geometry.rotation_degrees = 90;
      break;
    case poppler::page::upside_down:
      geometry.rotation_degrees = 180;
      break;
    case poppler::page::seascape:
      geometry.rotation_degrees = 270;
      break;
    case poppler::page::portrait:
      break;
  }
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

// The poppler image as tightly packed RGB rows, or Corruption when it is not the expected size.
Result<Image> CopyRgb(const poppler::image& rendered, const PdfPixelSize& size) {
  if (!rendered.is_valid() || rendered.format() != poppler::image::format_rgb24 ||
      rendered.width() != size.width || rendered.height() != size.height) {
    return CorruptionError("poppler rendered no image of the expected " +
                           std::to_string(size.width) + "x" + std::to_string(size.height) +
                           " pixels");
  }
  Image image;
  image.width = size.width;
  image.height = size.height;
  image.channels = 3;
  const size_t row_bytes = image.stride_bytes();
  image.pixels.resize(row_bytes * static_cast<size_t>(size.height));
  const char* source = rendered.const_data();
  const auto source_stride = static_cast<size_t>(rendered.bytes_per_row());
  for (size_t y = 0; y < static_cast<size_t>(size.height); ++y) {
    std::memcpy(image.pixels.data() + y * row_bytes, source + y * source_stride, row_bytes);
  }
  return image;
}

}  // namespace

Result<Image> PdfDocument::RenderPage(int32_t index, int32_t dpi,
                                      const DecodeLimits& limits) const {
  DOCFEED_ASSIGN_OR_RETURN(PdfPixelSize size, RenderedSize(index, dpi, limits));
  MessageScope messages;
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<poppler::page> page, impl_->Page(index));
  if (!poppler::page_renderer::can_render()) {
    return UnsupportedError("this poppler was built without its Splash renderer");
  }
  poppler::page_renderer renderer;
  // pdftoppm's defaults: antialiased text and vector graphics (-aa yes -aaVector yes), FreeType
  // hinting off, white paper, RGB8 (what its PPM output holds).
  renderer.set_render_hints(poppler::page_renderer::antialiasing |
                            poppler::page_renderer::text_antialiasing);
  renderer.set_image_format(poppler::image::format_rgb24);
  renderer.set_paper_color(0xffffffff);
  try {
    // The slice (0, 0, width, height) in pixels, as pdftoppm passes it: without a slice poppler
    // rounds the page size to the nearest pixel instead of pdftoppm's ceil.
    const poppler::image rendered =
        renderer.render_page(page.get(), dpi, dpi, 0, 0, size.width, size.height);
    if (!messages.empty()) {
      return CorruptionError(PageName(index) + " is damaged (" + messages.Quote() + ")");
    }
    return CopyRgb(rendered, size);
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("out of memory rendering " + PageName(index));
  } catch (const std::exception& e) {
    return InternalError("poppler failed rendering " + PageName(index) + ": " + e.what());
  }
}

}  // namespace docfeed::internal
