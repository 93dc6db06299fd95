// EXIF/XMP orientation parsing and ApplyOrientation against PIL.ImageOps.exif_transpose.
#include <gtest/gtest.h>

#include <string>

#include "codec/codec.h"
#include "codec/internal/exif.h"
#include "codec_test_util.h"

namespace docfeed::internal {
namespace {

std::span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// A TIFF header plus IFD0 with one entry (tag, type, count, value) in the given byte order.
std::string OneEntryTiff(bool big_endian, uint16_t tag, uint16_t type, uint32_t value) {
  auto u16 = [&](uint16_t v) {
    return big_endian ? std::string{char(v >> 8), char(v & 0xFF)}
                      : std::string{char(v & 0xFF), char(v >> 8)};
  };
  auto u32 = [&](uint32_t v) {
    return big_endian ? u16(static_cast<uint16_t>(v >> 16)) + u16(static_cast<uint16_t>(v))
                      : u16(static_cast<uint16_t>(v)) + u16(static_cast<uint16_t>(v >> 16));
  };
  std::string tiff = big_endian ? std::string("MM\0*", 4) : std::string("II*\0", 4);
  tiff += u32(8) + u16(1) + u16(tag) + u16(type) + u32(1);
  // A SHORT value sits in the first two bytes of the 4-byte value field.
  tiff += type == 3 ? u16(static_cast<uint16_t>(value)) + u16(0) : u32(value);
  return tiff + u32(0);
}

TEST(ExifOrientation, ReadsBothByteOrdersAndPrefix) {
  EXPECT_EQ(ExifOrientation(Bytes(OneEntryTiff(false, 0x0112, 3, 6))), 6);
  EXPECT_EQ(ExifOrientation(Bytes(OneEntryTiff(true, 0x0112, 3, 8))), 8);
  EXPECT_EQ(ExifOrientation(Bytes(OneEntryTiff(true, 0x0112, 4, 3))), 3);
  EXPECT_EQ(ExifOrientation(Bytes(std::string("Exif\0\0", 6) + OneEntryTiff(false, 0x0112, 3, 5))),
            5);
  EXPECT_EQ(ExifOrientation(Bytes(OneEntryTiff(false, 0x010F, 3, 6))), std::nullopt);
}

TEST(ExifOrientation, MalformedBlocksNeverReadOutOfBounds) {
  const std::string good = OneEntryTiff(false, 0x0112, 3, 6);
  for (size_t n = 0; n < good.size(); ++n) {
    const std::optional<int32_t> value = ExifOrientation(Bytes(good.substr(0, n)));
    if (value) {
      EXPECT_EQ(*value, 6);
    }
  }
  std::string far_ifd = good;
  far_ifd[4] = '\xFF';  // IFD0 offset points past the end.
  EXPECT_EQ(ExifOrientation(Bytes(far_ifd)), std::nullopt);
  EXPECT_EQ(ExifOrientation(Bytes("XX*\0garbage")), std::nullopt);
}

TEST(ExifOrientation, XmpAndResolutionFollowPillow) {
  EXPECT_EQ(XmpOrientation(Bytes("<x tiff:Orientation=\"6\"/>")), 6);
  EXPECT_EQ(XmpOrientation(Bytes("<tiff:Orientation>3</tiff:Orientation>")), 3);
  EXPECT_EQ(XmpOrientation(Bytes("tiff:Orientation=6 tiff:Orientation=\"2\"")), 2);
  EXPECT_EQ(XmpOrientation(Bytes("no orientation")), std::nullopt);
  EXPECT_EQ(ResolveOrientation(6, 8), 6);             // EXIF wins.
  EXPECT_EQ(ResolveOrientation(std::nullopt, 8), 8);  // XMP fallback.
  EXPECT_EQ(ResolveOrientation(9, 8), 1);             // Pillow ignores invalid EXIF values...
  EXPECT_EQ(ResolveOrientation(0, std::nullopt), 1);  // ...and never falls back to XMP then.
  EXPECT_EQ(ResolveOrientation(std::nullopt, std::nullopt), 1);
}

TEST(ApplyOrientation, MatchesPillowExifTransposeForAllEightValues) {
  const nlohmann::json& golden = testing::Golden()["orientation"];
  const Image base{.width = golden["width"],
                   .height = golden["height"],
                   .channels = golden["channels"],
                   .pixels = golden["pixels"].get<std::vector<uint8_t>>()};
  ASSERT_EQ(golden["cases"].size(), 8u);
  for (const nlohmann::json& c : golden["cases"]) {
    const int32_t orientation = c["orientation"];
    const Image out = ApplyOrientation(base, orientation);
    EXPECT_EQ(out.width, c["width"].get<int32_t>()) << orientation;
    EXPECT_EQ(out.height, c["height"].get<int32_t>()) << orientation;
    EXPECT_EQ(out.channels, base.channels);
    EXPECT_EQ(out.pixels, c["pixels"].get<std::vector<uint8_t>>()) << "orientation " << orientation;
  }
}

TEST(ApplyOrientation, InvalidValuesReturnACopy) {
  const Image image = testing::MakeNoiseImage(3, 2, 2, 9);
  for (int32_t orientation : {0, 1, 9, -4}) {
    EXPECT_EQ(ApplyOrientation(image, orientation).pixels, image.pixels);
  }
}

TEST(ApplyOrientation, DecodedRotatedFilesMatchPillowAfterTranspose) {
  // gen/orientation6.jpg carries EXIF Orientation=6: probe it, decode, rotate; the result must
  // be the stored image turned clockwise (width and height swapped).
  const std::vector<uint8_t> bytes = testing::ReadImage("gen/orientation6.jpg");
  Result<ImageInfo> info = ProbeImage(bytes);
  Result<Image> image = DecodeImage(bytes);
  ASSERT_TRUE(info.ok() && image.ok());
  ASSERT_EQ(info->exif_orientation, 6);
  const Image upright = ApplyOrientation(*image, info->exif_orientation);
  EXPECT_EQ(upright.width, image->height);
  EXPECT_EQ(upright.height, image->width);
  // Top-left of the upright image is the bottom-left of the stored one.
  const size_t bottom_left = static_cast<size_t>(image->height - 1) * image->stride_bytes();
  EXPECT_EQ(upright.pixels[0], image->pixels[bottom_left]);
}

}  // namespace
}  // namespace docfeed::internal
