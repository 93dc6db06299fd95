// Encoder round trips: PNG and WebP lossless must return the exact input for 1..4 channels and
// odd sizes; JPEG must decode to the right geometry and mode with a small error.
//
// With DOCFEED_CODEC_DUMP_DIR set, the encoded files are also written there so that
// tests/data/codec/check_encoded_with_pillow.py can confirm Pillow reads them identically.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "base/file.h"
#include "codec/codec.h"
#include "codec_test_util.h"

namespace docfeed::internal {
namespace {

using testing::MakeNoiseImage;

struct Size {
  int32_t width;
  int32_t height;
};
constexpr Size kSizes[] = {{1, 1}, {3, 7}, {1000, 3}, {64, 33}};

// Writes `bytes` and the raw input pixels to $DOCFEED_CODEC_DUMP_DIR when it is set.
void MaybeDump(const std::string& name, const std::vector<uint8_t>& bytes, const Image& input) {
  const char* dir = std::getenv("DOCFEED_CODEC_DUMP_DIR");
  if (dir == nullptr) return;
  ASSERT_TRUE(WriteFile(JoinPath(dir, name), bytes).ok());
  const std::string raw = name + "." + std::to_string(input.width) + "x" +
                          std::to_string(input.height) + "x" + std::to_string(input.channels) +
                          ".raw";
  ASSERT_TRUE(WriteFile(JoinPath(dir, raw), input.pixels).ok());
}

std::string CaseName(const char* codec, const Size& size, int32_t channels) {
  return std::string(codec) + "_" + std::to_string(size.width) + "x" + std::to_string(size.height) +
         "_c" + std::to_string(channels);
}

TEST(EncodePng, RoundTripIsLosslessForAllChannelCountsAndOddSizes) {
  for (const Size& size : kSizes) {
    for (int32_t channels = 1; channels <= 4; ++channels) {
      const Image input =
          MakeNoiseImage(size.width, size.height, channels, static_cast<uint32_t>(7 + channels));
      Result<std::vector<uint8_t>> png = EncodePng(input);
      ASSERT_TRUE(png.ok()) << png.status().ToString();
      EXPECT_EQ(SniffCodec(*png), ImageCodec::kPng);
      Result<Image> output = DecodeImage(*png);
      ASSERT_TRUE(output.ok()) << output.status().ToString();
      EXPECT_EQ(output->width, input.width);
      EXPECT_EQ(output->height, input.height);
      EXPECT_EQ(output->channels, input.channels);
      EXPECT_EQ(output->pixels, input.pixels) << CaseName("png", size, channels);
      MaybeDump(CaseName("png", size, channels) + ".png", *png, input);
    }
  }
}

TEST(EncodePng, CompressionLevelsAllDecodeAndAreValidated) {
  const Image input = MakeNoiseImage(17, 5, 3, 1);
  for (int level : {0, 1, 9}) {
    Result<std::vector<uint8_t>> png = EncodePng(input, level);
    ASSERT_TRUE(png.ok());
    EXPECT_EQ(DecodeImage(*png)->pixels, input.pixels);
  }
  EXPECT_EQ(EncodePng(input, 10).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodePng(input, -1).status().code(), StatusCode::kInvalidArgument);
}

// What decoding a lossless WebP of `input` must give: gray widened to RGB(A).
Image ExpectedWebp(const Image& input) {
  if (input.channels >= 3) return input;
  Image out{
      .width = input.width, .height = input.height, .channels = input.channels + 2, .pixels = {}};
  for (size_t i = 0; i < input.pixels.size(); i += static_cast<size_t>(input.channels)) {
    out.pixels.insert(out.pixels.end(), 3, input.pixels[i]);
    if (input.channels == 2) out.pixels.push_back(input.pixels[i + 1]);
  }
  return out;
}

TEST(EncodeWebpLossless, RoundTripIsExactIncludingRgbUnderTransparentAlpha) {
  for (const Size& size : kSizes) {
    for (int32_t channels = 1; channels <= 4; ++channels) {
      Image input =
          MakeNoiseImage(size.width, size.height, channels, static_cast<uint32_t>(11 + channels));
      if (channels % 2 == 0) input.pixels[static_cast<size_t>(channels) - 1] = 0;  // Alpha 0.
      Result<std::vector<uint8_t>> webp = EncodeWebpLossless(input);
      ASSERT_TRUE(webp.ok()) << webp.status().ToString();
      EXPECT_EQ(SniffCodec(*webp), ImageCodec::kWebp);
      Result<Image> output = DecodeImage(*webp);
      ASSERT_TRUE(output.ok()) << output.status().ToString();
      const Image expected = ExpectedWebp(input);
      EXPECT_EQ(output->channels, expected.channels) << CaseName("webp", size, channels);
      EXPECT_EQ(output->pixels, expected.pixels) << CaseName("webp", size, channels);
      MaybeDump(CaseName("webp", size, channels) + ".webp", *webp, input);
    }
  }
}

TEST(EncodeWebpLossless, OpaqueRgbaDecodesAsRgb) {
  Image input = MakeNoiseImage(9, 4, 4, 3);
  for (size_t i = 3; i < input.pixels.size(); i += 4) input.pixels[i] = 255;
  Result<Image> output = DecodeImage(*EncodeWebpLossless(input));
  ASSERT_TRUE(output.ok());
  ASSERT_EQ(output->channels, 3);
  for (size_t i = 0; i < 36; ++i) {
    ASSERT_EQ(output->pixels[i * 3 + 2], input.pixels[i * 4 + 2]);
  }
}

TEST(EncodeWebpLossless, RejectsOversizedAndInconsistentImages) {
  Image wide{.width = 16384, .height = 1, .channels = 1, .pixels = std::vector<uint8_t>(16384)};
  EXPECT_EQ(EncodeWebpLossless(wide).status().code(), StatusCode::kInvalidArgument);
  Image broken{.width = 4, .height = 4, .channels = 3, .pixels = std::vector<uint8_t>(5)};
  EXPECT_EQ(EncodeWebpLossless(broken).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodePng(broken).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeJpeg(broken, 90).status().code(), StatusCode::kInvalidArgument);
  Image five{.width = 1, .height = 1, .channels = 5, .pixels = std::vector<uint8_t>(5)};
  EXPECT_EQ(EncodePng(five).status().code(), StatusCode::kInvalidArgument);
}

// A smooth image (JPEG's best case), so quality 95 must come back within a few levels.
Image MakeGradient(int32_t width, int32_t height, int32_t channels) {
  Image image{.width = width, .height = height, .channels = channels, .pixels = {}};
  for (int32_t y = 0; y < height; ++y) {
    for (int32_t x = 0; x < width; ++x) {
      for (int32_t c = 0; c < channels; ++c) {
        const int32_t ramp = (x + y + c * 20) * 150 / (width + height + 60);
        image.pixels.push_back(static_cast<uint8_t>(40 + ramp));
      }
    }
  }
  return image;
}

double MeanAbsError(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += std::abs(int{a[i]} - int{b[i]});
  return sum / static_cast<double>(a.size());
}

TEST(EncodeJpeg, Quality95DecodesToSameGeometryAndModeWithSmallError) {
  for (const Size& size : kSizes) {
    for (int32_t channels : {1, 3}) {
      const Image input = MakeGradient(size.width, size.height, channels);
      Result<std::vector<uint8_t>> jpeg = EncodeJpeg(input, 95);
      ASSERT_TRUE(jpeg.ok()) << jpeg.status().ToString();
      Result<ImageInfo> info = ProbeImage(*jpeg);
      ASSERT_TRUE(info.ok());
      EXPECT_FALSE(info->progressive_or_interlaced);
      Result<Image> output = DecodeImage(*jpeg);
      ASSERT_TRUE(output.ok()) << output.status().ToString();
      EXPECT_EQ(output->width, input.width);
      EXPECT_EQ(output->height, input.height);
      EXPECT_EQ(output->channels, channels);
      EXPECT_LT(MeanAbsError(output->pixels, input.pixels), 2.0)
          << CaseName("jpeg", size, channels);
      MaybeDump(CaseName("jpeg", size, channels) + ".jpg", *jpeg, input);
    }
  }
}

TEST(EncodeJpeg, RefusesAlphaAndBadQuality) {
  for (int32_t channels : {2, 4}) {
    Result<std::vector<uint8_t>> jpeg = EncodeJpeg(MakeNoiseImage(4, 4, channels, 1), 90);
    ASSERT_FALSE(jpeg.ok());
    EXPECT_EQ(jpeg.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(jpeg.status().message().find("alpha"), std::string::npos);
  }
  EXPECT_EQ(EncodeJpeg(MakeNoiseImage(4, 4, 3, 1), 0).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeJpeg(MakeNoiseImage(4, 4, 3, 1), 101).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(EncodeJpeg, ReencodingARealScanKeepsItsMode) {
  Result<Image> gray = DecodeImage(testing::ReadImage("azure_invoice_sample.jpg"));
  ASSERT_TRUE(gray.ok());
  Result<std::vector<uint8_t>> jpeg = EncodeJpeg(*gray, 90);
  ASSERT_TRUE(jpeg.ok());
  Result<Image> again = DecodeImage(*jpeg);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->channels, 1);
  EXPECT_LT(MeanAbsError(again->pixels, gray->pixels), 3.0);
}

}  // namespace
}  // namespace docfeed::internal
