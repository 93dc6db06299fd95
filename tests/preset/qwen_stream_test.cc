// The Qwen2-VL preset's streamed JPEG path (qwen_vl_preset.cc StreamJpeg over
// imaging/jpeg_stream.h): for every JPEG it takes, Prepare's page is byte for byte the
// whole-page path's (DecodeToRgb, smart_resize, Resize BICUBIC, or the page itself where the size
// is kept), under both generations and both backends, with the same warnings; what it does not
// take (a turned page, CMYK, damaged files) goes the whole-page way with its result or error.
// PrepareTimes tells the paths apart: the stream counts decode_resize only.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codec/codec.h"
#include "imaging/qwen_vl.h"
#include "kernels/resize.h"
#include "preset/preset.h"
#include "testing/test_data.h"

namespace docfeed::internal {
namespace {

QwenVLConfig Config(int32_t hf_version, DonutBackend backend, int64_t max_pixels) {
  QwenVLConfig config;
  config.hf_version = hf_version;
  config.backend = backend;
  config.max_pixels = max_pixels;
  return config;
}

std::unique_ptr<const Preset> MakeOrDie(const QwenVLConfig& config) {
  PresetParams params;
  params.name = kPresetQwen2VL;
  params.qwen_vl = config;
  Result<std::unique_ptr<const Preset>> preset = MakePreset(params);
  EXPECT_TRUE(preset.ok()) << preset.status().ToString();
  return preset.ok() ? std::move(*preset) : nullptr;
}

// The whole-page path as Prepare ran it before the stream, step by step.
Result<Image> WholePage(std::span<const uint8_t> bytes, const QwenVLConfig& config,
                        int32_t orientation, DecodeReport* report) {
  PrepareRequest request;
  request.orientation = orientation;
  request.report = report;
  DonutConfig conversion;
  conversion.hf_version = config.hf_version;
  DOCFEED_ASSIGN_OR_RETURN(Image input, DecodeToRgb(bytes, request, conversion, nullptr));
  DOCFEED_ASSIGN_OR_RETURN(const QwenGeometry g,
                           QwenSmartResize(input.height, input.width, config));
  if (g.height == input.height && g.width == input.width) return input;
  Image out{.width = g.width, .height = g.height, .channels = input.channels, .pixels = {}};
  out.pixels.resize(out.stride_bytes() * static_cast<size_t>(g.height));
  const ResampleArithmetic arithmetic = config.backend == DonutBackend::kTorchvision
                                            ? ResampleArithmetic::kTorchUint8
                                            : ResampleArithmetic::kPillow;
  DOCFEED_RETURN_IF_ERROR(
      Resize(ViewOf(input), MutableViewOf(out), ResampleFilter::kBicubic, nullptr, 0, arithmetic));
  return out;
}

struct Prepared {
  Status status;
  Image page;
  PrepareTimes times;
  DecodeReport report;
};

Prepared PrepareOnce(const Preset& preset, std::span<const uint8_t> bytes, int32_t orientation) {
  Prepared p;
  PrepareRequest request;
  request.orientation = orientation;
  request.report = &p.report;
  p.report.warnings = 99;  // Prepare must overwrite it.
  // A reused output holding another page.
  p.page = Image{.width = 3, .height = 2, .channels = 3, .pixels = std::vector<uint8_t>(18, 7)};
  p.status = preset.Prepare(bytes, request, &p.page, &p.times);
  return p;
}

// Checks Prepare against the whole-page path; `streamed` is the path Prepare must take.
void ExpectSameAsWholePage(std::span<const uint8_t> bytes, const QwenVLConfig& config,
                           int32_t orientation, bool streamed) {
  const std::unique_ptr<const Preset> preset = MakeOrDie(config);
  ASSERT_NE(preset, nullptr);
  DecodeReport want_report;
  const Result<Image> want = WholePage(bytes, config, orientation, &want_report);
  const Prepared got = PrepareOnce(*preset, bytes, orientation);
  ASSERT_EQ(got.status.ToString(), want.status().ToString());
  if (!want.ok()) {
    EXPECT_FALSE(streamed);
    EXPECT_EQ(got.times.decode_resize, 0u);
    return;
  }
  EXPECT_EQ(got.times.decode_resize > 0, streamed);
  EXPECT_EQ(got.times.resize > 0, !streamed);
  EXPECT_EQ(got.report.warnings, want_report.warnings);
  EXPECT_EQ(got.report.first_warning, want_report.first_warning);
  EXPECT_EQ(got.page.width, want->width);
  EXPECT_EQ(got.page.height, want->height);
  EXPECT_EQ(got.page.channels, want->channels);
  EXPECT_TRUE(got.page.pixels == want->pixels);
}

const QwenVLConfig kConfigs[] = {
    Config(4, DonutBackend::kPil, 28 * 28 * 16384),
    Config(4, DonutBackend::kPil, 1003520),
    Config(5, DonutBackend::kPil, 1003520),
    Config(5, DonutBackend::kTorchvision, 1003520),
    Config(5, DonutBackend::kTorchvision, 28 * 28 * 16384),
};

std::string Describe(const QwenVLConfig& c) {
  return "hf " + std::to_string(c.hf_version) + " " + std::string(DonutBackendName(c.backend)) +
         " max_pixels " + std::to_string(c.max_pixels);
}

// Stripes and ramps, so that every band of the JPEG holds detail.
Image Page(int32_t width, int32_t height, int32_t channels) {
  Image image{.width = width, .height = height, .channels = channels, .pixels = {}};
  image.pixels.resize(image.stride_bytes() * static_cast<size_t>(height));
  for (int32_t y = 0; y < height; ++y) {
    for (int32_t x = 0; x < width * channels; ++x) {
      const int32_t v = ((x / channels + 2 * y) / 7) % 5 == 0 ? 20 : (x * 3 + y * 5) % 256;
      image.pixels[static_cast<size_t>(y) * width * channels + x] = static_cast<uint8_t>(v);
    }
  }
  return image;
}

TEST(QwenStream, SynthesizedJpegsEqualTheWholePagePath) {
  struct Case {
    int32_t w, h, c;
  };
  // RGB 4:2:0 and gray; sides that are not multiples of 16 (a last band of 3 rows); a page
  // shorter than one band; 560 x 840, which smart_resize keeps (a row copy); a wide page.
  const Case cases[] = {{1001, 1411, 3}, {1001, 1411, 1}, {733, 13, 3},
                        {560, 840, 3},   {560, 840, 1},   {1700, 600, 3}};
  for (const Case& k : cases) {
    Result<std::vector<uint8_t>> jpeg = EncodeJpeg(Page(k.w, k.h, k.c), 85);
    ASSERT_TRUE(jpeg.ok());
    for (const QwenVLConfig& config : kConfigs) {
      SCOPED_TRACE(std::to_string(k.w) + "x" + std::to_string(k.h) + "x" + std::to_string(k.c) +
                   ", " + Describe(config));
      ExpectSameAsWholePage(*jpeg, config, 1, true);
      ExpectSameAsWholePage(*jpeg, config, 0, true);  // no orientation recorded
    }
  }
}

TEST(QwenStream, TestDataJpegsEqualTheWholePagePath) {
  // 4:4:4, 4:2:2 and 4:2:0, progressive RGB and gray, a scan with EXIF orientation 6 (taken as
  // stored when orientation is 1), a receipt and a 300 dpi page, and files whose decode warns.
  const char* streamed[] = {"images/gen/subsampling444.jpg",   "images/gen/subsampling422.jpg",
                            "images/gen/progressive.jpg",      "images/gen/progressive_gray.jpg",
                            "images/gen/orientation6.jpg",     "images/sroie_000.jpg",
                            "sample-docs/sroie/027.jpg",       "images/modes/warn_huffman.jpg",
                            "images/modes/warn_extraneous.jpg"};
  for (const char* name : streamed) {
    const std::vector<uint8_t> bytes = testing::ReadTestData(name);
    for (const QwenVLConfig& config : kConfigs) {
      SCOPED_TRACE(std::string(name) + ", " + Describe(config));
      ExpectSameAsWholePage(bytes, config, 1, true);
    }
  }
}

TEST(QwenStream, TurnedCmykAndDamagedPagesTakeTheWholePagePath) {
  const QwenVLConfig config = Config(5, DonutBackend::kPil, 1003520);
  for (int32_t orientation : {2, 3, 6, 8}) {
    SCOPED_TRACE(orientation);
    ExpectSameAsWholePage(testing::ReadTestData("images/gen/orientation6.jpg"), config, orientation,
                          false);
    ExpectSameAsWholePage(testing::ReadTestData("images/sroie_000.jpg"), config, orientation,
                          false);
  }
  ExpectSameAsWholePage(testing::ReadTestData("images/modes/cmyk_adobe.jpg"), config, 1, false);
  ExpectSameAsWholePage(testing::ReadTestData("images/modes/ycck.jpg"), config, 1, false);
  ExpectSameAsWholePage(testing::ReadTestData("images/gen/precision12.jpg"), config, 1, false);
  ExpectSameAsWholePage(testing::ReadTestData("images/modes/truncated.jpg"), config, 1, false);
  // Scan data cut to 1000 bytes and closed with EOI: libjpeg would fill the page with gray, but
  // DecodeImage refuses data that cannot hold the image, and so must the stream.
  const std::vector<uint8_t> bytes =
      testing::JpegWithScanCutShort(testing::ReadTestData("sample-docs/sroie/027.jpg"), 1000);
  ASSERT_FALSE(bytes.empty());
  ExpectSameAsWholePage(bytes, config, 1, false);
  // A PNG is never streamed.
  ExpectSameAsWholePage(testing::ReadTestData("sample-docs/invoices/simple-invoice.png"), config, 1,
                        false);
}

}  // namespace
}  // namespace docfeed::internal
