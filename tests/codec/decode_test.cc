// Sniffing, probing and decoding against Pillow's output for every test image
// (tests/data/codec/golden.json), plus the refused variants and the resource limits.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "base/hash.h"
#include "base/recycled_bytes.h"
#include "codec/codec.h"
#include "codec_test_util.h"

namespace docfeed::internal {
namespace {

using testing::DecodableGoldenImages;
using testing::Golden;
using testing::ReadImage;

ImageCodec CodecForPillowFormat(const std::string& format) {
  if (format == "JPEG") return ImageCodec::kJpeg;
  if (format == "PNG") return ImageCodec::kPng;
  if (format == "WEBP") return ImageCodec::kWebp;
  if (format == "GIF") return ImageCodec::kGif;
  if (format == "BMP") return ImageCodec::kBmp;
  if (format == "TIFF") return ImageCodec::kTiff;
  return ImageCodec::kUnknown;
}

std::string HexHash(const std::vector<uint8_t>& pixels) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(Hash64(pixels)));  // NOLINT(google-runtime-int)
  return buf;
}

TEST(SniffCodec, MatchesPillowFormatForEveryTestImage) {
  size_t checked = 0;
  for (const nlohmann::json& entry : Golden()["images"]) {
    if (!entry.contains("format")) continue;
    const std::string file = entry["file"];
    EXPECT_EQ(SniffCodec(ReadImage(file)), CodecForPillowFormat(entry["format"])) << file;
    ++checked;
  }
  EXPECT_GE(checked, 30u);
}

TEST(SniffCodec, UsesMagicNotFileExtension) {
  // gen/jpeg_named.png holds JPEG bytes.
  EXPECT_EQ(SniffCodec(ReadImage("gen/jpeg_named.png")), ImageCodec::kJpeg);
  Result<Image> image = DecodeImage(ReadImage("gen/jpeg_named.png"));
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(image->channels, 3);
}

TEST(SniffCodec, ShortAndUnknownInputIsUnknown) {
  EXPECT_EQ(SniffCodec({}), ImageCodec::kUnknown);
  const uint8_t two[] = {0xFF, 0xD8};
  EXPECT_EQ(SniffCodec(two), ImageCodec::kUnknown);
  const uint8_t riff_not_webp[] = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E'};
  EXPECT_EQ(SniffCodec(riff_not_webp), ImageCodec::kUnknown);
  EXPECT_EQ(ImageCodecName(ImageCodec::kWebp), "webp");
  EXPECT_EQ(ImageCodecName(ImageCodec::kUnknown), "unknown");
}

TEST(ProbeImage, GeometryAndModeMatchPillow) {
  for (const nlohmann::json& entry : Golden()["images"]) {
    const std::string file = entry["file"];
    if (!entry.contains("format")) continue;
    if (CodecForPillowFormat(entry["format"]) == ImageCodec::kBmp) continue;
    Result<ImageInfo> info = ProbeImage(ReadImage(file));
    ASSERT_TRUE(info.ok()) << file << ": " << info.status().ToString();
    EXPECT_EQ(info->width, entry["width"].get<int32_t>()) << file;
    EXPECT_EQ(info->height, entry["height"].get<int32_t>()) << file;
    EXPECT_EQ(PillowModeName(*info), entry["mode"].get<std::string>()) << file;
    if (entry.contains("exif_orientation")) {
      EXPECT_EQ(info->exif_orientation, entry["exif_orientation"].get<int32_t>()) << file;
    }
    EXPECT_EQ(info->frames, entry.value("frames", 1)) << file << " (Pillow's n_frames)";
  }
}

// Pillow's info["transparency"] of a PNG colour key (gen/gray_trns.png: Pillow reads 78), which
// the transformers 5 colour conversion applies; decoding itself keeps L, as Image.open does.
TEST(ProbeImage, ReportsAPngColourKeyAsPillowReadsIt) {
  Result<ImageInfo> gray = ProbeImage(ReadImage("gen/gray_trns.png"));
  ASSERT_TRUE(gray.ok()) << gray.status().ToString();
  ASSERT_TRUE(gray->transparency.has_value());
  EXPECT_EQ((*gray->transparency)[0], 78);
  EXPECT_EQ(gray->channels, 1);
  Result<ImageInfo> palette = ProbeImage(ReadImage("gen/palette_trns.png"));
  ASSERT_TRUE(palette.ok());
  EXPECT_FALSE(palette->transparency.has_value());  // decoded as alpha instead
  Result<ImageInfo> plain = ProbeImage(ReadImage("gen/interlaced.png"));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->transparency.has_value());
}

TEST(ProbeImage, ReportsVariantFlags) {
  Result<ImageInfo> progressive = ProbeImage(ReadImage("gen/progressive.jpg"));
  ASSERT_TRUE(progressive.ok());
  EXPECT_TRUE(progressive->progressive_or_interlaced);
  Result<ImageInfo> interlaced = ProbeImage(ReadImage("gen/interlaced.png"));
  ASSERT_TRUE(interlaced.ok());
  EXPECT_TRUE(interlaced->progressive_or_interlaced);
  Result<ImageInfo> palette = ProbeImage(ReadImage("SammyMaystoneLinesTest.png"));
  ASSERT_TRUE(palette.ok());
  EXPECT_TRUE(palette->palette);
  EXPECT_EQ(palette->channels, 3);
  Result<ImageInfo> cmyk = ProbeImage(ReadImage("gen/cmyk.jpg"));
  ASSERT_TRUE(cmyk.ok());
  EXPECT_TRUE(cmyk->cmyk);
  EXPECT_EQ(cmyk->channels, 3);  // decoded to RGB
  Result<ImageInfo> gray16 = ProbeImage(ReadImage("gen/gray16.png"));
  ASSERT_TRUE(gray16.ok());
  EXPECT_EQ(gray16->bit_depth, 16);
  Result<ImageInfo> webp = ProbeImage(ReadImage("gen/lossless_rgba.webp"));
  ASSERT_TRUE(webp.ok());
  EXPECT_TRUE(webp->has_alpha);
  EXPECT_EQ(webp->codec, ImageCodec::kWebp);
}

TEST(DecodeImage, PixelsIdenticalToPillow) {
  const std::vector<nlohmann::json> entries = DecodableGoldenImages();
  ASSERT_GE(entries.size(), 25u);
  for (const nlohmann::json& entry : entries) {
    const std::string file = entry["file"];
    Result<Image> image = DecodeImage(ReadImage(file));
    ASSERT_TRUE(image.ok()) << file << ": " << image.status().ToString();
    EXPECT_EQ(image->width, entry["width"].get<int32_t>()) << file;
    EXPECT_EQ(image->height, entry["height"].get<int32_t>()) << file;
    EXPECT_EQ(image->channels, entry["channels"].get<int32_t>()) << file;
    EXPECT_EQ(HexHash(image->pixels), entry["xxh3"].get<std::string>())
        << file << " (Pillow mode " << entry["decoded_mode"] << ")";
  }
}

// The JPEG and PNG decoders write into the thread's recycled buffers (base/recycled_bytes.h),
// whose bytes are whatever an earlier page left: every byte must be written again. Each golden
// image large enough to be given one decodes into a buffer filled with 0xA5 first, which must
// be taken (the thread keeps nothing afterwards) and must not show through.
TEST(DecodeImage, PixelsIdenticalToPillowInRecycledBuffers) {
  int decoded_into_recycled = 0;
  for (const nlohmann::json& entry : DecodableGoldenImages()) {
    const size_t bytes = entry["width"].get<size_t>() * entry["height"].get<size_t>() *
                         entry["channels"].get<size_t>();
    if (bytes < kMinRecycledBytes) continue;
    const std::string file = entry["file"];
    std::thread([&] {
      RecycleBytes(std::vector<uint8_t>(bytes + (size_t{64} << 10), 0xA5));
      Result<Image> image = DecodeImage(ReadImage(file));
      ASSERT_TRUE(image.ok()) << file << ": " << image.status().ToString();
      EXPECT_EQ(RecycledBytesHeld(), 0u) << file << ": the decode did not take the buffer";
      EXPECT_EQ(HexHash(image->pixels), entry["xxh3"].get<std::string>()) << file;
    }).join();
    ++decoded_into_recycled;
  }
  EXPECT_GE(decoded_into_recycled, 4);  // JPEG (gray, RGB) and PNG (RGB, RGBA)
}

TEST(DecodeImage, ChannelsMatchProbe) {
  for (const nlohmann::json& entry : DecodableGoldenImages()) {
    const std::vector<uint8_t> bytes = ReadImage(entry["file"]);
    Result<ImageInfo> info = ProbeImage(bytes);
    Result<Image> image = DecodeImage(bytes);
    ASSERT_TRUE(info.ok() && image.ok()) << entry["file"];
    EXPECT_EQ(info->channels, image->channels) << entry["file"];
  }
}

void ExpectUnsupported(const std::string& file, const std::string& needle) {
  Result<Image> image = DecodeImage(ReadImage(file));
  ASSERT_FALSE(image.ok()) << file;
  EXPECT_EQ(image.status().code(), StatusCode::kUnsupported) << image.status().ToString();
  EXPECT_NE(image.status().message().find(needle), std::string::npos)
      << file << ": " << image.status().ToString();
}

TEST(DecodeImage, RefusesUnsupportedVariantsByName) {
  ExpectUnsupported("gen/tiny.bmp", "bmp");
  ExpectUnsupported("gen/precision12.jpg", "precision 12");
  const uint8_t junk[] = {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'};
  EXPECT_EQ(DecodeImage(junk).status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(ProbeImage(ReadImage("gen/tiny.bmp")).status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(DecodeImage({}).status().code(), StatusCode::kInvalidArgument);
}

TEST(DecodeImage, EnforcesPixelLimitFromHeader) {
  DecodeLimits limits;
  limits.max_pixels = 463 * 1013 - 1;  // One less than sroie_000.jpg.
  Result<Image> image = DecodeImage(ReadImage("sroie_000.jpg"), limits);
  EXPECT_EQ(image.status().code(), StatusCode::kResourceExhausted) << image.status().ToString();
  limits.max_pixels = 463 * 1013;
  EXPECT_TRUE(DecodeImage(ReadImage("sroie_000.jpg"), limits).ok());
  limits.max_pixels = 100;
  for (const char* file : {"FlipkartInvoice.png", "gen/lossy.webp", "gen/interlaced.png"}) {
    EXPECT_EQ(DecodeImage(ReadImage(file), limits).status().code(), StatusCode::kResourceExhausted)
        << file;
  }
}

TEST(DecodeImage, EnforcesInputByteLimit) {
  DecodeLimits limits;
  limits.max_input_bytes = 1000;
  EXPECT_EQ(DecodeImage(ReadImage("wildreceipt_2.jpeg"), limits).status().code(),
            StatusCode::kResourceExhausted);
}

TEST(DecodeImage, DefaultPixelLimitIsPillowsBombThreshold) {
  EXPECT_EQ(DecodeLimits{}.max_pixels, 178'956'970u);
}

}  // namespace
}  // namespace docfeed::internal
