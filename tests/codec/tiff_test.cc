// TIFF decoding against Pillow: every file of tests/data/tiff/cases/ (made by
// tests/data/tiff/make_tiff_cases.py, which also wrote Pillow's results into expected.json),
// page by page, plus truncation at every length, byte flips, forged headers and limits.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "base/file.h"
#include "base/hash.h"
#include "codec/codec.h"

namespace docfeed::internal {
namespace {

std::string TiffDir() { return std::string(DOCFEED_TEST_DATA_DIR) + "/tiff"; }

std::vector<uint8_t> ReadCase(const std::string& name) {
  Result<std::vector<uint8_t>> bytes = ReadFile(TiffDir() + "/cases/" + name);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? std::move(bytes).value() : std::vector<uint8_t>{};
}

const nlohmann::json& Expected() {
  static const nlohmann::json* expected = [] {
    Result<std::string> text = ReadTextFile(TiffDir() + "/expected.json");
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    return new nlohmann::json(nlohmann::json::parse(text.ok() ? *text : "{}"));
  }();
  return *expected;
}

const nlohmann::json& Case(const std::string& file) {
  for (const nlohmann::json& entry : Expected()["cases"]) {
    if (entry["file"] == file) return entry;
  }
  ADD_FAILURE() << "no expected.json entry for " << file;
  static const nlohmann::json empty;
  return empty;
}

std::string HexHash(const std::vector<uint8_t>& pixels) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(Hash64(pixels)));  // NOLINT(google-runtime-int)
  return buf;
}

// Files Pillow opens that docfeed refuses on purpose (src/codec/README.md, "Unsupported").
const std::set<std::string> kRefusedOnPurpose = {
    "ycbcr11_raw.tif",  // uncompressed YCbCr: Pillow converts it without libtiff
};

// Decodes page `page` and applies its orientation, as the loader does.
Result<Image> DecodeOriented(const std::vector<uint8_t>& bytes, int32_t page) {
  DOCFEED_ASSIGN_OR_RETURN(ImageInfo info, ProbeImage(bytes, DecodeOptions{.frame = page}));
  DOCFEED_ASSIGN_OR_RETURN(Image image, DecodeImage(bytes, {}, DecodeOptions{.frame = page}));
  return ApplyOrientation(image, info.exif_orientation);
}

void ExpectPageMatchesPillow(const std::string& file, const std::vector<uint8_t>& bytes,
                             int32_t page, const nlohmann::json& want, int32_t frames) {
  SCOPED_TRACE(file + " page " + std::to_string(page));
  Result<ImageInfo> info = ProbeImage(bytes, DecodeOptions{.frame = page});
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->codec, ImageCodec::kTiff);
  EXPECT_EQ(info->width, want["width"].get<int32_t>());
  EXPECT_EQ(info->height, want["height"].get<int32_t>());
  EXPECT_EQ(PillowModeName(*info), want["mode"].get<std::string>());
  EXPECT_EQ(info->exif_orientation, want["orientation"].get<int32_t>());
  EXPECT_EQ(info->frames, frames);
  EXPECT_EQ(info->channels, want["channels"].get<int32_t>());
  Result<Image> image = DecodeOriented(bytes, page);
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(image->width, want["out_width"].get<int32_t>());
  EXPECT_EQ(image->height, want["out_height"].get<int32_t>());
  EXPECT_EQ(image->channels, want["channels"].get<int32_t>());
  EXPECT_EQ(HexHash(image->pixels), want["xxh3"].get<std::string>())
      << "Pillow mode " << want["mode"];
}

TEST(Tiff, EveryCaseDecodesLikePillow) {
  size_t pages = 0, refused = 0;
  std::set<std::string> modes;
  for (const nlohmann::json& entry : Expected()["cases"]) {
    const std::string file = entry["file"];
    const std::vector<uint8_t> bytes = ReadCase(file);
    ASSERT_EQ(SniffCodec(bytes), ImageCodec::kTiff) << file;
    if (entry.contains("pillow_error") || kRefusedOnPurpose.count(file) > 0) {
      ++refused;
      continue;  // TiffRefusals checks these.
    }
    const int32_t frames = entry["frames"].get<int32_t>();
    for (int32_t page = 0; page < frames; ++page) {
      ExpectPageMatchesPillow(file, bytes, page, entry["pages"][page], frames);
      modes.insert(entry["pages"][page]["mode"].get<std::string>());
      ++pages;
    }
  }
  // The corpus covers every mode docfeed maps (a silently shrunk corpus must fail).
  EXPECT_GE(pages, 80u);
  EXPECT_GE(refused, 8u);
  for (const char* mode : {"1", "L", "I;16", "I;16B", "LA", "RGB", "RGBA", "P", "PA", "CMYK"}) {
    EXPECT_EQ(modes.count(mode), 1u) << mode;
  }
}

TEST(Tiff, RefusesWhatPillowCannotOpen) {
  for (const nlohmann::json& entry : Expected()["cases"]) {
    const std::string file = entry["file"];
    if (!entry.contains("pillow_error") && kRefusedOnPurpose.count(file) == 0) continue;
    if (entry.contains("lossless_copy_of")) continue;  // DecodesWhatPillowMisreads
    const std::vector<uint8_t> bytes = ReadCase(file);
    Result<Image> image = DecodeImage(bytes);
    EXPECT_FALSE(image.ok()) << file << " (Pillow: " << entry.value("pillow_error", "") << ")";
    if (!image.ok()) {
      EXPECT_EQ(image.status().code(), StatusCode::kUnsupported)
          << file << ": " << image.status().ToString();
      EXPECT_NE(image.status().message().find("TIFF"), std::string::npos)
          << image.status().ToString();
    }
  }
}

// Pillow 13 cannot open big-endian BigTIFF; docfeed's pixels must then equal Pillow's pixels of
// the file the case was losslessly copied from (tiffcp -8 -B).
TEST(Tiff, DecodesWhatPillowMisreadsLikeItsLosslessSource) {
  size_t checked = 0;
  for (const nlohmann::json& entry : Expected()["cases"]) {
    if (!entry.contains("lossless_copy_of")) continue;
    const nlohmann::json& source = Case(entry["lossless_copy_of"]);
    Result<Image> image = DecodeOriented(ReadCase(entry["file"]), 0);
    ASSERT_TRUE(image.ok()) << entry["file"] << ": " << image.status().ToString();
    EXPECT_EQ(HexHash(image->pixels), source["pages"][0]["xxh3"].get<std::string>());
    ++checked;
  }
  EXPECT_EQ(checked, 1u);
}

TEST(Tiff, RefusalsNameTheFeature) {
  auto message = [](const std::string& file) {
    return std::string(DecodeImage(ReadCase(file)).status().message());
  };
  EXPECT_NE(message("rgb_webp.tif").find("WEBP"), std::string::npos) << message("rgb_webp.tif");
  EXPECT_NE(message("rgb_lerc.tif").find("compression"), std::string::npos);
  EXPECT_NE(message("ycbcr22_raw.tif").find("YCbCr"), std::string::npos);
  EXPECT_NE(message("la_planar.tif").find("planar"), std::string::npos);
  EXPECT_NE(message("gray_float32.tif").find("floating-point"), std::string::npos);
}

TEST(Tiff, PagesAndTheirErrors) {
  const std::vector<uint8_t> bytes = ReadCase("multipage_tiffcp.tif");
  Result<ImageInfo> info = ProbeImage(bytes);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->frames, 3);
  EXPECT_EQ(PillowModeName(*info), "1");  // page 0 is what DecodeImage gives by default
  Result<Image> first = DecodeImage(bytes);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(HexHash(first->pixels),
            Case("multipage_tiffcp.tif")["pages"][0]["xxh3"].get<std::string>());
  EXPECT_EQ(DecodeImage(bytes, {}, DecodeOptions{.frame = 3}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ProbeImage(bytes, DecodeOptions{.frame = -1}).status().code(),
            StatusCode::kInvalidArgument);
  // Other formats have only page 0.
  const std::vector<uint8_t> png = ReadCase("../../images/gen/gray1.png");
  EXPECT_TRUE(DecodeImage(png).ok());
  EXPECT_EQ(DecodeImage(png, {}, DecodeOptions{.frame = 1}).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace docfeed::internal
