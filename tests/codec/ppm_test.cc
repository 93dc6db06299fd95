// Binary PGM/PPM (the container of preprocessed samples): encode/decode/view round trips, the
// exact header bytes, and the refusal of every malformed or unsupported header with a clear
// message. Pillow's reading of these files is checked in tests/python/test_preprocessed.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codec/codec.h"

namespace docfeed::internal {
namespace {

std::vector<uint8_t> Bytes(const std::string& header, size_t raster_bytes, uint8_t fill = 7) {
  std::vector<uint8_t> out(header.begin(), header.end());
  out.resize(out.size() + raster_bytes, fill);
  return out;
}

Image Pattern(int32_t width, int32_t height, int32_t channels) {
  Image image;
  image.width = width;
  image.height = height;
  image.channels = channels;
  image.pixels.resize(image.stride_bytes() * static_cast<size_t>(height));
  for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<uint8_t>(i * 13);
  return image;
}

ImageView View(const Image& image) {
  return {image.pixels.data(), image.width, image.height, image.channels,
          static_cast<ptrdiff_t>(image.stride_bytes())};
}

TEST(PpmTest, EncodeWritesTheCanonicalHeaderThenTheRows) {
  const Image rgb = Pattern(3, 2, 3);
  Result<std::vector<uint8_t>> ppm = EncodePpm(View(rgb));
  ASSERT_TRUE(ppm.ok()) << ppm.status().ToString();
  const std::string header = "P6\n3 2\n255\n";
  ASSERT_EQ(ppm->size(), header.size() + rgb.pixels.size());
  EXPECT_EQ(std::string(ppm->begin(), ppm->begin() + static_cast<ptrdiff_t>(header.size())),
            header);
  EXPECT_TRUE(std::equal(rgb.pixels.begin(), rgb.pixels.end(), ppm->begin() + 11));
  Result<std::vector<uint8_t>> pgm = EncodePpm(View(Pattern(5, 1, 1)));
  ASSERT_TRUE(pgm.ok());
  EXPECT_EQ(std::string(pgm->begin(), pgm->begin() + 11), "P5\n5 1\n255\n");
}

TEST(PpmTest, RoundTripsGrayAndRgbThroughDecodeAndView) {
  for (int32_t channels : {1, 3}) {
    const Image image = Pattern(17, 9, channels);
    Result<std::vector<uint8_t>> ppm = EncodePpm(View(image));
    ASSERT_TRUE(ppm.ok()) << ppm.status().ToString();
    EXPECT_EQ(SniffCodec(*ppm), ImageCodec::kPpm);
    Result<ImageInfo> info = ProbeImage(*ppm);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->width, 17);
    EXPECT_EQ(info->height, 9);
    EXPECT_EQ(info->channels, channels);
    EXPECT_EQ(PillowModeName(*info), channels == 1 ? "L" : "RGB");
    Result<Image> decoded = DecodeImage(*ppm);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(decoded->channels, channels);
    EXPECT_EQ(decoded->pixels, image.pixels);
    Result<ImageView> view = ViewPpm(*ppm);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    EXPECT_EQ(view->data, ppm->data() + (ppm->size() - image.pixels.size()));  // no copy
    EXPECT_EQ(view->stride_bytes, 17 * channels);
    EXPECT_TRUE(std::equal(image.pixels.begin(), image.pixels.end(), view->data));
  }
}

TEST(PpmTest, EncodeHonoursTheStride) {
  const Image wide = Pattern(8, 3, 3);
  ImageView left = View(wide);
  left.width = 5;  // the left 5 columns of each 8-pixel row
  Result<std::vector<uint8_t>> ppm = EncodePpm(left);
  ASSERT_TRUE(ppm.ok());
  Result<Image> back = DecodeImage(*ppm);
  ASSERT_TRUE(back.ok());
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 15; ++x) {
      EXPECT_EQ(back->pixels[static_cast<size_t>(y * 15 + x)],
                wide.pixels[static_cast<size_t>(y * 24 + x)]);
    }
  }
}

TEST(PpmTest, EncodeRefusesAlphaAndEmptyImages) {
  for (int32_t channels : {2, 4}) {
    Result<std::vector<uint8_t>> r = EncodePpm(View(Pattern(2, 2, channels)));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_FALSE(EncodePpm(ImageView{}).ok());
  ImageView short_stride = View(Pattern(4, 2, 3));
  short_stride.stride_bytes = 11;
  EXPECT_FALSE(EncodePpm(short_stride).ok());
}

TEST(PpmTest, AcceptsNetpbmWhitespaceAndComments) {
  const std::vector<uint8_t> ppm = Bytes("P5 # made by hand\n2\t # w\r\n3\n255\r", 6);
  Result<ImageView> view = ViewPpm(ppm);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->width, 2);
  EXPECT_EQ(view->height, 3);
  EXPECT_EQ(view->channels, 1);
}

struct BadCase {
  std::vector<uint8_t> bytes;
  StatusCode code;
  std::string message;  // a substring the error must contain
};

TEST(PpmTest, RefusesBadHeadersClearly) {
  const std::string long_comment = "P6\n#" + std::string(5000, 'x') + "\n1 1\n255\n";
  const std::vector<BadCase> cases = {
      {Bytes("P3\n1 1\n255\n", 6), StatusCode::kUnsupported, "P3"},
      {Bytes("P4\n8 1\n", 1), StatusCode::kUnsupported, "P4"},
      {Bytes("P7\nWIDTH 1\n", 4), StatusCode::kUnsupported, "P7"},
      {Bytes("P6\n1 1\n65535\n", 6), StatusCode::kUnsupported, "maxval 65535"},
      {Bytes("P6\n1 1\n15\n", 3), StatusCode::kUnsupported, "maxval 15"},
      {Bytes("P6\n0 1\n255\n", 0), StatusCode::kCorruption, "zero size"},
      {Bytes("P6\n2 2\n255\n", 11), StatusCode::kCorruption, "truncated"},
      {Bytes("P6\n2 2\n255\n", 13), StatusCode::kCorruption, "1 bytes after the raster"},
      {Bytes("P6\n1x1\n255\n", 3), StatusCode::kCorruption, "no whitespace before height"},
      {Bytes("P6\n1 -1\n255\n", 3), StatusCode::kCorruption, "height is not a decimal"},
      {Bytes("P6\n99999999999 1\n255\n", 3), StatusCode::kCorruption, "width is too large"},
      {Bytes("P6\n1 1\n255", 0), StatusCode::kCorruption, "truncated in its header"},
      {Bytes("P6\n1 1\n255x", 3), StatusCode::kCorruption, "no whitespace after maxval"},
      {Bytes("P6\n1 1", 0), StatusCode::kCorruption, "truncated in its header"},
      {Bytes(long_comment, 3), StatusCode::kCorruption, "longer than 4096"},
      // A header that claims 2^31-1 squared pixels costs nothing: the limit refuses it first.
      {Bytes("P6\n2147483647 2147483647\n255\n", 3), StatusCode::kResourceExhausted, "exceeds"},
      {Bytes("P6\n60000 60000\n255\n", 3), StatusCode::kCorruption, "truncated"},
  };
  DecodeLimits limits;
  limits.max_pixels = uint64_t{1} << 32;
  for (const BadCase& c : cases) {
    const std::string what(c.bytes.begin(), c.bytes.begin() + std::min<size_t>(c.bytes.size(), 24));
    Result<ImageView> view = ViewPpm(c.bytes, limits);
    ASSERT_FALSE(view.ok()) << what;
    EXPECT_EQ(view.status().code(), c.code) << what << ": " << view.status().ToString();
    EXPECT_NE(view.status().message().find(c.message), std::string::npos)
        << what << ": " << view.status().ToString();
    Result<Image> decoded = DecodeImage(c.bytes, limits);
    ASSERT_FALSE(decoded.ok()) << what;
    EXPECT_EQ(decoded.status().code(), c.code) << what;
  }
}

TEST(PpmTest, SniffsOnlyNetpbmMagicFollowedByWhitespace) {
  EXPECT_EQ(SniffCodec(Bytes("P6\n", 0)), ImageCodec::kPpm);
  EXPECT_EQ(SniffCodec(Bytes("P5 ", 0)), ImageCodec::kPpm);
  EXPECT_EQ(SniffCodec(Bytes("P6x", 0)), ImageCodec::kUnknown);
  EXPECT_EQ(SniffCodec(Bytes("P8\n", 0)), ImageCodec::kUnknown);
  EXPECT_EQ(SniffCodec(Bytes("P6", 0)), ImageCodec::kUnknown);
  EXPECT_EQ(ImageCodecName(ImageCodec::kPpm), "ppm");
  // A file that is not PPM never reaches the PPM parser through ViewPpm either.
  EXPECT_EQ(ViewPpm(Bytes("GIF89a", 10)).status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace docfeed::internal
