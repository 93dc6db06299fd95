// crop_margin's edge cases (imaging/nougat.h): the degenerate pages, the threshold, boxes touching
// every border, and the scan against a brute-force bounding box. The pixel values of the whole
// preset are compared with transformers in tests/python/test_hf_nougat_parity.py.
#include "imaging/nougat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "imaging/luma_range.h"

namespace docfeed::internal {
namespace {

Image Filled(int32_t width, int32_t height, int32_t channels, uint8_t value) {
  Image image{.width = width, .height = height, .channels = channels, .pixels = {}};
  image.pixels.assign(image.stride_bytes() * static_cast<size_t>(height), value);
  return image;
}

void Set(Image& image, int32_t x, int32_t y, uint8_t value) {
  for (int32_t c = 0; c < image.channels; ++c) {
    image.pixels[(static_cast<size_t>(y) * image.width + x) * image.channels + c] = value;
  }
}

CropBox BoxOf(const Image& image) {
  Result<CropBox> box = NougatMarginBox(ViewOf(image));
  EXPECT_TRUE(box.ok()) << box.status().ToString();
  return box.ok() ? *box : CropBox{};
}

void ExpectBox(const CropBox& box, int32_t x, int32_t y, int32_t w, int32_t h) {
  EXPECT_EQ(box.x, x);
  EXPECT_EQ(box.y, y);
  EXPECT_EQ(box.width, w);
  EXPECT_EQ(box.height, h);
}

// The processor's rule written out plainly: gray, min/max, the float64 threshold, the bounding
// box over every pixel.
CropBox BruteForceBox(const Image& image) {
  std::vector<uint8_t> gray(static_cast<size_t>(image.width) * image.height);
  for (size_t i = 0; i < gray.size(); ++i) {
    const uint8_t* p = image.pixels.data() + i * image.channels;
    gray[i] = image.channels == 1 ? p[0] : PillowLuma(p[0], p[1], p[2]);
  }
  const auto [lo, hi] = std::minmax_element(gray.begin(), gray.end());
  if (*lo == *hi) return CropBox{0, 0, image.width, image.height};
  int32_t x0 = image.width, y0 = image.height, x1 = -1, y1 = -1;
  for (int32_t y = 0; y < image.height; ++y) {
    for (int32_t x = 0; x < image.width; ++x) {
      const uint8_t g = gray[static_cast<size_t>(y) * image.width + x];
      if (static_cast<double>(g - *lo) / static_cast<double>(*hi - *lo) * 255.0 < 200.0) {
        x0 = std::min(x0, x);
        y0 = std::min(y0, y);
        x1 = std::max(x1, x);
        y1 = std::max(y1, y);
      }
    }
  }
  return CropBox{x0, y0, x1 - x0 + 1, y1 - y0 + 1};
}

TEST(PillowLuma, IsPillowsConvertL) {
  for (int v = 0; v < 256; ++v) {
    const auto u = static_cast<uint8_t>(v);
    EXPECT_EQ(PillowLuma(u, u, u), u);  // 19595 + 38470 + 7471 = 65536
  }
  // Image.new("RGB", (1, 1), c).convert("L").getpixel((0, 0)) with Pillow 13.
  EXPECT_EQ(PillowLuma(255, 0, 0), 76);
  EXPECT_EQ(PillowLuma(0, 255, 0), 150);
  EXPECT_EQ(PillowLuma(0, 0, 255), 29);
  EXPECT_EQ(PillowLuma(200, 40, 90), 94);
}

// The SIMD scan crop_margin runs on RGB rows (luma_range.h) against PillowLuma pixel by pixel:
// random rows of every width up to a few vectors (the last pixels go one at a time), rows of
// one colour for every gray and 100,000 random colours (every lane must give that colour's exact
// luma), and a range that it must only ever widen.
TEST(ExtendLumaRangeRgb, EqualsPillowLumaPixelByPixel) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    const size_t width = 1 + rng() % 70;
    std::vector<uint8_t> row(3 * width);
    for (uint8_t& v : row) v = static_cast<uint8_t>(rng());
    uint8_t want_lo = 255, want_hi = 0;
    for (size_t x = 0; x < width; ++x) {
      const uint8_t g = PillowLuma(row[3 * x], row[3 * x + 1], row[3 * x + 2]);
      want_lo = std::min(want_lo, g);
      want_hi = std::max(want_hi, g);
    }
    uint8_t lo = 255, hi = 0;
    ExtendLumaRangeRgb(row.data(), width, &lo, &hi);
    ASSERT_EQ(lo, want_lo) << "trial " << trial << " width " << width;
    ASSERT_EQ(hi, want_hi) << "trial " << trial << " width " << width;
  }
  std::vector<uint8_t> row(3 * 64);
  for (int trial = 0; trial < 100000 + 256; ++trial) {
    // Every gray v, v, v first (luma v, black and white among them), then random colours.
    const uint32_t colour =
        trial < 256 ? 0x010101u * static_cast<uint32_t>(trial) : rng() & 0xFFFFFF;
    const auto r = static_cast<uint8_t>(colour), g = static_cast<uint8_t>(colour >> 8),
               b = static_cast<uint8_t>(colour >> 16);
    for (size_t x = 0; x < 64; ++x) {
      row[3 * x] = r;
      row[3 * x + 1] = g;
      row[3 * x + 2] = b;
    }
    uint8_t lo = 255, hi = 0;
    ExtendLumaRangeRgb(row.data(), 64, &lo, &hi);
    const uint8_t want = PillowLuma(r, g, b);
    ASSERT_EQ(lo, want) << int{r} << "," << int{g} << "," << int{b};
    ASSERT_EQ(hi, want) << int{r} << "," << int{g} << "," << int{b};
  }
  const std::vector<uint8_t> mid(3 * 40, 128);  // luma 128 everywhere
  uint8_t lo = 10, hi = 20;
  ExtendLumaRangeRgb(mid.data(), 40, &lo, &hi);
  EXPECT_EQ(lo, 10);
  EXPECT_EQ(hi, 128);
  lo = 200, hi = 250;
  ExtendLumaRangeRgb(mid.data(), 40, &lo, &hi);
  EXPECT_EQ(lo, 128);
  EXPECT_EQ(hi, 250);
}

TEST(NougatDarkValues, ThresholdOfTheNormalizedGray) {
  // The first value numpy's (v - lo) / (hi - lo) * 255 puts at or above 200, per (lo, hi).
  struct Case {
    uint8_t lo, hi, first_light;
  };
  for (const Case& c :
       {Case{0, 255, 200}, Case{10, 250, 199}, Case{100, 151, 140}, Case{3, 4, 4},
        Case{254, 255, 255}, Case{17, 102, 84}, Case{1, 255, 201}, Case{0, 254, 200}}) {
    const std::array<bool, 256> dark = NougatDarkValues(c.lo, c.hi);
    for (int v = 0; v < 256; ++v) {
      EXPECT_EQ(dark[static_cast<size_t>(v)], v >= c.lo && v < c.first_light)
          << int{c.lo} << ".." << int{c.hi} << " v " << v;
    }
  }
}

TEST(NougatMarginBox, OneGrayValueKeepsTheWholePage) {
  for (uint8_t value : {uint8_t{255}, uint8_t{0}, uint8_t{137}}) {
    for (int32_t channels : {1, 3}) {
      ExpectBox(BoxOf(Filled(40, 30, channels, value)), 0, 0, 40, 30);
    }
  }
  ExpectBox(BoxOf(Filled(1, 1, 3, 255)), 0, 0, 1, 1);
}

TEST(NougatMarginBox, OneDarkPixelAnywhere) {
  for (auto [x, y] : {std::pair{0, 0}, std::pair{39, 0}, std::pair{0, 29}, std::pair{39, 29},
                      std::pair{17, 11}}) {
    Image page = Filled(40, 30, 3, 255);
    Set(page, x, y, 0);
    ExpectBox(BoxOf(page), x, y, 1, 1);
  }
}

TEST(NougatMarginBox, BottomRowInsideTheTopRowsColumns) {
  // The bottom row's only dark pixel lies within the columns the top row already covers: the
  // box must still reach it.
  Image page = Filled(20, 15, 1, 255);
  for (int32_t x = 3; x <= 12; ++x) Set(page, x, 2, 0);
  Set(page, 7, 11, 0);
  ExpectBox(BoxOf(page), 3, 2, 10, 10);
  // A middle row widening the box on both sides, and a light (not dark) pixel outside it.
  Set(page, 1, 6, 10);
  Set(page, 18, 8, 30);
  Set(page, 19, 9, 220);
  ExpectBox(BoxOf(page), 1, 2, 18, 10);
}

TEST(NougatMarginBox, LightMarginsAroundLightContent) {
  // Gray range 180..255: dark is below 180 + 75 * 200 / 255 = 238.8, so 238 is content and
  // 239 margin.
  Image page = Filled(30, 20, 3, 255);
  Set(page, 10, 5, 180);
  Set(page, 2, 15, 238);
  Set(page, 28, 1, 239);
  ExpectBox(BoxOf(page), 2, 5, 9, 11);
}

TEST(NougatMarginBox, MatchesTheBruteForceBoxOnRandomPages) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int32_t w = 1 + static_cast<int32_t>(rng() % 40);
    const int32_t h = 1 + static_cast<int32_t>(rng() % 40);
    const int32_t channels = trial % 2 == 0 ? 1 : 3;
    const auto background = static_cast<uint8_t>(200 + rng() % 56);
    Image page = Filled(w, h, channels, background);
    const int dots = static_cast<int>(rng() % 6);
    for (int i = 0; i < dots; ++i) {
      const auto x = static_cast<int32_t>(rng() % static_cast<uint32_t>(w));
      const auto y = static_cast<int32_t>(rng() % static_cast<uint32_t>(h));
      for (int32_t c = 0; c < channels; ++c) {
        page.pixels[(static_cast<size_t>(y) * w + x) * channels + c] =
            static_cast<uint8_t>(rng() % 256);
      }
    }
    const CropBox want = BruteForceBox(page);
    const CropBox got = BoxOf(page);
    ExpectBox(got, want.x, want.y, want.width, want.height);
    if (HasFailure()) {
      ADD_FAILURE() << "trial " << trial << " " << w << "x" << h;
      return;
    }
  }
}

TEST(NougatCropMargin, CopiesTheBoxAndMovesAWholePage) {
  Image page = Filled(6, 5, 3, 255);
  Set(page, 1, 1, 0);
  Set(page, 3, 2, 50);
  page.pixels[(2 * 6 + 3) * 3 + 2] = 99;  // a coloured pixel inside the box
  Result<Image> cropped = NougatCropMargin(page);
  ASSERT_TRUE(cropped.ok()) << cropped.status().ToString();
  ASSERT_EQ(cropped->width, 3);
  ASSERT_EQ(cropped->height, 2);
  ASSERT_EQ(cropped->channels, 3);
  for (int32_t y = 0; y < 2; ++y) {
    for (int32_t x = 0; x < 3; ++x) {
      for (int32_t c = 0; c < 3; ++c) {
        EXPECT_EQ(cropped->pixels[(static_cast<size_t>(y) * 3 + x) * 3 + c],
                  page.pixels[(static_cast<size_t>(y + 1) * 6 + x + 1) * 3 + c]);
      }
    }
  }
  const Image white = Filled(6, 5, 1, 255);
  Result<Image> same = NougatCropMargin(white);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->pixels, white.pixels);
  EXPECT_EQ(same->width, 6);
}

TEST(NougatCropMargin, RefusesAlphaAndEmptyImages) {
  EXPECT_EQ(NougatCropMargin(Filled(4, 4, 2, 0)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NougatCropMargin(Filled(4, 4, 4, 0)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NougatCropMargin(Image{}).status().code(), StatusCode::kInvalidArgument);
  Image short_pixels = Filled(4, 4, 3, 0);
  short_pixels.pixels.pop_back();
  EXPECT_EQ(NougatCropMargin(short_pixels).status().code(), StatusCode::kInvalidArgument);
}

TEST(NougatResize, CropsThenResizesAsDonut4) {
  NougatConfig config;  // 896 x 672
  // An all-white 400 x 500 page is not cropped: shortest edge 672 -> 672 x 840, which fits.
  Result<Image> white = NougatResize(Filled(400, 500, 3, 255), config);
  ASSERT_TRUE(white.ok()) << white.status().ToString();
  EXPECT_EQ(white->width, 672);
  EXPECT_EQ(white->height, 840);
  // One dark pixel: cropped to 1 x 1, resized to 672 x 672.
  Image dot = Filled(400, 500, 1, 255);
  Set(dot, 100, 200, 0);
  Result<Image> resized = NougatResize(dot, config);
  ASSERT_TRUE(resized.ok());
  EXPECT_EQ(resized->width, 672);
  EXPECT_EQ(resized->height, 672);
  EXPECT_EQ(resized->channels, 1);
  EXPECT_EQ(resized->pixels.front(), 0);
  // Without crop_margin the page keeps its 4:5 shape.
  config.do_crop_margin = false;
  resized = NougatResize(dot, config);
  ASSERT_TRUE(resized.ok());
  EXPECT_EQ(resized->height, 840);
  // The thumbnail is 4.x's in both generations.
  config.hf_version = 5;
  const DonutResampling r = ResamplingOf(NougatGeometry(config));
  EXPECT_EQ(r.thumbnail_filter, ResampleFilter::kBicubic);
  EXPECT_EQ(r.thumbnail_reducing_gap, 2.0);
  EXPECT_EQ(NougatConversion(config).hf_version, 5);
}

TEST(ValidateNougatConfig, NamesTheBadField) {
  EXPECT_TRUE(ValidateNougatConfig(NougatConfig{}).ok());
  NougatConfig c;
  c.do_pad = false;
  EXPECT_NE(ValidateNougatConfig(c).message().find("do_pad"), std::string_view::npos);
  c = {};
  c.hf_version = 6;
  EXPECT_NE(ValidateNougatConfig(c).message().find("hf_version"), std::string_view::npos);
  c = {};
  c.height = 0;
  EXPECT_EQ(ValidateNougatConfig(c).code(), StatusCode::kInvalidArgument);
  c = {};
  c.std[1] = 0;
  const Status s = ValidateNougatConfig(c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(s.message().starts_with("nougat: image_std[1]")) << s.ToString();
}

}  // namespace
}  // namespace docfeed::internal
