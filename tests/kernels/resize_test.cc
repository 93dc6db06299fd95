// Resize()/Reduce() contracts: argument validation, coefficient invariants, pass skipping,
// shortcuts, and the DOCFEED_SIMD switch. Byte parity with Pillow itself is tested by
// test_resize_vs_pillow.py through resize_probe.
#include "kernels/resize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/reduce.h"
#include "kernels/resample.h"
#include "kernels/resample_coeffs.h"
#include "kernels/simd_mode.h"

namespace docfeed::internal {
namespace {

struct TestImage {
  int32_t width, height, channels;
  std::vector<uint8_t> pixels;

  TestImage(int32_t w, int32_t h, int32_t c, uint32_t seed = 0)
      : width(w), height(h), channels(c), pixels(static_cast<size_t>(w) * h * c) {
    std::mt19937 rng(seed);
    for (auto& p : pixels) p = static_cast<uint8_t>(rng());
  }
  ImageView view() const { return {pixels.data(), width, height, channels, width * channels}; }
  MutableImageView mut() { return {pixels.data(), width, height, channels, width * channels}; }
};

bool IsInvalid(const Status& s) { return s.code() == StatusCode::kInvalidArgument; }

TEST(Resize, RejectsInvalidViews) {
  TestImage src(8, 8, 3), dst(4, 4, 3);
  ImageView bad = src.view();
  bad.width = 0;
  EXPECT_TRUE(IsInvalid(Resize(bad, dst.mut(), ResampleFilter::kBilinear)));
  bad = src.view();
  bad.data = nullptr;
  EXPECT_TRUE(IsInvalid(Resize(bad, dst.mut(), ResampleFilter::kBilinear)));
  bad = src.view();
  bad.stride_bytes = 23;
  EXPECT_TRUE(IsInvalid(Resize(bad, dst.mut(), ResampleFilter::kBilinear)));
  MutableImageView bad_dst = dst.mut();
  bad_dst.height = 0;
  EXPECT_TRUE(IsInvalid(Resize(src.view(), bad_dst, ResampleFilter::kBilinear)));
  bad_dst = dst.mut();
  bad_dst.channels = 5;
  EXPECT_TRUE(IsInvalid(Resize(src.view(), bad_dst, ResampleFilter::kBilinear)));
  TestImage gray(4, 4, 1);
  EXPECT_TRUE(IsInvalid(Resize(src.view(), gray.mut(), ResampleFilter::kBilinear)));
}

TEST(Resize, RejectsBadBoxAndGap) {
  TestImage src(8, 8, 1), dst(4, 4, 1);
  for (const Box& box : {Box{-1, 0, 8, 8}, Box{0, 0, 9, 8}, Box{0, 0, 8, 8.5}, Box{4, 0, 4, 8},
                         Box{5, 0, 4, 8}, Box{0, NAN, 8, 8}}) {
    EXPECT_TRUE(IsInvalid(Resize(src.view(), dst.mut(), ResampleFilter::kBicubic, &box)));
    EXPECT_TRUE(IsInvalid(Resize(src.view(), dst.mut(), ResampleFilter::kNearest, &box)));
  }
  EXPECT_TRUE(IsInvalid(Resize(src.view(), dst.mut(), ResampleFilter::kBicubic, nullptr, 0.5)));
  EXPECT_TRUE(IsInvalid(Resize(src.view(), dst.mut(), ResampleFilter::kBicubic, nullptr, -2)));
  EXPECT_TRUE(Resize(src.view(), dst.mut(), ResampleFilter::kBicubic, nullptr, 1.0).ok());
}

TEST(Reduce, RejectsBadArguments) {
  TestImage src(9, 7, 3), dst(5, 4, 3);
  EXPECT_TRUE(Reduce(src.view(), 2, 2, nullptr, dst.mut()).ok());
  EXPECT_TRUE(IsInvalid(Reduce(src.view(), 0, 2, nullptr, dst.mut())));
  EXPECT_TRUE(IsInvalid(Reduce(src.view(), 3, 2, nullptr, dst.mut())));  // Wrong dst size.
  const Box fractional{0.5, 0, 9, 7};
  EXPECT_TRUE(IsInvalid(Reduce(src.view(), 2, 2, &fractional, dst.mut())));
  const Box outside{0, 0, 10, 7};
  EXPECT_TRUE(IsInvalid(Reduce(src.view(), 2, 2, &outside, dst.mut())));
}

TEST(ResampleCoeffs, WeightsSumToOneAndStayInRange) {
  for (const ResampleFilter filter :
       {ResampleFilter::kBox, ResampleFilter::kBilinear, ResampleFilter::kHamming,
        ResampleFilter::kBicubic, ResampleFilter::kLanczos}) {
    for (const auto& [in, out] : {std::pair{2480, 1200}, {100, 333}, {7, 1}, {1, 5}, {3508, 17}}) {
      CoeffTable t;
      ASSERT_TRUE(ComputeCoeffs(in, 0, static_cast<float>(in), out, filter, &t).ok());
      for (int32_t o = 0; o < out; ++o) {
        ASSERT_GE(t.first(o), 0);
        ASSERT_GE(t.taps(o), 1);
        ASSERT_LE(t.taps(o), t.ksize);
        ASSERT_LE(t.first(o) + t.taps(o), in);
        int64_t sum = 0;
        for (int32_t k = 0; k < t.ksize; ++k) sum += t.row(o)[k];
        // Rounded weights are not renormalised: a few units of 2^-22 off per tap at most.
        EXPECT_NEAR(static_cast<double>(sum), 1 << kPrecisionBits, t.taps(o))
            << in << "->" << out << " o=" << o;
      }
    }
  }
}

TEST(Resize, ConstantImageStaysConstant) {
  TestImage src(37, 23, 3);
  std::fill(src.pixels.begin(), src.pixels.end(), 77);
  for (const ResampleFilter filter :
       {ResampleFilter::kNearest, ResampleFilter::kBox, ResampleFilter::kBilinear,
        ResampleFilter::kBicubic, ResampleFilter::kLanczos}) {
    for (const auto& [w, h] : {std::pair{11, 50}, {80, 9}, {1, 1}}) {
      TestImage dst(w, h, 3);
      ASSERT_TRUE(Resize(src.view(), dst.mut(), filter).ok());
      for (uint8_t p : dst.pixels) ASSERT_EQ(p, 77);
    }
  }
}

// Same width: only the vertical pass runs, straight from the source.
TEST(Resize, SkipsHorizontalPassWhenWidthUnchanged) {
  TestImage src(31, 40, 3, 7), dst(31, 17, 3);
  ASSERT_TRUE(Resize(src.view(), dst.mut(), ResampleFilter::kBicubic).ok());
  CoeffTable y;
  ASSERT_TRUE(ComputeCoeffs(40, 0, 40, 17, ResampleFilter::kBicubic, &y).ok());
  std::vector<uint8_t> want(dst.pixels.size());
  ResampleVerticalReference(src.pixels.data(), 93, 93, y, want.data(), 93);
  EXPECT_EQ(dst.pixels, want);
}

// Same height: only the horizontal pass runs.
TEST(Resize, SkipsVerticalPassWhenHeightUnchanged) {
  TestImage src(40, 12, 1, 8), dst(13, 12, 1);
  ASSERT_TRUE(Resize(src.view(), dst.mut(), ResampleFilter::kLanczos).ok());
  CoeffTable x;
  ASSERT_TRUE(ComputeCoeffs(40, 0, 40, 13, ResampleFilter::kLanczos, &x).ok());
  std::vector<uint8_t> want(dst.pixels.size());
  ResampleHorizontalReference(src.pixels.data(), 40, 40, 12, 1, x, want.data(), 13);
  EXPECT_EQ(dst.pixels, want);
}

// Pillow 13 (python-pillow/Pillow#9549): the vertical pass runs first when the height shrinks by
// more than twice as many pixels as the width. 100x100 -> 80x50: 50 > 2 * 20.
TEST(Resize, RunsVerticalPassFirstWhenHeightShrinksMuchMore) {
  TestImage src(100, 100, 3, 21), dst(80, 50, 3);
  ASSERT_TRUE(Resize(src.view(), dst.mut(), ResampleFilter::kBilinear).ok());
  CoeffTable x, y;
  ASSERT_TRUE(ComputeCoeffs(100, 0, 100, 80, ResampleFilter::kBilinear, &x).ok());
  ASSERT_TRUE(ComputeCoeffs(100, 0, 100, 50, ResampleFilter::kBilinear, &y).ok());
  std::vector<uint8_t> temp(300 * 50), want(dst.pixels.size());
  ResampleVerticalReference(src.pixels.data(), 300, 300, y, temp.data(), 300);
  ResampleHorizontalReference(temp.data(), 300, 100, 50, 3, x, want.data(), 240);
  EXPECT_EQ(dst.pixels, want);
}

TEST(Resize, SameSizeIsACopyAndIntegralBoxIsACrop) {
  TestImage src(20, 10, 4, 3), same(20, 10, 4), crop(5, 4, 4);
  ASSERT_TRUE(Resize(src.view(), same.mut(), ResampleFilter::kLanczos).ok());
  EXPECT_EQ(same.pixels, src.pixels);  // No premultiplication round trip for a copy.
  const Box box{3, 2, 8, 6};
  ASSERT_TRUE(Resize(src.view(), crop.mut(), ResampleFilter::kNearest, &box).ok());
  for (int y = 0; y < 4; ++y) {
    for (int i = 0; i < 20; ++i) {
      ASSERT_EQ(crop.pixels[y * 20 + i], src.pixels[(y + 2) * 80 + 12 + i]);
    }
  }
}

TEST(Reduce, AveragesBlocksWithPillowRounding) {
  EXPECT_EQ(ReduceMultiplier(1), 1u << 24);
  EXPECT_EQ(ReduceMultiplier(4), 1u << 22);
  TestImage src(3, 1, 1);
  src.pixels = {10, 11, 200};
  TestImage dst(2, 1, 1);
  ASSERT_TRUE(Reduce(src.view(), 2, 1, nullptr, dst.mut()).ok());
  EXPECT_EQ(dst.pixels[0], 11);   // (21 + 1) / 2, rounded half up.
  EXPECT_EQ(dst.pixels[1], 200);  // Partial last block.
}

TEST(SimdMode, ScalarOverrideGivesTheSameBytes) {
  TestImage src(517, 301, 3, 11), a(203, 388, 3), b(203, 388, 3);
  SetSimdModeOverride(SimdMode::kScalar);
  ASSERT_TRUE(Resize(src.view(), a.mut(), ResampleFilter::kBicubic).ok());
  SetSimdModeOverride(SimdMode::kAuto);
  ASSERT_TRUE(Resize(src.view(), b.mut(), ResampleFilter::kBicubic).ok());
  ClearSimdModeOverride();
  EXPECT_EQ(a.pixels, b.pixels);
}

}  // namespace
}  // namespace docfeed::internal
