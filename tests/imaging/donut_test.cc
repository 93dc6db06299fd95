// The Donut preset's geometry: sizes (the worked examples of docs/donut-preprocessing.md 4),
// RGB conversion, rotation, gray == replicated RGB, padding offsets (range, reachability,
// determinism, draw order), DonutPad, the scaled (fast) decode, and error cases. Byte parity with
// transformers is tested by tests/python/test_donut_parity.py.
#include "imaging/donut.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/file.h"
#include "imaging/jpeg_scaled.h"
#include "testing/test_data.h"

namespace docfeed::internal {
namespace {

Image RandomImage(int32_t w, int32_t h, int32_t c, uint32_t seed = 1) {
  Image image{.width = w, .height = h, .channels = c, .pixels = {}};
  image.pixels.resize(image.stride_bytes() * static_cast<size_t>(h));
  std::mt19937 rng(seed);
  for (uint8_t& p : image.pixels) p = static_cast<uint8_t>(rng());
  return image;
}

Image Replicate(const Image& gray) {
  Image rgb{.width = gray.width, .height = gray.height, .channels = 3, .pixels = {}};
  for (uint8_t v : gray.pixels) rgb.pixels.insert(rgb.pixels.end(), {v, v, v});
  return rgb;
}

DonutConfig Config(int32_t height, int32_t width) {
  DonutConfig c;
  c.height = height;
  c.width = width;
  return c;
}

struct GeometryCase {
  int32_t w, h;               // input
  int32_t rw, rh, tw, th;     // after resize, after thumbnail
  int32_t pad_left, pad_top;  // centred
};

TEST(DonutGeometry, WorkedExamplesAt1553x1200) {
  const GeometryCase cases[] = {
      {1654, 2339, 1200, 1696, 1098, 1553, 51, 0}, {2480, 3508, 1200, 1697, 1098, 1553, 51, 0},
      {1700, 2200, 1200, 1552, 1200, 1552, 0, 0},  {600, 800, 1200, 1600, 1164, 1553, 18, 0},
      {2000, 1000, 2400, 1200, 1200, 600, 0, 476}, {800, 5000, 1200, 7500, 248, 1553, 476, 0},
  };
  const DonutConfig config = Config(1553, 1200);
  for (const GeometryCase& c : cases) {
    Result<DonutGeometry> g = ComputeDonutGeometry(c.w, c.h, config);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_FALSE(g->rotate);
    EXPECT_EQ(g->resized_width, c.rw) << c.w << "x" << c.h;
    EXPECT_EQ(g->resized_height, c.rh) << c.w << "x" << c.h;
    EXPECT_EQ(g->thumb_width, c.tw) << c.w << "x" << c.h;
    EXPECT_EQ(g->thumb_height, c.th) << c.w << "x" << c.h;
    const PadOffsets pad = CenterPad(g->thumb_height, g->thumb_width, config);
    EXPECT_EQ(pad.left, c.pad_left);
    EXPECT_EQ(pad.top, c.pad_top);
  }
}

TEST(DonutGeometry, AlignLongAxisRotatesOnlyAgainstTheTarget) {
  DonutConfig config = Config(1553, 1200);
  config.align_long_axis = true;
  Result<DonutGeometry> landscape = ComputeDonutGeometry(2000, 1000, config);
  ASSERT_TRUE(landscape.ok());
  EXPECT_TRUE(landscape->rotate);
  EXPECT_EQ(landscape->aligned_width, 1000);
  EXPECT_EQ(landscape->resized_width, 1200);
  EXPECT_EQ(landscape->resized_height, 2400);
  Result<DonutGeometry> portrait = ComputeDonutGeometry(1000, 2000, config);
  ASSERT_TRUE(portrait.ok());
  EXPECT_FALSE(portrait->rotate);
  config.height = config.width = 1000;  // Square target: never rotates.
  Result<DonutGeometry> square = ComputeDonutGeometry(2000, 1000, config);
  ASSERT_TRUE(square.ok());
  EXPECT_FALSE(square->rotate);
}

TEST(DonutGeometry, RejectsEmptyImagesExtremeAspectsAndBadConfig) {
  const DonutConfig config = Config(1553, 1200);
  EXPECT_EQ(ComputeDonutGeometry(0, 10, config).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ComputeDonutGeometry(10, -1, config).status().code(), StatusCode::kInvalidArgument);
  // The thumbnail's width would be int(1200 * 1553 / 1.9e9) = 0.
  EXPECT_EQ(ComputeDonutGeometry(1, 1600000, config).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ComputeDonutGeometry(10, 10, Config(0, 10)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ComputeDonutGeometry(10, 10, Config(10, 70000)).status().code(),
            StatusCode::kInvalidArgument);
}

// The predicate the packer asks (CheckDonutResizable) gives exactly DonutResize's answer: an
// image it accepts resizes, one it refuses fails DonutResize with the same error.
TEST(CheckDonutResizable, AgreesWithDonutResize) {
  const DonutConfig config;
  for (const auto& [w, h] : {std::pair{1, 100000}, std::pair{100000, 1}, std::pair{3, 20000},
                             std::pair{40, 30}, std::pair{1, 1}}) {
    const Result<DonutGeometry> check = CheckDonutResizable(w, h, config);
    Image image{w, h, 1, std::vector<uint8_t>(static_cast<size_t>(w) * static_cast<size_t>(h), 9)};
    const Result<Image> resized = DonutResize(image, config);
    ASSERT_EQ(check.ok(), resized.ok()) << w << "x" << h << ": " << check.status().ToString()
                                        << " / " << resized.status().ToString();
    if (!check.ok()) {
      EXPECT_EQ(check.status().ToString(), resized.status().ToString());
    } else {
      EXPECT_EQ(resized->width, check->thumb_width);
      EXPECT_EQ(resized->height, check->thumb_height);
    }
  }
  // The thumbnail's short side would be 0 pixels.
  EXPECT_EQ(CheckDonutResizable(1, 100000, config).status().code(), StatusCode::kInvalidArgument);
}

TEST(ToDonutInput, DropsAlphaWithoutCompositing) {
  Image rgba{.width = 2, .height = 1, .channels = 4, .pixels = {10, 20, 30, 0, 40, 50, 60, 128}};
  Result<Image> rgb = ToDonutInput(rgba);
  ASSERT_TRUE(rgb.ok());
  EXPECT_EQ(rgb->channels, 3);
  EXPECT_EQ(rgb->pixels, (std::vector<uint8_t>{10, 20, 30, 40, 50, 60}));
  Image la{.width = 2, .height = 1, .channels = 2, .pixels = {7, 0, 9, 255}};
  Result<Image> l = ToDonutInput(la);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->channels, 1);
  EXPECT_EQ(l->pixels, (std::vector<uint8_t>{7, 9}));
  EXPECT_FALSE(ToDonutInput(Image{}).ok());
  Image short_buffer{.width = 2, .height = 2, .channels = 3, .pixels = {1, 2, 3}};
  EXPECT_EQ(ToDonutInput(short_buffer).status().code(), StatusCode::kInvalidArgument);
}

// RGBA takes a SIMD copy whose vectors hold 16 to 64 pixels: every width around those, each
// sample of each pixel checked.
TEST(ToDonutInput, DropsAlphaOfEveryPixelAtEveryWidth) {
  std::mt19937 rng(7);
  for (int32_t width = 1; width <= 200; ++width) {
    Image rgba{.width = width, .height = 3, .channels = 4, .pixels = {}};
    rgba.pixels.resize(static_cast<size_t>(width) * 3 * 4);
    for (uint8_t& v : rgba.pixels) v = static_cast<uint8_t>(rng());
    Result<Image> rgb = ToDonutInput(rgba);
    ASSERT_TRUE(rgb.ok());
    ASSERT_EQ(rgb->pixels.size(), static_cast<size_t>(width) * 3 * 3);
    for (size_t i = 0; i < static_cast<size_t>(width) * 3; ++i) {
      for (size_t c = 0; c < 3; ++c) {
        ASSERT_EQ(rgb->pixels[3 * i + c], rgba.pixels[4 * i + c])
            << "width " << width << " pixel " << i;
      }
    }
  }
}

// Pillow 13's Image.alpha_composite(white, RGBA (v, v, v, a)).convert("RGB") for these (v, a).
TEST(ToDonutInput, Version5CompositesOntoWhiteAsPillow) {
  const int pillow[][3] = {{0, 0, 255},    {0, 1, 254},    {0, 128, 127},
                           {0, 255, 0},    {100, 37, 233}, {200, 200, 212},
                           {255, 77, 255}, {13, 254, 14},  {77, 3, 253}};
  for (const auto& [v, a, want] : pillow) {
    EXPECT_EQ(CompositeOnWhite(static_cast<uint8_t>(v), static_cast<uint8_t>(a)), want)
        << v << "," << a;
  }
  DonutConfig v5;
  v5.hf_version = 5;
  Image rgba{.width = 2, .height = 1, .channels = 4, .pixels = {0, 100, 200, 128, 7, 8, 9, 255}};
  Result<Image> rgb = ToDonutInput(rgba, v5);
  ASSERT_TRUE(rgb.ok());
  EXPECT_EQ(rgb->channels, 3);
  EXPECT_EQ(rgb->pixels[0], CompositeOnWhite(0, 128));
  EXPECT_EQ(rgb->pixels[2], CompositeOnWhite(200, 128));
  EXPECT_EQ((std::vector<uint8_t>(rgb->pixels.begin() + 3, rgb->pixels.end())),
            (std::vector<uint8_t>{7, 8, 9}));
  Image la{.width = 1, .height = 1, .channels = 2, .pixels = {0, 0}};
  Result<Image> l = ToDonutInput(la, v5);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->channels, 1);
  EXPECT_EQ(l->pixels, (std::vector<uint8_t>{255}));  // fully transparent: white
  DonutConfig v4;
  EXPECT_EQ(ToDonutInput(la, v4)->pixels, (std::vector<uint8_t>{0}));  // 4.x drops alpha
}

TEST(ValidateDonutConfig, GenerationAndBackend) {
  DonutConfig config;
  config.hf_version = 3;
  EXPECT_NE(ValidateDonutConfig(config).message().find("hf_version"), std::string_view::npos);
  config.hf_version = 4;
  config.backend = DonutBackend::kTorchvision;
  EXPECT_NE(ValidateDonutConfig(config).message().find("torchvision"), std::string_view::npos);
  config.hf_version = 5;
  EXPECT_TRUE(ValidateDonutConfig(config).ok());
  EXPECT_EQ(ParseDonutBackend("torchvision").value(), DonutBackend::kTorchvision);
  EXPECT_EQ(ParseDonutBackend("cv2").status().code(), StatusCode::kInvalidArgument);
}

TEST(RotateClockwise, MatchesNumpyRot90K3) {
  // in (H=2, W=3): rows {0 1 2} {3 4 5}; np.rot90(in, 3) = {3 0} {4 1} {5 2}.
  Image in{.width = 3, .height = 2, .channels = 1, .pixels = {0, 1, 2, 3, 4, 5}};
  const Image out = RotateClockwise(in);
  EXPECT_EQ(out.width, 2);
  EXPECT_EQ(out.height, 3);
  EXPECT_EQ(out.pixels, (std::vector<uint8_t>{3, 0, 4, 1, 5, 2}));
}

TEST(DonutResize, GrayEqualsReplicatedRgb) {
  // Covers upscaling, a reduce() step (tall) and landscape.
  const std::pair<int32_t, int32_t> sizes[] = {{61, 83}, {40, 900}, {301, 97}};
  const DonutConfig config = Config(155, 120);
  for (auto [w, h] : sizes) {
    const Image gray = RandomImage(w, h, 1, static_cast<uint32_t>(w));
    Result<Image> from_gray = DonutResize(gray, config);
    Result<Image> from_rgb = DonutResize(Replicate(gray), config);
    ASSERT_TRUE(from_gray.ok() && from_rgb.ok());
    EXPECT_EQ(from_gray->channels, 1);
    EXPECT_EQ(Replicate(*from_gray).pixels, from_rgb->pixels) << w << "x" << h;
  }
}

TEST(DonutResize, OutputHasTheThumbnailSize) {
  const DonutConfig config = Config(155, 120);
  for (auto [w, h] : {std::pair{61, 83}, {40, 900}, {301, 97}, {120, 155}, {7, 7}}) {
    Result<Image> out = DonutResize(RandomImage(w, h, 3), config);
    Result<DonutGeometry> g = ComputeDonutGeometry(w, h, config);
    ASSERT_TRUE(out.ok() && g.ok());
    EXPECT_EQ(out->width, g->thumb_width);
    EXPECT_EQ(out->height, g->thumb_height);
    EXPECT_LE(out->width, 120);
    EXPECT_LE(out->height, 155);
  }
}

// Into a caller's image whose buffer holds an earlier, larger page of garbage: the same bytes as
// a fresh image, with and without the thumbnail and the rotation.
TEST(DonutResize, IntoAReusedImageGivesTheFreshBytes) {
  for (const auto& [w, h] : {std::pair{300, 410}, std::pair{410, 300}, std::pair{64, 64}}) {
    for (bool align : {false, true}) {
      DonutConfig config = Config(120, 90);
      config.align_long_axis = align;
      const Image image = RandomImage(w, h, 3);
      Result<Image> fresh = DonutResize(image, config);
      ASSERT_TRUE(fresh.ok());
      Image reused = RandomImage(500, 500, 3);
      ASSERT_TRUE(DonutResizeInto(image, config, &reused).ok());
      EXPECT_EQ(reused.width, fresh->width);
      EXPECT_EQ(reused.height, fresh->height);
      EXPECT_EQ(reused.channels, fresh->channels);
      EXPECT_EQ(reused.pixels, fresh->pixels) << w << "x" << h << " align " << align;
    }
  }
}

TEST(DonutResize, RejectsAlphaAndEmptyImages) {
  const DonutConfig config = Config(155, 120);
  EXPECT_EQ(DonutResize(RandomImage(10, 10, 4), config).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(DonutResize(Image{}, config).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DonutResize(RandomImage(10, 10, 3), Config(-1, 5)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(DonutResizeScaled, ScaleOneIsDonutResize) {
  const DonutConfig config = Config(155, 120);
  const Image image = RandomImage(300, 410, 3);
  Result<Image> plain = DonutResize(image, config);
  Result<Image> scaled = DonutResizeScaled(
      ScaledSource{.image = image, .full_width = 300, .full_height = 410}, config);
  ASSERT_TRUE(plain.ok() && scaled.ok());
  EXPECT_EQ(plain->pixels, scaled->pixels);
  // A scaled image must be ceil(full / k).
  EXPECT_FALSE(
      DonutResizeScaled(
          ScaledSource{.image = image, .full_width = 900, .full_height = 1230, .scale_denom = 2},
          config)
          .ok());
}

std::vector<uint8_t> ReadSample(const std::string& name) {
  Result<std::vector<uint8_t>> bytes =
      ReadFile(std::string(DOCFEED_TEST_DATA_DIR) + "/sample-docs/" + name);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

double MeanAbsDiff(const Image& a, const Image& b) {
  double sum = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) sum += std::abs(a.pixels[i] - b.pixels[i]);
  return sum / static_cast<double>(a.pixels.size());
}

TEST(FastMode, ScaledJpegDecodeIsCloseToExact) {
  const std::vector<uint8_t> bytes = ReadSample("sroie/027.jpg");  // 1654 x 2339 RGB
  DonutConfig config = Config(640, 480);
  Result<ScaledSource> exact = DecodeForDonut(bytes, config, DonutDecodeMode::kExact);
  Result<ScaledSource> fast = DecodeForDonut(bytes, config, DonutDecodeMode::kFast);
  ASSERT_TRUE(exact.ok() && fast.ok()) << fast.status().ToString();
  EXPECT_EQ(exact->scale_denom, 1);
  EXPECT_EQ(fast->scale_denom, 2);  // 480 * 3 > 1654 >= 480 * 2
  EXPECT_EQ(fast->image.width, 827);
  EXPECT_EQ(fast->image.height, 1170);  // ceil(2339 / 2)
  EXPECT_EQ(fast->full_width, 1654);
  for (bool align : {false, true}) {
    config.align_long_axis = align;
    config.width = align ? 640 : 480;  // With align, a landscape target rotates the page.
    config.height = align ? 480 : 640;
    Result<Image> a = DonutResizeScaled(*exact, config);
    Result<Image> b = DonutResizeScaled(*fast, config);
    ASSERT_TRUE(a.ok() && b.ok()) << b.status().ToString();
    ASSERT_EQ(a->width, b->width);
    ASSERT_EQ(a->height, b->height);
    EXPECT_LT(MeanAbsDiff(*a, *b), 2.0) << "align " << align;
  }
}

TEST(FastMode, ChoosesPowerOfTwoScales) {
  EXPECT_EQ(ChooseJpegScaleDenom(2481, 3508, 1200, 1696), 2);
  EXPECT_EQ(ChooseJpegScaleDenom(4961, 7016, 1200, 1696), 4);
  EXPECT_EQ(ChooseJpegScaleDenom(1654, 2339, 1200, 1696), 1);
  EXPECT_EQ(ChooseJpegScaleDenom(9600, 13568, 1200, 1696), 8);
  EXPECT_FALSE(DecodeJpegScaled(ReadSample("sroie/027.jpg"), 3).ok());
  const std::vector<uint8_t> png = ReadSample("invoices/simple-invoice.png");
  EXPECT_EQ(DecodeJpegScaled(png, 2).status().code(), StatusCode::kInvalidArgument);
  std::vector<uint8_t> truncated = ReadSample("sroie/027.jpg");
  truncated.resize(truncated.size() / 2);
  EXPECT_FALSE(DecodeJpegScaled(truncated, 2).ok());
}

// ---- DecodeAndResizeForDonut: the streamed decode + resizes ----

// The whole-image path the stream must equal.
Result<Image> DecodeThenResize(std::span<const uint8_t> bytes, const DonutConfig& config,
                               DonutDecodeMode mode) {
  DOCFEED_ASSIGN_OR_RETURN(const ScaledSource source, DecodeForDonut(bytes, config, mode));
  return DonutResizeScaled(source, config);
}

// Smooth gradients with sharp "text" strokes, so that JPEG keeps detail in every band.
Image PageLike(int32_t w, int32_t h, int32_t c, uint32_t seed) {
  Image image = RandomImage(w, h, c, seed);
  for (int32_t y = 0; y < h; ++y) {
    for (int32_t x = 0; x < w * c; ++x) {
      uint8_t& p = image.pixels[static_cast<size_t>(y) * w * c + x];
      p = ((x / c + y) / 9) % 4 == 0 ? static_cast<uint8_t>(p / 4)
                                     : static_cast<uint8_t>(200 + p % 50);
    }
  }
  return image;
}

TEST(DecodeAndResizeForDonut, StreamedJpegEqualsWholeImagePath) {
  struct Case {
    int32_t w, h, c, cfg_h, cfg_w;
    bool align, fast;
  };
  // Portrait and landscape pages, a tall receipt (vertical pass first), an upscale, gray, fast
  // mode (DCT-scaled bands), a rotation and a thumbnail that needs reduce() (both take the
  // whole-image path), and a target that needs no thumbnail.
  const Case cases[] = {
      {620, 877, 3, 776, 600, false, false},  {877, 620, 3, 776, 600, false, false},
      {300, 1500, 3, 776, 600, false, false}, {200, 283, 3, 776, 600, false, false},
      {620, 877, 1, 776, 600, false, false},  {1300, 1800, 3, 320, 240, false, true},
      {877, 620, 3, 776, 600, true, false},   {300, 3000, 1, 320, 240, false, false},
      {400, 400, 3, 300, 300, false, false}};
  for (const Case& k : cases) {
    SCOPED_TRACE(std::to_string(k.w) + "x" + std::to_string(k.h) + "x" + std::to_string(k.c));
    Result<std::vector<uint8_t>> jpeg = EncodeJpeg(PageLike(k.w, k.h, k.c, 3), 90);
    ASSERT_TRUE(jpeg.ok());
    DonutConfig config = Config(k.cfg_h, k.cfg_w);
    config.align_long_axis = k.align;
    const DonutDecodeMode mode = k.fast ? DonutDecodeMode::kFast : DonutDecodeMode::kExact;
    Result<Image> want = DecodeThenResize(*jpeg, config, mode);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    Image got = RandomImage(7, 5, 3);  // Reused output with other contents.
    ASSERT_TRUE(DecodeAndResizeForDonut(*jpeg, config, mode, &got).ok());
    EXPECT_EQ(got.width, want->width);
    EXPECT_EQ(got.height, want->height);
    EXPECT_EQ(got.channels, want->channels);
    EXPECT_EQ(got.pixels, want->pixels);
  }
}

TEST(DecodeAndResizeForDonut, SampleScanAndOtherFormats) {
  const DonutConfig config = Config(1553, 1200);
  for (const char* name : {"sroie/027.jpg", "invoices/simple-invoice.png"}) {
    const std::vector<uint8_t> bytes = ReadSample(name);
    Result<Image> want = DecodeThenResize(bytes, config, DonutDecodeMode::kExact);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    Image got;
    ASSERT_TRUE(DecodeAndResizeForDonut(bytes, config, DonutDecodeMode::kExact, &got).ok());
    EXPECT_EQ(got.pixels, want->pixels) << name;
  }
}

TEST(DecodeAndResizeForDonut, ErrorsAreThoseOfTheWholeImagePath) {
  const DonutConfig config = Config(1553, 1200);
  std::vector<uint8_t> truncated = ReadSample("sroie/027.jpg");
  truncated.resize(truncated.size() * 2 / 3);
  Image out;
  const Status got = DecodeAndResizeForDonut(truncated, config, DonutDecodeMode::kExact, &out);
  const Result<Image> want = DecodeThenResize(truncated, config, DonutDecodeMode::kExact);
  ASSERT_FALSE(got.ok());
  ASSERT_FALSE(want.ok());
  EXPECT_EQ(got.ToString(), want.status().ToString());
  // Scan data cut to 1000 bytes and closed with EOI, which libjpeg would decode to gray: the
  // stream declines it and DecodeImage refuses it.
  const std::vector<uint8_t> short_scan =
      testing::JpegWithScanCutShort(ReadSample("sroie/027.jpg"), 1000);
  ASSERT_FALSE(short_scan.empty());
  const Status short_got =
      DecodeAndResizeForDonut(short_scan, config, DonutDecodeMode::kExact, &out);
  const Result<Image> short_want = DecodeThenResize(short_scan, config, DonutDecodeMode::kExact);
  ASSERT_FALSE(short_want.ok());
  EXPECT_EQ(short_got.ToString(), short_want.status().ToString());
  std::vector<uint8_t> garbage(100, 0xFF);
  garbage[0] = 0xFF, garbage[1] = 0xD8, garbage[2] = 0xFF;
  EXPECT_FALSE(DecodeAndResizeForDonut(garbage, config, DonutDecodeMode::kExact, &out).ok());
  EXPECT_FALSE(DecodeAndResizeForDonut({}, config, DonutDecodeMode::kExact, &out).ok());
}

// ---- padding ----

TEST(Pad, CenterIsFloorHalf) {
  const DonutConfig config = Config(10, 7);
  const PadOffsets p = CenterPad(5, 4, config);
  EXPECT_EQ(p.top, 2);
  EXPECT_EQ(p.left, 1);
  const PadOffsets full = CenterPad(10, 7, config);
  EXPECT_EQ(full.top, 0);
  EXPECT_EQ(full.left, 0);
}

TEST(Pad, RandomOffsetsStayInRangeAndReachEveryOffset) {
  const DonutConfig config = Config(12, 9);
  std::set<std::pair<int32_t, int32_t>> seen;
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    PadRng rng(seed);
    const PadOffsets p = DrawPad(8, 4, config, rng);  // top in 0..4, left in 0..5
    ASSERT_GE(p.top, 0);
    ASSERT_LE(p.top, 4);
    ASSERT_GE(p.left, 0);
    ASSERT_LE(p.left, 5);
    seen.insert({p.top, p.left});
  }
  EXPECT_EQ(seen.size(), 30u);
}

TEST(Pad, SameSeedSameOffsetsAndTopIsDrawnFirst) {
  const DonutConfig config = Config(1553, 1200);
  PadRng a(42), b(42);
  for (int i = 0; i < 100; ++i) {
    const PadOffsets pa = DrawPad(1000, 700, config, a);
    const PadOffsets pb = DrawPad(1000, 700, config, b);
    EXPECT_EQ(pa.top, pb.top);
    EXPECT_EQ(pa.left, pb.left);
  }
  PadRng draw(7), manual(7);
  const PadOffsets p = DrawPad(1000, 700, config, draw);
  EXPECT_EQ(p.top, static_cast<int32_t>(manual.UniformInclusive(553)));
  EXPECT_EQ(p.left, static_cast<int32_t>(manual.UniformInclusive(500)));
  // No room: the only offset is 0 (np.random.randint(0, 1) == 0).
  PadRng rng(3);
  const PadOffsets none = DrawPad(1553, 1200, config, rng);
  EXPECT_EQ(none.top, 0);
  EXPECT_EQ(none.left, 0);
}

TEST(PadRng, UniformInclusiveIsRoughlyUniformAndCoversEnds) {
  PadRng rng(123);
  std::vector<int> counts(7);
  const int draws = 70000;
  for (int i = 0; i < draws; ++i) ++counts[rng.UniformInclusive(6)];
  double chi2 = 0;
  for (int c : counts) chi2 += (c - draws / 7.0) * (c - draws / 7.0) / (draws / 7.0);
  EXPECT_LT(chi2, 22.5);  // p = 0.001 at 6 degrees of freedom.
  EXPECT_EQ(rng.UniformInclusive(0), 0u);
  bool big = false;
  for (int i = 0; i < 64; ++i) big |= rng.UniformInclusive(0xFFFFFFFFu) > 0x80000000u;
  EXPECT_TRUE(big);
}

TEST(PadRng, ForSampleSeparatesSamplesAndEpochs) {
  std::set<uint64_t> firsts;
  for (uint64_t epoch = 0; epoch < 4; ++epoch) {
    for (uint64_t i = 0; i < 50; ++i) firsts.insert(PadRng::ForSample(9, epoch, i).Next());
  }
  EXPECT_EQ(firsts.size(), 200u);
  EXPECT_EQ(PadRng::ForSample(9, 1, 2).Next(), PadRng::ForSample(9, 1, 2).Next());
}

TEST(DonutPad, PlacesImageAndZeroFills) {
  const Image gray{.width = 2, .height = 1, .channels = 1, .pixels = {5, 6}};
  Image out{.width = 4, .height = 3, .channels = 3, .pixels = std::vector<uint8_t>(36, 77)};
  ASSERT_TRUE(DonutPad(ViewOf(gray), PadOffsets{.top = 1, .left = 2}, MutableViewOf(out)).ok());
  std::vector<uint8_t> expected(36, 0);
  for (int c = 0; c < 3; ++c) {
    expected[static_cast<size_t>((1 * 4 + 2) * 3 + c)] = 5;
    expected[static_cast<size_t>((1 * 4 + 3) * 3 + c)] = 6;
  }
  EXPECT_EQ(out.pixels, expected);
  EXPECT_EQ(DonutPad(ViewOf(gray), PadOffsets{.top = 0, .left = 3}, MutableViewOf(out)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(DonutPad(ViewOf(gray), PadOffsets{.top = -1, .left = 0}, MutableViewOf(out)).code(),
            StatusCode::kInvalidArgument);
  Image rgba = RandomImage(1, 1, 4);
  EXPECT_FALSE(DonutPad(ViewOf(rgba), PadOffsets{}, MutableViewOf(out)).ok());
  Image gray_out = RandomImage(4, 3, 1);
  EXPECT_FALSE(DonutPad(ViewOf(gray), PadOffsets{}, MutableViewOf(gray_out)).ok());
}

}  // namespace
}  // namespace docfeed::internal
