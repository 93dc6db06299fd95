// JpegBandDecoder (imaging/jpeg_stream.h): the rows it pushes are DecodeImage's (full scale) or
// DecodeJpegScaled's (DCT-scaled), in bands of at most 128, with DecodeImage's warnings; what
// DecodeImage does not give as L or RGB, or refuses before decoding, it declines.
#include "imaging/jpeg_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "imaging/jpeg_scaled.h"
#include "testing/test_data.h"

namespace docfeed::internal {
namespace {

// Collects the rows into an image and records the largest band.
class Collect final : public RowSink {
 public:
  explicit Collect(size_t row_bytes) : row_bytes_(row_bytes) {}
  void PushRows(const uint8_t* rows, ptrdiff_t stride_bytes, int32_t count) override {
    for (int32_t r = 0; r < count; ++r) {
      pixels.insert(pixels.end(), rows + r * stride_bytes, rows + r * stride_bytes + row_bytes_);
    }
    largest_band = std::max(largest_band, count);
  }
  std::vector<uint8_t> pixels;
  int32_t largest_band = 0;

 private:
  size_t row_bytes_;
};

TEST(JpegBandDecoder, RowsAreDecodeImagesAndDecodeJpegScaleds) {
  for (const char* name :
       {"images/gen/subsampling444.jpg", "images/gen/subsampling422.jpg",
        "images/gen/progressive.jpg", "images/gen/progressive_gray.jpg", "images/sroie_000.jpg",
        "images/modes/warn_huffman.jpg", "sample-docs/sroie/027.jpg"}) {
    const std::vector<uint8_t> bytes = testing::ReadTestData(name);
    for (int32_t k : {1, 2, 8}) {
      SCOPED_TRACE(std::string(name) + " 1/" + std::to_string(k));
      Image want;
      DecodeReport want_report;
      if (k == 1) {
        Result<Image> decoded = DecodeImage(bytes, {}, &want_report);
        ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
        want = std::move(*decoded);
        if (std::string(name).find("warn_") != std::string::npos) {
          EXPECT_GT(want_report.warnings, 0);
        }
      } else {
        Result<ScaledSource> scaled = DecodeJpegScaled(bytes, k);
        ASSERT_TRUE(scaled.ok()) << scaled.status().ToString();
        want = std::move(scaled->image);
      }
      JpegBandDecoder decoder;
      Result<bool> open = decoder.Open(bytes, {});
      ASSERT_TRUE(open.ok() && *open);
      Result<bool> scale = decoder.SetScale(k);
      ASSERT_TRUE(scale.ok() && *scale);
      ASSERT_EQ(decoder.output_width(), want.width);
      ASSERT_EQ(decoder.output_height(), want.height);
      ASSERT_EQ(decoder.channels(), want.channels);
      Collect sink(want.stride_bytes());
      DecodeReport report{.warnings = 7, .first_warning = "stale"};
      ASSERT_TRUE(decoder.DecodeInto(sink, &report).ok());
      EXPECT_TRUE(sink.pixels == want.pixels);
      EXPECT_LE(sink.largest_band, 128);
      if (k == 1) {
        EXPECT_EQ(report.warnings, want_report.warnings);
        EXPECT_EQ(report.first_warning, want_report.first_warning);
      }
    }
  }
}

TEST(JpegBandDecoder, DeclinesWhatDecodeImageDoesNotGiveAsLOrRgb) {
  for (const char* name :
       {"images/modes/cmyk_adobe.jpg", "images/modes/ycck.jpg", "images/gen/precision12.jpg",
        "sample-docs/invoices/simple-invoice.png"}) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t> bytes = testing::ReadTestData(name);  // outlives the decoder
    JpegBandDecoder decoder;
    const Result<bool> open = decoder.Open(bytes, {});
    EXPECT_TRUE(!open.ok() || !*open);
  }
  const std::vector<uint8_t> page =
      testing::ReadTestData("sample-docs/sroie/027.jpg");  // 1654 x 2339
  DecodeLimits limits;
  limits.max_pixels = 1654 * 2339 - 1;
  JpegBandDecoder small_limit;
  EXPECT_FALSE(*small_limit.Open(page, limits));
  limits = DecodeLimits{};
  limits.max_input_bytes = page.size() - 1;
  JpegBandDecoder byte_limit;
  EXPECT_FALSE(*byte_limit.Open(page, limits));
  JpegBandDecoder bad_scale;
  ASSERT_TRUE(*bad_scale.Open(page, {}));
  EXPECT_FALSE(bad_scale.SetScale(3).ok());
}

// Scan data cut short and closed with EOI: DecodeImage refuses it before decoding; at full scale
// the decoder declines it too (libjpeg would fill the rest with gray), DCT-scaled it goes on as
// DecodeJpegScaled does.
TEST(JpegBandDecoder, DeclinesDataTooShortForTheImageAtFullScale) {
  const std::vector<uint8_t> bytes =
      testing::JpegWithScanCutShort(testing::ReadTestData("sample-docs/sroie/027.jpg"), 1000);
  ASSERT_FALSE(bytes.empty());
  EXPECT_FALSE(DecodeImage(bytes).ok());
  JpegBandDecoder full;
  ASSERT_TRUE(*full.Open(bytes, {}));
  EXPECT_FALSE(*full.SetScale(1));
  JpegBandDecoder scaled;
  ASSERT_TRUE(*scaled.Open(bytes, {}));
  EXPECT_TRUE(*scaled.SetScale(2));
}

}  // namespace
}  // namespace docfeed::internal
