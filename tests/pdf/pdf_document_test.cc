// PdfDocument against the real poppler-utils: every page rendered by docfeed equals the raster of
// `pdftoppm -r DPI -ppm` of the same page byte for byte, at 72 and 200 dpi, and page counts equal
// `pdfinfo`'s. The fixtures are tests/data/pdf/ (made by make_pdfs.py).
#include "pdf/pdf_document.h"

#include <gtest/gtest.h>
#include <splash/Splash.h>
#include <splash/SplashBitmap.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/file.h"
#include "codec/codec.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::TempDir;

std::string Fixture(const std::string& name) {
  return std::string(DOCFEED_TEST_DATA_DIR) + "/pdf/" + name;
}

std::vector<uint8_t> Bytes(const std::string& name) {
  Result<std::vector<uint8_t>> bytes = ReadFile(Fixture(name));
  DOCFEED_CHECK(bytes.ok());
  return *std::move(bytes);
}

// The standard output of `command` (which must succeed).
std::string Run(const std::string& command) {
  FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
  DOCFEED_CHECK(pipe != nullptr);
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << command;
  return out;
}

// `pdfinfo FILE`'s "Pages:" value.
int PdfinfoPages(const std::string& name) {
  const std::string info = Run("pdfinfo '" + Fixture(name) + "'");
  const size_t at = info.find("Pages:");
  DOCFEED_CHECK(at != std::string::npos);
  return std::stoi(info.substr(at + 6));
}

// pdftoppm's PPM of page `page` (1-based) at `dpi`, as an Image.
Image Pdftoppm(const std::string& name, int page, int dpi) {
  TempDir dir;
  const std::string prefix = dir.Join("page");
  Run("pdftoppm -singlefile -r " + std::to_string(dpi) + " -f " + std::to_string(page) + " -l " +
      std::to_string(page) + " '" + Fixture(name) + "' '" + prefix + "'");
  Result<std::vector<uint8_t>> ppm = ReadFile(prefix + ".ppm");
  DOCFEED_CHECK(ppm.ok());
  Result<Image> image = DecodeImage(*ppm);
  DOCFEED_CHECK(image.ok());
  return *std::move(image);
}

struct Fixed {
  const char* name;
  int pages;
};

// Between them: embedded subset fonts, standard fonts substituted through fontconfig, rules, a
// translucent fill, a scaled bitmap, /Rotate 90 and 270, CropBoxes inside the MediaBox with
// drawing across their edges, sides that are no whole number of pixels with drawing up to and
// past the page's edge, owner-password encryption, a destroyed xref table.
const std::vector<Fixed>& Renderable() {
  static const std::vector<Fixed> kFixtures = {
      {"invoice.pdf", 3},      {"handmade.pdf", 3}, {"owner_only.pdf", 1},
      {"damaged_xref.pdf", 3}, {"bleed.pdf", 2},
  };
  return kFixtures;
}

TEST(PdfDocument, PageCountsMatchPdfinfo) {
  for (const Fixed& f : Renderable()) {
    const std::vector<uint8_t> bytes = Bytes(f.name);
    Result<std::unique_ptr<PdfDocument>> doc = PdfDocument::Open(bytes);
    ASSERT_TRUE(doc.ok()) << f.name << ": " << doc.status().ToString();
    EXPECT_EQ((*doc)->page_count(), PdfinfoPages(f.name)) << f.name;
    EXPECT_EQ((*doc)->page_count(), f.pages) << f.name;
  }
}

TEST(PdfDocument, EveryPageEqualsPdftoppmAt72And200Dpi) {
  for (const Fixed& f : Renderable()) {
    const std::vector<uint8_t> bytes = Bytes(f.name);
    Result<std::unique_ptr<PdfDocument>> doc = PdfDocument::Open(bytes);
    ASSERT_TRUE(doc.ok()) << f.name << ": " << doc.status().ToString();
    for (int dpi : {72, 200}) {
      for (int32_t i = 0; i < (*doc)->page_count(); ++i) {
        SCOPED_TRACE(std::string(f.name) + " page " + std::to_string(i + 1) + " at " +
                     std::to_string(dpi) + " dpi");
        Result<Image> ours = (*doc)->RenderPage(i, dpi);
        ASSERT_TRUE(ours.ok()) << ours.status().ToString();
        const Image reference = Pdftoppm(f.name, i + 1, dpi);
        ASSERT_EQ(reference.channels, 3);
        EXPECT_EQ(ours->width, reference.width);
        EXPECT_EQ(ours->height, reference.height);
        EXPECT_EQ(ours->channels, 3);
        EXPECT_TRUE(ours->pixels == reference.pixels) << "pixels differ from pdftoppm";
        Result<PdfPixelSize> size = (*doc)->RenderedSize(i, dpi);
        ASSERT_TRUE(size.ok());
        EXPECT_EQ(size->width, ours->width);
        EXPECT_EQ(size->height, ours->height);
      }
    }
  }
}

// The sizes pdftoppm gives are ceil(points * dpi / 72): A4 at 72 dpi is 596x842, not 595x842.
TEST(PdfDocument, SizesAreCeiledAndRotated) {
  const std::vector<uint8_t> invoice = Bytes("invoice.pdf");
  Result<std::unique_ptr<PdfDocument>> doc = PdfDocument::Open(invoice);
  ASSERT_TRUE(doc.ok());
  Result<PdfPixelSize> a4 = (*doc)->RenderedSize(0, 72);
  ASSERT_TRUE(a4.ok());
  EXPECT_EQ(a4->width, 596);
  EXPECT_EQ(a4->height, 842);
  const std::vector<uint8_t> handmade = Bytes("handmade.pdf");
  Result<std::unique_ptr<PdfDocument>> hand = PdfDocument::Open(handmade);
  ASSERT_TRUE(hand.ok());
  Result<PdfPageGeometry> rotated = (*hand)->PageGeometry(0);
  ASSERT_TRUE(rotated.ok());
  EXPECT_EQ(rotated->rotation_degrees, 90);
  EXPECT_EQ(rotated->width_pt, 612);
  Result<PdfPixelSize> turned = (*hand)->RenderedSize(0, 100);
  ASSERT_TRUE(turned.ok());
  EXPECT_EQ(turned->width, 1100);  // 792 pt high, on its side
  EXPECT_EQ(turned->height, 850);
  // The MediaBox, as plain pdftoppm renders it, not the smaller CropBox.
  Result<PdfPageGeometry> cropped = (*hand)->PageGeometry(1);
  ASSERT_TRUE(cropped.ok());
  EXPECT_EQ(cropped->width_pt, 600);
  EXPECT_EQ(cropped->height_pt, 800);
}

TEST(PdfDocument, EncryptedWithAPasswordIsUnsupported) {
  const std::vector<uint8_t> bytes = Bytes("encrypted.pdf");
  Result<std::unique_ptr<PdfDocument>> doc = PdfDocument::Open(bytes);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(doc.status().ToString().find("password"), std::string::npos) << doc.status().ToString();
}

TEST(PdfDocument, TruncatedAndEmptyTreesAreCorruption) {
  for (const char* name : {"truncated.pdf", "no_pages.pdf"}) {
    const std::vector<uint8_t> bytes = Bytes(name);
    Result<std::unique_ptr<PdfDocument>> doc = PdfDocument::Open(bytes);
    ASSERT_FALSE(doc.ok()) << name;
    EXPECT_EQ(doc.status().code(), StatusCode::kCorruption) << name;
    EXPECT_NE(doc.status().ToString().find("poppler: "), std::string::npos)
        << doc.status().ToString();
  }
  // Every prefix of a small PDF either opens (poppler rebuilds what it can) or is refused; none
  // crashes, and a rendered page is whole.
  const std::vector<uint8_t> bytes = Bytes("handmade.pdf");
  for (size_t n = 0; n < bytes.size(); n += 7) {
    const std::span<const uint8_t> prefix(bytes.data(), n);
    Result<std::unique_ptr<PdfDocument>> doc = PdfDocument::Open(prefix);
    if (!doc.ok()) continue;
    for (int32_t i = 0; i < (*doc)->page_count(); ++i) {
      Result<Image> page = (*doc)->RenderPage(i, 20);
      if (page.ok()) {
        EXPECT_EQ(page->pixels.size(), page->stride_bytes() * static_cast<size_t>(page->height));
      }
    }
  }
}

TEST(PdfDocument, APageThatPopplerCannotDrawWhollyIsCorruption) {
  const std::vector<uint8_t> bytes = Bytes("damaged_page.pdf");
  Result<std::unique_ptr<PdfDocument>> doc = PdfDocument::Open(bytes);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  ASSERT_EQ((*doc)->page_count(), 3);
  EXPECT_TRUE((*doc)->RenderPage(0, 72).ok());
  Result<Image> broken = (*doc)->RenderPage(1, 72);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kCorruption);
  EXPECT_NE(broken.status().ToString().find("page 2"), std::string::npos);
  EXPECT_NE(broken.status().ToString().find("flate"), std::string::npos)
      << broken.status().ToString();
  EXPECT_TRUE((*doc)->RenderPage(2, 72).ok());
}

TEST(PdfDocument, LimitsAreCheckedBeforeWork) {
  const std::vector<uint8_t> bytes = Bytes("invoice.pdf");
  DecodeLimits small_input;
  small_input.max_input_bytes = bytes.size() - 1;
  Result<std::unique_ptr<PdfDocument>> refused = PdfDocument::Open(bytes, small_input);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);

  Result<std::unique_ptr<PdfDocument>> doc = PdfDocument::Open(bytes);
  ASSERT_TRUE(doc.ok());
  DecodeLimits few_pixels;
  few_pixels.max_pixels = 596 * 842 - 1;  // page 1 at 72 dpi is one pixel more
  Result<Image> page = (*doc)->RenderPage(0, 72, few_pixels);
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(page.status().ToString().find("page 1 at 72 dpi is 596x842"), std::string::npos)
      << page.status().ToString();
  few_pixels.max_pixels = 596 * 842;
  EXPECT_TRUE((*doc)->RenderPage(0, 72, few_pixels).ok());
  // Pillow's bomb threshold: an A4 page passes at 2400 dpi? 56k x 79k pixels does not.
  Result<PdfPixelSize> huge = (*doc)->RenderedSize(0, kMaxPdfDpi);
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
  for (int dpi : {0, -5, kMaxPdfDpi + 1}) {
    EXPECT_EQ((*doc)->RenderPage(0, dpi).status().code(), StatusCode::kInvalidArgument) << dpi;
  }
}

TEST(PdfDocument, NotAPdf) {
  EXPECT_EQ(PdfDocument::Open({}).status().code(), StatusCode::kInvalidArgument);
  const std::string png = "\x89PNG\r\n\x1A\n....";
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(png.data()), png.size());
  EXPECT_FALSE(IsPdf(bytes));
  EXPECT_EQ(PdfDocument::Open(bytes).status().code(), StatusCode::kUnsupported);
  const std::string junk = "%PDF-1.7\nnothing else here at all";
  const std::span<const uint8_t> header(reinterpret_cast<const uint8_t*>(junk.data()), junk.size());
  EXPECT_TRUE(IsPdf(header));
  Result<std::unique_ptr<PdfDocument>> doc = PdfDocument::Open(header);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(SniffCodec(header), ImageCodec::kPdf);
}

// Documents on several threads at once render what one thread renders (run under TSan too).
TEST(PdfDocument, ConcurrentDocumentsRenderTheSamePixels) {
  const std::vector<uint8_t> bytes = Bytes("invoice.pdf");
  std::vector<std::vector<uint8_t>> expected;
  {
    Result<std::unique_ptr<PdfDocument>> doc = PdfDocument::Open(bytes);
    ASSERT_TRUE(doc.ok());
    for (int32_t i = 0; i < 3; ++i) expected.push_back((*doc)->RenderPage(i, 50)->pixels);
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < mismatches.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        Result<std::unique_ptr<PdfDocument>> doc = PdfDocument::Open(bytes);
        for (int32_t i = 0; i < 3; ++i) {
          Result<Image> page = (*doc)->RenderPage((i + static_cast<int32_t>(t)) % 3, 50);
          if (!page.ok() ||
              page->pixels != expected[static_cast<size_t>((i + static_cast<int32_t>(t)) % 3)]) {
            ++mismatches[t];
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

// One document renders each page as a document opened for that page alone does, whatever was
// rendered before with its device (other pages, another dpi, the same page again).
TEST(PdfDocument, ReusedDeviceRendersWhatAFreshOneDoes) {
  for (const char* name : {"invoice.pdf", "handmade.pdf", "bleed.pdf"}) {
    const std::vector<uint8_t> bytes = Bytes(name);
    std::unique_ptr<PdfDocument> shared = PdfDocument::Open(bytes).value();
    const int32_t pages = shared->page_count();
    for (int32_t k = 0; k < 2 * pages; ++k) {
      const int32_t i = pages - 1 - k % pages;  // last page first, twice over
      const int dpi = k % 2 == 0 ? 200 : 72;
      SCOPED_TRACE(std::string(name) + " page " + std::to_string(i + 1) + " at " +
                   std::to_string(dpi) + " dpi");
      Result<Image> reused = shared->RenderPage(i, dpi);
      std::unique_ptr<PdfDocument> fresh = PdfDocument::Open(bytes).value();
      Result<Image> alone = fresh->RenderPage(i, dpi);
      ASSERT_TRUE(reused.ok() && alone.ok());
      EXPECT_EQ(reused->width, alone->width);
      EXPECT_TRUE(reused->pixels == alone->pixels);
    }
  }
}

// RenderPage merges the page with the paper itself (CompositeRowOnWhite): for every alpha and
// every channel value it gives what poppler's own Splash::compositeBackground gives.
TEST(PdfDocument, MergeWithPaperEqualsPopplers) {
  constexpr int kWidth = 256 * 256;  // pixel a * 256 + c: alpha a, colour (c, 255 - c, c / 2)
  SplashBitmap bitmap(kWidth, 1, 4, splashModeRGB8, /*alphaA=*/true);
  std::vector<uint8_t> rgb(3 * kWidth);
  std::vector<uint8_t> alpha(kWidth);
  for (int p = 0; p < kWidth; ++p) {
    const auto c = static_cast<uint8_t>(p % 256);
    alpha[static_cast<size_t>(p)] = static_cast<uint8_t>(p / 256);
    rgb[3 * static_cast<size_t>(p)] = c;
    rgb[3 * static_cast<size_t>(p) + 1] = static_cast<uint8_t>(255 - c);
    rgb[3 * static_cast<size_t>(p) + 2] = static_cast<uint8_t>(c / 2);
  }
  std::memcpy(bitmap.getDataPtr(), rgb.data(), rgb.size());
  std::memcpy(bitmap.getAlphaPtr(), alpha.data(), alpha.size());
  std::vector<uint8_t> ours(rgb.size());
  // An odd start and width too, so that runs of eight pixels straddle the row's edges.
  CompositeRowOnWhite(rgb.data(), alpha.data(), 3, ours.data());
  CompositeRowOnWhite(rgb.data() + 9, alpha.data() + 3, kWidth - 3, ours.data() + 9);
  Splash splash(&bitmap, /*vectorAntialiasA=*/true);
  SplashColor white;
  white[0] = white[1] = white[2] = 255;
  splash.compositeBackground(white);
  EXPECT_EQ(std::memcmp(bitmap.getDataPtr(), ours.data(), ours.size()), 0);
  // Whole runs of paper and of opaque pixels take the fill and copy paths.
  std::vector<uint8_t> paper_alpha(64, 0);
  std::vector<uint8_t> opaque_alpha(64, 255);
  std::vector<uint8_t> out(3 * 64);
  CompositeRowOnWhite(rgb.data(), paper_alpha.data(), 64, out.data());
  EXPECT_EQ(out, std::vector<uint8_t>(3 * 64, 255));
  CompositeRowOnWhite(rgb.data(), opaque_alpha.data(), 64, out.data());
  EXPECT_EQ(out, std::vector<uint8_t>(rgb.begin(), rgb.begin() + 3 * 64));
}

// A page's rows alternate stretches of paper, opaque drawing and antialiased edges of every
// length, starting anywhere: the merged fills and copies of CompositeRowOnWhite still give
// poppler's pixels.
TEST(PdfDocument, MergeOfMixedStretchesEqualsPopplers) {
  constexpr int kWidth = 1001;  // not a multiple of the eight-pixel runs
  constexpr int kRows = 64;
  SplashBitmap bitmap(kWidth, kRows, 4, splashModeRGB8, /*alphaA=*/true);
  const auto stride = static_cast<size_t>(bitmap.getRowSize());
  std::mt19937 random(20261203);
  for (int y = 0; y < kRows; ++y) {
    uint8_t* rgb = bitmap.getDataPtr() + static_cast<size_t>(y) * stride;
    uint8_t* alpha = bitmap.getAlphaPtr() + static_cast<size_t>(y) * kWidth;
    int x = 0;
    while (x < kWidth) {
      const int length = std::min(kWidth - x, 1 + static_cast<int>(random() % 40));
      const auto kind = random() % 3;  // paper, opaque, edge
      for (int i = x; i < x + length; ++i) {
        alpha[i] = kind == 0 ? 0 : kind == 1 ? 255 : static_cast<uint8_t>(random() % 256);
        for (int k = 0; k < 3; ++k) rgb[3 * i + k] = static_cast<uint8_t>(random() % 256);
      }
      x += length;
    }
  }
  std::vector<uint8_t> ours(3 * static_cast<size_t>(kWidth) * kRows);
  for (int y = 0; y < kRows; ++y) {
    CompositeRowOnWhite(bitmap.getDataPtr() + static_cast<size_t>(y) * stride,
                        bitmap.getAlphaPtr() + static_cast<size_t>(y) * kWidth, kWidth,
                        ours.data() + 3 * static_cast<size_t>(y) * kWidth);
  }
  Splash splash(&bitmap, /*vectorAntialiasA=*/true);
  SplashColor white;
  white[0] = white[1] = white[2] = 255;
  splash.compositeBackground(white);
  for (int y = 0; y < kRows; ++y) {
    ASSERT_EQ(std::memcmp(bitmap.getDataPtr() + static_cast<size_t>(y) * stride,
                          ours.data() + 3 * static_cast<size_t>(y) * kWidth, 3 * kWidth),
              0)
        << "row " << y;
  }
}

}  // namespace
}  // namespace docfeed::internal
