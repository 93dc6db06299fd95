// Hostile and damaged input: truncation at many lengths, byte flips, forged header sizes
// (decompression bombs) and zero dimensions. Run under the asan preset, these must never crash;
// a truncated file must be an error, never a silently gray-filled image.
#include <gtest/gtest.h>

#include <string>

#include "codec/codec.h"
#include "codec_test_util.h"

namespace docfeed::internal {
namespace {

using testing::DecodableGoldenImages;
using testing::ReadImage;

// Bytes at the end of a file whose loss leaves every pixel intact and which Pillow does not
// require either: for PNG, the final IDAT's CRC and the IEND chunk (neither libspng nor Pillow
// reads them once all rows are inflated); for GIF the image data's block terminator and the
// trailer ';' (Pillow stops after the last pixel). JPEG must keep everything up to EOI, like in
// Pillow. (Animated files decode frame 0 from a prefix: pillow_modes_test.cc.)
size_t OptionalTrailerBytes(ImageCodec codec) {
  return codec == ImageCodec::kPng ? 16 : codec == ImageCodec::kGif ? 2 : 0;
}

std::vector<size_t> TruncationLengths(size_t size) {
  std::vector<size_t> lengths;
  for (size_t n = 0; n < std::min<size_t>(size, 64); n += 3) lengths.push_back(n);
  constexpr size_t kSteps = 48;
  for (size_t i = 0; i < kSteps; ++i) lengths.push_back(64 + (size - 64) * i / kSteps);
  for (size_t back = 1; back <= 16 && back < size; ++back) lengths.push_back(size - back);
  return lengths;
}

TEST(Robustness, TruncatedFilesAreErrorsAtEveryLength) {
  for (const nlohmann::json& entry : DecodableGoldenImages()) {
    const std::string file = entry["file"];
    if (entry.value("frames", 1) > 1) continue;
    const std::vector<uint8_t> bytes = ReadImage(file);
    Result<Image> full = DecodeImage(bytes);
    ASSERT_TRUE(full.ok()) << file;
    const size_t trailer = OptionalTrailerBytes(SniffCodec(bytes));
    for (size_t length : TruncationLengths(bytes.size())) {
      Result<Image> image = DecodeImage(std::span(bytes).first(length));
      if (!image.ok()) {
        EXPECT_NE(image.status().code(), StatusCode::kOk);
        continue;
      }
      EXPECT_GE(length, bytes.size() - trailer) << file << " truncated to " << length;
      EXPECT_EQ(image->pixels, full->pixels) << file << " truncated to " << length;
    }
  }
}

TEST(Robustness, TruncationInsideImageDataSaysTruncated) {
  for (const char* file : {"sroie_000.jpg", "gen/progressive.jpg", "FlipkartInvoice.png",
                           "gen/interlaced.png", "gen/lossy.webp"}) {
    const std::vector<uint8_t> bytes = ReadImage(file);
    Result<Image> image = DecodeImage(std::span(bytes).first(bytes.size() * 2 / 3));
    ASSERT_FALSE(image.ok()) << file;
    EXPECT_EQ(image.status().code(), StatusCode::kCorruption) << image.status().ToString();
    EXPECT_NE(image.status().message().find("truncated"), std::string::npos)
        << file << ": " << image.status().ToString();
  }
}

TEST(Robustness, ByteFlipsNeverCrash) {
  for (const nlohmann::json& entry : DecodableGoldenImages()) {
    const std::string file = entry["file"];
    std::vector<uint8_t> bytes = ReadImage(file);
    constexpr size_t kFlips = 40;
    for (size_t i = 0; i < kFlips; ++i) {
      // The first 24 positions cover the headers byte by byte; the rest spread over the file.
      const size_t pos = i < 24 ? i : (bytes.size() * (i - 23)) / (kFlips - 22);
      if (pos >= bytes.size()) continue;
      const uint8_t saved = bytes[pos];
      bytes[pos] = static_cast<uint8_t>(saved ^ (0x5A + i));
      Result<ImageInfo> info = ProbeImage(bytes);
      Result<Image> image = DecodeImage(bytes);
      if (image.ok()) {
        EXPECT_EQ(image->pixels.size(), image->stride_bytes() * static_cast<size_t>(image->height))
            << file << " flipped at " << pos;
      }
      bytes[pos] = saved;
    }
  }
}

// CRC-32 as used by PNG chunks (ISO 3309 / ITU-T V.42, PNG spec section 5.5).
uint32_t Crc32(const uint8_t* data, size_t size) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void PutU32Be(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

// Rewrites IHDR's width and height (bytes 16..23) and fixes the chunk CRC.
std::vector<uint8_t> PngWithSize(uint32_t width, uint32_t height) {
  std::vector<uint8_t> png = ReadImage("gen/la8.png");
  PutU32Be(&png[16], width);
  PutU32Be(&png[20], height);
  PutU32Be(&png[29], Crc32(&png[12], 17));  // CRC over type + 13 data bytes.
  return png;
}

// Rewrites the SOF0 frame size of a baseline JPEG (ITU-T T.81 B.2.2: P, Y, X after the length).
std::vector<uint8_t> JpegWithSize(uint16_t width, uint16_t height) {
  std::vector<uint8_t> jpeg = ReadImage("gen/subsampling444.jpg");
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
      jpeg[i + 5] = static_cast<uint8_t>(height >> 8);
      jpeg[i + 6] = static_cast<uint8_t>(height);
      jpeg[i + 7] = static_cast<uint8_t>(width >> 8);
      jpeg[i + 8] = static_cast<uint8_t>(width);
      return jpeg;
    }
  }
  ADD_FAILURE() << "no SOF0 marker";
  return jpeg;
}

// Rewrites the VP8L header of a simple-format lossless WebP (WebP lossless bitstream spec,
// section 3: 14-bit width-1, 14-bit height-1, alpha hint, 3-bit version).
std::vector<uint8_t> WebpWithSize(uint32_t width, uint32_t height) {
  std::vector<uint8_t> webp = ReadImage("gen/lossless_rgba.webp");
  EXPECT_EQ(std::string(webp.begin() + 12, webp.begin() + 16), "VP8L");
  uint32_t bits = 0;
  for (size_t i = 0; i < 4; ++i) bits |= uint32_t{webp[21 + i]} << (8 * i);
  bits = (bits & 0xF0000000u) | (width - 1) | ((height - 1) << 14);
  for (size_t i = 0; i < 4; ++i) webp[21 + i] = static_cast<uint8_t>(bits >> (8 * i));
  return webp;
}

TEST(Robustness, DecompressionBombsAreRefusedFromTheHeader) {
  for (const std::vector<uint8_t>& bomb :
       {PngWithSize(100000, 100000), JpegWithSize(60000, 60000), WebpWithSize(16384, 16384)}) {
    Result<ImageInfo> info = ProbeImage(bomb);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    Result<Image> image = DecodeImage(bomb);
    ASSERT_FALSE(image.ok());
    EXPECT_EQ(image.status().code(), StatusCode::kResourceExhausted) << image.status().ToString();
    EXPECT_NE(image.status().message().find("decompression bomb"), std::string::npos);
  }
}

TEST(Robustness, HeadersClaimingMoreThanTheDataCanHoldFailBeforeAllocating) {
  // Within the pixel limit, but a few hundred bytes cannot encode these images: deflate tops out
  // at 1032:1 and sequential Huffman JPEG needs >= 2 bits per 8x8 block.
  for (const std::vector<uint8_t>& liar : {PngWithSize(9000, 9000), JpegWithSize(9000, 9000)}) {
    Result<Image> image = DecodeImage(liar);
    ASSERT_FALSE(image.ok());
    EXPECT_EQ(image.status().code(), StatusCode::kCorruption) << image.status().ToString();
    EXPECT_NE(image.status().message().find("truncated"), std::string::npos);
  }
}

TEST(Robustness, PngHeaderChecksumIsVerifiedBeforeTrustingTheSize) {
  std::vector<uint8_t> png = PngWithSize(9000, 9000);
  png[29] ^= 1;
  Result<ImageInfo> info = ProbeImage(png);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::kCorruption);
  EXPECT_NE(info.status().message().find("checksum"), std::string::npos);
}

TEST(Robustness, ZeroDimensionsAreCorruption) {
  for (const std::vector<uint8_t>& bad :
       {PngWithSize(0, 5), PngWithSize(5, 0), JpegWithSize(0, 8), JpegWithSize(8, 0)}) {
    Result<Image> image = DecodeImage(bad);
    ASSERT_FALSE(image.ok());
    EXPECT_EQ(image.status().code(), StatusCode::kCorruption) << image.status().ToString();
    EXPECT_FALSE(ProbeImage(bad).ok());
  }
}

TEST(Robustness, CorruptEntropyDataDecodesWithAWarningAsInPillow) {
  // An EOI inside the scan of a baseline JPEG: libjpeg warns ("premature end of data segment")
  // and fills the rest with gray, and Pillow 13 returns those pixels without an error
  // (modes/warn_eoi_in_scan.jpg checks the pixels against Pillow's). The warning is reported.
  std::vector<uint8_t> bytes = ReadImage("sroie_000.jpg");
  const size_t mid = bytes.size() / 2;
  bytes[mid] = 0xFF;
  bytes[mid + 1] = 0xD9;  // EOI inside the scan.
  DecodeReport report;
  Result<Image> image = DecodeImage(bytes, {}, &report);
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_GE(report.warnings, 1);
  EXPECT_NE(report.first_warning.find("premature end of data segment"), std::string::npos)
      << report.first_warning;
}

}  // namespace
}  // namespace docfeed::internal
