// Hostile and damaged TIFF input: truncation at every length, byte flips, forged headers
// (decompression bombs), limits, concurrent decoding, and silence on stderr (libtiff's messages
// must become Status, never output). Run under the asan preset, none of these may crash.
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

#include "base/file.h"
#include "codec/codec.h"

namespace docfeed::internal {
namespace {

std::vector<uint8_t> ReadCase(const std::string& name) {
  Result<std::vector<uint8_t>> bytes =
      ReadFile(std::string(DOCFEED_TEST_DATA_DIR) + "/tiff/cases/" + name);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? std::move(bytes).value() : std::vector<uint8_t>{};
}

// A file cut anywhere fails, unless only bytes no page needs were cut (then the pixels are the
// complete image's): truncation never yields a partly filled image.
void ExpectTruncationIsAnError(const std::string& file, size_t step) {
  const std::vector<uint8_t> bytes = ReadCase(file);
  Result<Image> full = DecodeImage(bytes);
  ASSERT_TRUE(full.ok()) << file << ": " << full.status().ToString();
  size_t failures = 0;
  for (size_t length = 0; length < bytes.size(); length += step) {
    Result<Image> image = DecodeImage(std::span(bytes).first(length));
    if (!image.ok()) {
      ++failures;
      EXPECT_NE(image.status().code(), StatusCode::kInternal) << image.status().ToString();
      continue;
    }
    EXPECT_EQ(image->pixels, full->pixels) << file << " truncated to " << length;
  }
  EXPECT_GT(failures, 0u) << file;
}

TEST(TiffRobustness, TruncationAtEveryLengthIsAnErrorAndSilent) {
  ::testing::internal::CaptureStderr();
  for (const char* file :
       {"bilevel_group4.tif", "bilevel_group3.tif", "bilevel_tiff_ccitt.tif", "rgb_tiff_lzw.tif",
        "rgb_tiff_adobe_deflate.tif", "rgb_packbits.tif", "rgb_raw.tif", "rgb_jpeg_ycbcr.tif",
        "rgb_tiled_lzw.tif", "rgb_planar_lzw.tif", "rgb_bigtiff_lzw.tif", "rgb_tiffcp_lzma.tif",
        "rgb_tiffcp_zstd.tif", "palette8_lzw.tif", "ycbcr22_deflate.tif", "multipage_lzw.tif"}) {
    ExpectTruncationIsAnError(file, 1);
  }
  ExpectTruncationIsAnError("doc_azure_invoice_g4.tif", 97);  // a full page: every 97th length
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(TiffRobustness, TruncatedImageDataSaysWhat) {
  for (const char* file : {"doc_azure_invoice_g4.tif", "doc_sroie_gray_lzw.tif",
                           "rgb_jpeg_ycbcr.tif", "rgb_tiled_lzw.tif"}) {
    const std::vector<uint8_t> bytes = ReadCase(file);
    // Pillow and tiffcp write the IFD after the image data: keep it, drop a middle piece.
    Result<Image> image = DecodeImage(std::span(bytes).first(bytes.size() * 2 / 3));
    ASSERT_FALSE(image.ok()) << file;
    EXPECT_EQ(image.status().code(), StatusCode::kCorruption) << image.status().ToString();
    EXPECT_NE(image.status().message().find("TIFF"), std::string::npos)
        << image.status().ToString();
  }
}

TEST(TiffRobustness, ByteFlipsNeverCrashOrLeakOutput) {
  ::testing::internal::CaptureStderr();
  for (const char* file :
       {"bilevel_group4.tif", "rgb_tiff_lzw.tif", "rgb_jpeg_ycbcr.tif", "rgb_tiled_jpeg_ycbcr.tif",
        "rgba_planar_lzw.tif", "palette4.tif", "cmyk_lzw.tif", "gray16_be.tif",
        "ycbcr22_deflate.tif", "rgb_bigtiff_lzw.tif", "multipage_tiffcp.tif",
        "rgb_zip_predictor.tif"}) {
    std::vector<uint8_t> bytes = ReadCase(file);
    for (size_t pos = 0; pos < bytes.size(); pos += 1 + pos / 16) {
      const uint8_t saved = bytes[pos];
      for (uint8_t mask : std::initializer_list<uint8_t>{0x01, 0x80, 0xFF}) {
        bytes[pos] = static_cast<uint8_t>(saved ^ mask);
        Result<ImageInfo> info = ProbeImage(bytes);
        Result<Image> image = DecodeImage(bytes);
        if (image.ok()) {
          ASSERT_TRUE(info.ok()) << file << " flipped at " << pos;
          EXPECT_EQ(image->pixels.size(),
                    image->stride_bytes() * static_cast<size_t>(image->height));
          EXPECT_EQ(image->channels, info->channels) << file << " flipped at " << pos;
        }
      }
      bytes[pos] = saved;
    }
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

// A classic little-endian TIFF whose one 8-bit gray strip of `data_bytes` bytes claims
// `width` x `height` pixels under `compression` (TIFF 6.0 section 2 layout: header, IFD, data).
std::vector<uint8_t> ForgedTiff(uint32_t width, uint32_t height, uint16_t compression,
                                uint32_t data_bytes, uint16_t bits = 8) {
  std::vector<uint8_t> out = {'I', 'I', 42, 0, 8, 0, 0, 0};
  auto u16 = [&](uint32_t v) {
    out.push_back(static_cast<uint8_t>(v));
    out.push_back(static_cast<uint8_t>(v >> 8));
  };
  auto u32 = [&](uint32_t v) {
    u16(v & 0xFFFF);
    u16(v >> 16);
  };
  constexpr uint32_t kEntries = 9;
  const uint32_t data_offset = 8 + 2 + kEntries * 12 + 4;
  const uint32_t entries[kEntries][3] = {
      {256, 4, width},       {257, 4, height}, {258, 3, bits},   {259, 3, compression}, {262, 3, 1},
      {273, 4, data_offset}, {277, 3, 1},      {278, 4, height}, {279, 4, data_bytes}};
  u16(kEntries);
  for (const auto& e : entries) {
    u16(e[0]);
    u16(e[1]);
    u32(1);
    if (e[1] == 3) {
      u16(e[2]);
      u16(0);
    } else {
      u32(e[2]);
    }
  }
  u32(0);
  out.resize(out.size() + data_bytes, 0x55);
  return out;
}

TEST(TiffRobustness, DecompressionBombHeadersAreRefusedBeforeAllocating) {
  // 10^10 pixels: over the default pixel limit.
  Result<Image> huge = DecodeImage(ForgedTiff(100000, 100000, 5, 64));
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted) << huge.status().ToString();
  // 10^8 pixels (under the limit) from 64 bytes: no codec gets that ratio.
  for (uint16_t compression : std::initializer_list<uint16_t>{1, 5, 8, 32946, 32773, 7}) {
    Result<Image> bomb = DecodeImage(ForgedTiff(10000, 10000, compression, 64));
    EXPECT_EQ(bomb.status().code(), StatusCode::kCorruption)
        << compression << ": " << bomb.status().ToString();
    EXPECT_NE(bomb.status().message().find("cannot hold"), std::string::npos)
        << bomb.status().ToString();
  }
  // CCITT G4 needs at least a bit per row.
  Result<Image> fax = DecodeImage(ForgedTiff(3000, 50000, 4, 64, 1));
  EXPECT_EQ(fax.status().code(), StatusCode::kCorruption) << fax.status().ToString();
  // The header alone is still probed: it is well formed.
  Result<ImageInfo> info = ProbeImage(ForgedTiff(100000, 100000, 5, 64));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->width, 100000);
}

TEST(TiffRobustness, LimitsFromTheHeader) {
  const std::vector<uint8_t> bytes = ReadCase("doc_azure_invoice_g4.tif");
  DecodeLimits limits;
  limits.max_pixels = 1700 * 2200 - 1;
  EXPECT_EQ(DecodeImage(bytes, limits).status().code(), StatusCode::kResourceExhausted);
  limits.max_pixels = 1700 * 2200;
  EXPECT_TRUE(DecodeImage(bytes, limits).ok());
  limits.max_input_bytes = bytes.size() - 1;
  EXPECT_EQ(DecodeImage(bytes, limits).status().code(), StatusCode::kResourceExhausted);
}

TEST(TiffRobustness, ZeroSizeAndGarbageAfterTheMagic) {
  EXPECT_EQ(DecodeImage(ForgedTiff(0, 10, 1, 10)).status().code(), StatusCode::kCorruption);
  const uint8_t magic_only[] = {'I', 'I', 42, 0};
  EXPECT_EQ(DecodeImage(magic_only).status().code(), StatusCode::kCorruption);
  const uint8_t bad_ifd[] = {'M', 'M', 0, 42, 0xFF, 0xFF, 0xFF, 0xF0, 1, 2, 3, 4};
  EXPECT_EQ(DecodeImage(bad_ifd).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ProbeImage(bad_ifd).status().code(), StatusCode::kCorruption);
}

// doc_azure_invoice_g4.tif with strip 3's StripByteCounts cut from 2901 to 1000 bytes: libtiff
// only warns ("Premature EOF") and Pillow 13 returns the page with 195 rows white; docfeed
// refuses it (src/codec/README.md, "Truncation is an error").
TEST(TiffRobustness, CcittDataEndingEarlyIsCorruptionNotWhiteRows) {
  Result<std::vector<uint8_t>> bytes = ReadFile(std::string(DOCFEED_TEST_DATA_DIR) +
                                                "/tiff/regressions/g4_strip3_cut_short.tif");
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Result<Image> image = DecodeImage(*bytes);
  ASSERT_FALSE(image.ok());
  EXPECT_EQ(image.status().code(), StatusCode::kCorruption);
  EXPECT_NE(image.status().message().find("Premature EOF"), std::string::npos)
      << image.status().ToString();
}

// Inputs the fuzzer (tests/fuzz/tiff_decode_fuzz.cc) found, kept in tests/data/tiff/regressions.
TEST(TiffRobustness, FuzzRegressions) {
  // The next-IFD offset after directory 0 is cut off: libtiff counts 0 directories, but
  // directory 0 was read, so the probe must report one page and agree with the decode.
  Result<std::vector<uint8_t>> bytes =
      ReadFile(std::string(DOCFEED_TEST_DATA_DIR) + "/tiff/regressions/cut_next_ifd_offset.tif");
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Result<ImageInfo> info = ProbeImage(*bytes);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->frames, 1);
  Result<Image> image = DecodeImage(*bytes);
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(image->width, info->width);
  EXPECT_EQ(image->height, info->height);
  EXPECT_EQ(image->channels, info->channels);
}

// Handles share nothing: concurrent decodes of different files equal sequential ones.
TEST(TiffRobustness, ConcurrentDecodesAgree) {
  const std::vector<std::string> files = {"bilevel_group4.tif", "rgb_jpeg_ycbcr.tif",
                                          "ycbcr22_deflate.tif", "rgb_webp.tif"};
  std::vector<std::vector<uint8_t>> inputs;
  std::vector<Result<Image>> sequential;
  for (const std::string& f : files) {
    inputs.push_back(ReadCase(f));
    sequential.push_back(DecodeImage(inputs.back()));
  }
  std::vector<std::thread> threads;
  std::vector<int> mismatches(files.size(), 0);
  for (size_t t = 0; t < files.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        Result<Image> image = DecodeImage(inputs[t]);
        const bool same =
            image.ok() == sequential[t].ok() &&
            (!image.ok() ? image.status().message() == sequential[t].status().message()
                         : image->pixels == sequential[t]->pixels);
        if (!same) ++mismatches[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t t = 0; t < files.size(); ++t) EXPECT_EQ(mismatches[t], 0) << files[t];
}

}  // namespace
}  // namespace docfeed::internal
