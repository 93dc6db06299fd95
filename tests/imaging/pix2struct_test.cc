// Properties of the Pix2Struct grid and patch layout that hold for every size; the values
// themselves are compared with transformers in tests/python/test_hf_pix2struct_parity.py.
#include "imaging/pix2struct.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "kernels/simd_mode.h"

namespace docfeed::internal {
namespace {

// google/pix2struct-base's settings on an A4 scan at 200 dpi: scale = sqrt(2048 * 16 / 2339 *
// 16 / 1654) = 0.3680..., rows = floor(0.368 * 2339 / 16) = 53, cols = floor(0.368 * 1654 / 16)
// = 38.
TEST(Pix2StructGrid, FollowsTheProcessorOnAnA4Page) {
  const Pix2StructConfig config;
  Result<Pix2StructGrid> g = ComputePix2StructGrid(2339, 1654, config);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->rows, 53);
  EXPECT_EQ(g->cols, 38);
}

// Never more than max_patches, never an empty side, for every size and budget tried.
TEST(Pix2StructGrid, StaysWithinTheBudget) {
  for (const int32_t max_patches : {1, 2, 7, 64, 256, 2048}) {
    Pix2StructConfig config;
    config.max_patches = max_patches;
    for (int64_t h : {1, 2, 15, 16, 17, 333, 4096, 100000}) {
      for (int64_t w : {1, 3, 16, 500, 7016, 100000}) {
        Result<Pix2StructGrid> g = ComputePix2StructGrid(h, w, config);
        ASSERT_TRUE(g.ok()) << h << "x" << w;
        EXPECT_GE(g->rows, 1);
        EXPECT_GE(g->cols, 1);
        EXPECT_LE(int64_t{g->rows} * g->cols, max_patches) << h << "x" << w;
      }
    }
  }
  EXPECT_EQ(ComputePix2StructGrid(0, 5, Pix2StructConfig{}).status().code(),
            StatusCode::kInvalidArgument);
}

// Rows are [row + 1, col + 1, (y, x, channel) values], row-major over the grid, then zeros; a
// constant page standardizes to 0 (std floored, mean exact) whatever the resize.
TEST(Pix2StructPatches, LaysOutIdsThenZeroRows) {
  Pix2StructConfig config;
  config.max_patches = 10;
  config.patch_height = 2;
  config.patch_width = 3;
  const int32_t width = 30, height = 20;
  std::vector<uint8_t> pixels(static_cast<size_t>(width * height * 3), 77);
  Result<Pix2StructGrid> g = ComputePix2StructGrid(height, width, config);
  ASSERT_TRUE(g.ok());
  const int64_t row = Pix2StructRowValues(config);
  ASSERT_EQ(row, 2 + 3 * 2 * 3);
  std::vector<float> out(static_cast<size_t>(config.max_patches * row), -1.0f);
  ASSERT_TRUE(
      Pix2StructPatches({pixels.data(), width, height, 3, width * 3}, config, out.data()).ok());
  int64_t p = 0;
  for (int32_t r = 0; r < g->rows; ++r) {
    for (int32_t c = 0; c < g->cols; ++c, ++p) {
      EXPECT_EQ(out[static_cast<size_t>(p * row)], static_cast<float>(r + 1));
      EXPECT_EQ(out[static_cast<size_t>(p * row + 1)], static_cast<float>(c + 1));
      for (int64_t v = 2; v < row; ++v) EXPECT_EQ(out[static_cast<size_t>(p * row + v)], 0.0f);
    }
  }
  for (; p < config.max_patches; ++p) {
    for (int64_t v = 0; v < row; ++v) EXPECT_EQ(out[static_cast<size_t>(p * row + v)], 0.0f);
  }
}

// The AVX2 passes (statistics, both resize passes, the patch rows' interleave) and the scalar
// ones do the same float arithmetic in the same order: the outputs are equal bit for bit, on
// pages whose leaves end at every remainder mod 8, that shrink and grow, and are gray (one
// channel read as three), with patch rows of 16 values and of widths that leave a remainder.
TEST(Pix2StructPatches, SimdAndScalarPathsAreBitIdentical) {
  std::mt19937 rng(5);
  struct Case {
    int32_t width, height, channels, max_patches, patch_width = 16;
  };
  for (const Case& k : {Case{301, 457, 3, 256}, Case{97, 13, 3, 2048}, Case{640, 480, 1, 512},
                        Case{1203, 1701, 3, 2048}, Case{17, 1000, 3, 64}, Case{301, 457, 3, 256, 9},
                        Case{120, 90, 3, 128, 7}, Case{640, 480, 1, 300, 25}}) {
    std::vector<uint8_t> pixels(static_cast<size_t>(k.width * k.height * k.channels));
    // Skewed values, so the mean and std are not round numbers.
    for (uint8_t& v : pixels)
      v = static_cast<uint8_t>(std::min<uint32_t>(static_cast<uint32_t>(rng() % 300), 255));
    Pix2StructConfig config;
    config.max_patches = k.max_patches;
    config.patch_width = k.patch_width;
    const size_t values = static_cast<size_t>(config.max_patches * Pix2StructRowValues(config));
    const ImageView page{pixels.data(), k.width, k.height, k.channels, k.width * k.channels};
    std::vector<float> simd(values), scalar(values);
    ASSERT_TRUE(Pix2StructPatches(page, config, simd.data()).ok());
    SetSimdModeOverride(SimdMode::kScalar);
    const Status s = Pix2StructPatches(page, config, scalar.data());
    ClearSimdModeOverride();
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(std::memcmp(simd.data(), scalar.data(), values * sizeof(float)), 0)
        << k.width << "x" << k.height << "x" << k.channels << " patch width " << k.patch_width;
  }
}

// The AVX2 horizontal pass runs the columns that share a tap count eight (or four) chains at a
// time, the rest one by one, and transposes 8 x 8 tiles into the rows; the vertical pass runs
// four vectors of columns at a time, then one, then single columns. Shrinking and growing pages
// whose widths leave every kind of remainder (groups, tiles, vectors), whose neighbouring columns
// differ in count, whose heights are not a multiple of eight, narrow and gray: the same bits as
// the scalar path.
TEST(Pix2StructPatches, SimdColumnGroupsMatchTheScalarPathAtTheEdges) {
  std::mt19937 rng(11);
  struct Case {
    int32_t width, height, channels, max_patches, patch_height, patch_width;
  };
  for (const Case& k :
       {Case{1000, 999, 3, 100, 16, 16}, Case{997, 61, 3, 2048, 5, 13}, Case{640, 480, 3, 4, 16, 1},
        Case{33, 7, 3, 512, 3, 3}, Case{2, 1, 3, 64, 16, 16}, Case{1, 500, 1, 64, 7, 5},
        Case{803, 1203, 1, 777, 11, 9}, Case{4099, 57, 3, 64, 1, 37}, Case{300, 300, 3, 36, 16, 16},
        Case{77, 1001, 1, 2048, 2, 3}, Case{1280, 17, 3, 200, 16, 8}}) {
    std::vector<uint8_t> pixels(static_cast<size_t>(k.width * k.height * k.channels));
    for (uint8_t& v : pixels) v = static_cast<uint8_t>(rng() % 256);
    Pix2StructConfig config;
    config.max_patches = k.max_patches;
    config.patch_height = k.patch_height;
    config.patch_width = k.patch_width;
    const size_t values = static_cast<size_t>(config.max_patches * Pix2StructRowValues(config));
    const ImageView page{pixels.data(), k.width, k.height, k.channels, k.width * k.channels};
    std::vector<float> simd(values), scalar(values);
    ASSERT_TRUE(Pix2StructPatches(page, config, simd.data()).ok());
    SetSimdModeOverride(SimdMode::kScalar);
    const Status s = Pix2StructPatches(page, config, scalar.data());
    ClearSimdModeOverride();
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(std::memcmp(simd.data(), scalar.data(), values * sizeof(float)), 0)
        << k.width << "x" << k.height << "x" << k.channels << " patches " << k.patch_height << "x"
        << k.patch_width << " max " << k.max_patches;
  }
}

// A gray page is its value thrice (the processor's RGB array): computing one channel and copying
// it must give the bits the three-channel path gives for the same page expanded to RGB.
TEST(Pix2StructPatches, AGrayPageEqualsItsRgbExpansion) {
  std::mt19937 rng(7);
  for (const auto& [width, height] : {std::pair{640, 480}, std::pair{97, 1301}, std::pair{33, 9}}) {
    std::vector<uint8_t> gray(static_cast<size_t>(width * height)), rgb(gray.size() * 3);
    for (size_t i = 0; i < gray.size(); ++i) {
      gray[i] = static_cast<uint8_t>(rng() % 256);
      rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = gray[i];
    }
    Pix2StructConfig config;
    config.max_patches = 512;
    const size_t values = static_cast<size_t>(config.max_patches * Pix2StructRowValues(config));
    std::vector<float> from_gray(values), from_rgb(values);
    ASSERT_TRUE(
        Pix2StructPatches({gray.data(), width, height, 1, width}, config, from_gray.data()).ok());
    ASSERT_TRUE(
        Pix2StructPatches({rgb.data(), width, height, 3, width * 3}, config, from_rgb.data()).ok());
    EXPECT_EQ(std::memcmp(from_gray.data(), from_rgb.data(), values * sizeof(float)), 0)
        << width << "x" << height;
    // The same gray page with padding after each row (a view into a wider buffer).
    const int32_t stride = width + 5;
    std::vector<uint8_t> padded(static_cast<size_t>(stride * height), 0xAB);
    for (int32_t y = 0; y < height; ++y) {
      std::memcpy(padded.data() + y * stride, gray.data() + y * width, static_cast<size_t>(width));
    }
    std::vector<float> from_padded(values);
    ASSERT_TRUE(
        Pix2StructPatches({padded.data(), width, height, 1, stride}, config, from_padded.data())
            .ok());
    EXPECT_EQ(std::memcmp(from_padded.data(), from_rgb.data(), values * sizeof(float)), 0)
        << width << "x" << height << " with padded rows";
  }
}

TEST(ValidatePix2StructConfig, NamesTheField) {
  Pix2StructConfig config;
  config.max_patches = 0;
  EXPECT_NE(ValidatePix2StructConfig(config).message().find("max_patches"), std::string::npos);
  config = Pix2StructConfig{};
  config.patch_width = 0;
  EXPECT_NE(ValidatePix2StructConfig(config).message().find("patch_size"), std::string::npos);
  config = Pix2StructConfig{};
  config.hf_version = 3;
  EXPECT_EQ(ValidatePix2StructConfig(config).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace docfeed::internal
