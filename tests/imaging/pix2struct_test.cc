// Properties of the Pix2Struct grid and patch layout that hold for every size; the values
// themselves are compared with transformers in tests/python/test_hf_pix2struct_parity.py.
#include "imaging/pix2struct.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

// Pix2StructPatches of `page` with the SIMD paths and with the scalar mode forced: the same
// bytes.
void ExpectSimdEqualsScalar(const ImageView& page, const Pix2StructConfig& config) {
  const size_t values = static_cast<size_t>(config.max_patches * Pix2StructRowValues(config));
  std::vector<float> simd(values), scalar(values);
  ASSERT_TRUE(Pix2StructPatches(page, config, simd.data()).ok());
  SetSimdModeOverride(SimdMode::kScalar);
  const Status s = Pix2StructPatches(page, config, scalar.data());
  ClearSimdModeOverride();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(std::memcmp(simd.data(), scalar.data(), values * sizeof(float)), 0)
      << page.width << "x" << page.height << "x" << page.channels << " patches "
      << config.patch_height << "x" << config.patch_width << " max " << config.max_patches;
}

// The AVX2 passes (statistics, both resize passes, the patch rows' interleave) and the scalar
// ones do the same float arithmetic in the same order: the outputs are equal bit for bit, on
// pages whose leaves end at every remainder mod 8, that shrink and grow, and are gray (one
// channel read as three), with patch rows of 16 values and of widths that leave a remainder.
// A page of random values (about one in seven 255) of shape `k`, which takes the AVX-512 HWC resize
// exactly when `hwc` (its plan, checked so that a changed plan cannot silently move a case to
// the other path), through the SIMD and the scalar paths, bit for bit.
struct PageShape {
  int32_t width, height, channels, max_patches, patch_height, patch_width;
};

void ExpectPathAndSimdEqualsScalar(const PageShape& k, bool hwc, std::mt19937& rng) {
  std::vector<uint8_t> pixels(static_cast<size_t>(k.width * k.height * k.channels));
  for (uint8_t& v : pixels) {
    v = static_cast<uint8_t>(std::min<uint32_t>(static_cast<uint32_t>(rng() % 300), 255));
  }
  Pix2StructConfig config;
  config.max_patches = k.max_patches;
  config.patch_height = k.patch_height;
  config.patch_width = k.patch_width;
  EXPECT_EQ(Pix2StructHwcPathForTesting(k.height, k.width, k.channels == 1, config), hwc)
      << k.width << "x" << k.height << "x" << k.channels << " max " << k.max_patches;
  ExpectSimdEqualsScalar({pixels.data(), k.width, k.height, k.channels, k.width * k.channels},
                         config);
}

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
    ExpectSimdEqualsScalar({pixels.data(), k.width, k.height, k.channels, k.width * k.channels},
                           config);
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
    ExpectSimdEqualsScalar({pixels.data(), k.width, k.height, k.channels, k.width * k.channels},
                           config);
  }
}

// The AVX-512 HWC resize (pages enlarged or mildly reduced): each group of 16 output values
// picks its terms from windows of 32 source values, lanes with fewer terms masked out. Pages
// that reach it (checked, so that a narrower plan cannot silently skip them): enlarged and
// reduced by up to about 1.5 (two to four terms, mixed within groups), output rows whose length
// leaves every remainder against 16 (patch widths 16, 13, 7, 5, 3, 1), groups whose windows
// reach the row's first and last values, one pixel wide or high, gray (one value a pixel); each
// against the scalar path, bit for bit.
TEST(Pix2StructPatches, HwcPathMatchesTheScalarPathAtTheEdges) {
  std::mt19937 rng(17);
  for (const PageShape& k :
       {PageShape{789, 557, 3, 2048, 16, 16}, PageShape{864, 1296, 3, 2048, 16, 16},
        PageShape{1000, 700, 3, 2048, 16, 16}, PageShape{97, 13, 3, 2048, 16, 16},
        PageShape{301, 211, 3, 512, 5, 13}, PageShape{77, 45, 3, 300, 7, 7},
        PageShape{123, 77, 3, 2048, 3, 5}, PageShape{640, 481, 3, 4096, 16, 3},
        PageShape{33, 1, 3, 64, 16, 16}, PageShape{1, 45, 3, 64, 16, 16},
        PageShape{2, 3, 3, 4096, 16, 16}, PageShape{60, 40, 3, 1000, 2, 1},
        PageShape{641, 479, 1, 2048, 16, 16}, PageShape{1201, 903, 1, 2048, 16, 16},
        PageShape{805, 655, 1, 2048, 9, 11}, PageShape{1, 333, 1, 64, 16, 16},
        PageShape{1000, 1, 1, 64, 16, 16}}) {
    ExpectPathAndSimdEqualsScalar(k, true, rng);
  }
  // Pages it leaves to the other passes: reduced by more (columns of five terms and more), a
  // side that stays (ATen skips it).
  Pix2StructConfig config;
  EXPECT_FALSE(Pix2StructHwcPathForTesting(3508, 2481, false, config));
  config.max_patches = 64;
  EXPECT_FALSE(Pix2StructHwcPathForTesting(16, 300, false, config));
}

// The AVX-512 fill of the horizontal pass on pages the HWC path leaves (reduced by more than
// about 1.7): sixteen pixels of eight rows at a time, through byte permutes, then the rest of the
// row (every tail of 1..15 pixels, and rows narrower than one step) and blocks of fewer than
// eight rows through the table. RGB and gray, wide and narrow; each against the scalar path, bit
// for bit.
TEST(Pix2StructPatches, Avx512FillMatchesTheScalarPathAtTheEdges) {
  std::mt19937 rng(23);
  std::vector<PageShape> cases;
  for (int32_t channels : {3, 1}) {
    for (int32_t tail = 0; tail < 16; ++tail) {
      cases.push_back({400 + tail, 603 + tail, channels, 128, 16, 16});
      cases.push_back(
          {32 + tail, 3 * tail + 45, channels, (32 + tail) * (3 * tail + 45) / 9, 1, 1});
      // (Four pixels or fewer make columns of at most four terms, which the HWC path takes.)
      if (tail > 4) cases.push_back({tail, 101, channels, tail * 101 / 16, 1, 1});
    }
  }
  for (const PageShape& k : cases) ExpectPathAndSimdEqualsScalar(k, false, rng);
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

struct Statistics {
  float mean = 0, std_dev = 0;
  float table[256] = {};
};

bool StatisticsOf(const std::vector<uint8_t>& pixels, bool gray, int path, Statistics& s) {
  const auto n = static_cast<int64_t>(pixels.size()) * (gray ? 3 : 1);
  return Pix2StructStatisticsForTesting(pixels.data(), n, gray, path, &s.mean, &s.std_dev, s.table);
}

// numpy's FLOAT_pairwise_sum, written out again from its source over a float array (the library
// lists the leaves and adds the tree level by level instead).
float NumpyPairwiseSum(const float* a, int64_t n) {
  if (n < 8) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += a[i];
    return sum;
  }
  if (n <= 128) {
    float r[8];
    for (int k = 0; k < 8; ++k) r[k] = a[k];
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int k = 0; k < 8; ++k) r[k] += a[i + k];
    }
    float sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) sum += a[i];
    return sum;
  }
  int64_t half = n / 2;
  half -= half % 8;
  return NumpyPairwiseSum(a, half) + NumpyPairwiseSum(a + half, n - half);
}

// Whether all of numpy's leaves for n values lie at one depth of its tree.
bool LeavesAtOneDepth(int64_t n, int& depth) {
  if (n <= 128) {
    depth = 0;
    return true;
  }
  int64_t half = n / 2;
  half -= half % 8;
  int left = 0, right = 0;
  const bool even = LeavesAtOneDepth(half, left) && LeavesAtOneDepth(n - half, right);
  depth = left + 1;
  return even && left == right;
}

// The pages of the statistics tests: value counts that leave every remainder against the leaves
// (128), their chunks (8), the vectors (32, 64) and the gray expansion (48, and its buffer of
// 8192), some whose leaves lie at two depths; constant, uniform and skewed values.
std::vector<std::pair<std::vector<uint8_t>, bool>> StatisticsPages() {
  std::mt19937 rng(13);
  std::vector<std::pair<std::vector<uint8_t>, bool>> pages;
  for (const auto& [width, height] :
       {std::pair{1, 1}, std::pair{7, 3}, std::pair{17, 33}, std::pair{43, 1}, std::pair{64, 2},
        std::pair{171, 3}, std::pair{333, 41}, std::pair{1000, 1001}, std::pair{2731, 1},
        std::pair{851, 849}, std::pair{10243, 1}}) {
    for (const bool gray : {false, true}) {
      const auto size = static_cast<size_t>(width * height * (gray ? 1 : 3));
      for (int kind = 0; kind < 3; ++kind) {
        std::vector<uint8_t> pixels(size, 201);
        if (kind == 1) {
          for (uint8_t& v : pixels) v = static_cast<uint8_t>(rng() % 256);
        } else if (kind == 2) {
          for (uint8_t& v : pixels)
            v = static_cast<uint8_t>(std::min<uint32_t>(static_cast<uint32_t>(rng() % 300), 255));
        }
        pages.emplace_back(std::move(pixels), gray);
      }
    }
  }
  return pages;
}

// Each SIMD path of the statistics (mean, std and the standardized table) against the scalar
// path, bit for bit, whatever DOCFEED_SIMD says.
TEST(Pix2StructStatistics, SimdPathsMatchTheScalarPathBitForBit) {
  for (const auto& [pixels, gray] : StatisticsPages()) {
    Statistics scalar;
    ASSERT_TRUE(StatisticsOf(pixels, gray, 0, scalar));
    for (const int path : {1, 2}) {
      Statistics simd;
      if (!StatisticsOf(pixels, gray, path, simd)) continue;  // not on this CPU
      EXPECT_EQ(std::memcmp(&simd, &scalar, sizeof(Statistics)), 0)
          << "path " << path << ", " << pixels.size() << (gray ? " gray" : " rgb")
          << " bytes, mean " << simd.mean << " vs " << scalar.mean << ", std " << simd.std_dev
          << " vs " << scalar.std_dev;
    }
  }
}

// The scalar path's mean and std are numpy's: float32 pairwise sums of the HWC array's values
// and of their squared deviations, each divided in float64 (np.mean, np.var), then sqrtf and the
// processor's floor; also for value counts whose leaves lie at two depths of the tree, which the
// library adds by recursion rather than level by level.
TEST(Pix2StructStatistics, FollowNumpysPairwiseSums) {
  int uneven = 0;
  for (const auto& [pixels, gray] : StatisticsPages()) {
    std::vector<float> values;
    for (const uint8_t v : pixels) values.insert(values.end(), gray ? 3 : 1, static_cast<float>(v));
    const auto n = static_cast<int64_t>(values.size());
    const auto mean = static_cast<float>(static_cast<double>(NumpyPairwiseSum(values.data(), n)) /
                                         static_cast<double>(n));
    for (float& v : values) {
      const float d = v - mean;
      v = d * d;
    }
    const auto var = static_cast<float>(static_cast<double>(NumpyPairwiseSum(values.data(), n)) /
                                        static_cast<double>(n));
    float std_dev = std::sqrt(var);
    const double floor = 1.0 / std::sqrt(static_cast<double>(n));
    if (floor > static_cast<double>(std_dev)) std_dev = static_cast<float>(floor);
    Statistics s;
    ASSERT_TRUE(StatisticsOf(pixels, gray, 0, s));
    EXPECT_EQ(s.mean, mean) << n << (gray ? " gray" : " rgb");
    EXPECT_EQ(s.std_dev, std_dev) << n << (gray ? " gray" : " rgb");
    for (int v = 0; v < 256; ++v) {
      ASSERT_EQ(s.table[v], (static_cast<float>(v) - mean) / std_dev) << n << " value " << v;
    }
    int depth = 0;
    uneven += LeavesAtOneDepth(n, depth) ? 0 : 1;
  }
  EXPECT_EQ(uneven, 18);  // 2731, 851 x 849 and 10243 pixels, gray and RGB, three kinds each
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
