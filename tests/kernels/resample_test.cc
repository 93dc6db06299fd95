// The Highway resampling passes equal the scalar reference, byte for byte, on every compiled
// target the CPU supports: random sizes, odd widths, 1..4 channels, up- and downscaling,
// fractional boxes, unaligned rows and padded strides.
#include "kernels/resample.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/resample_coeffs.h"

namespace docfeed::internal {
namespace {

constexpr ResampleFilter kFilters[] = {ResampleFilter::kBox, ResampleFilter::kBilinear,
                                       ResampleFilter::kHamming, ResampleFilter::kBicubic,
                                       ResampleFilter::kLanczos};

// Rows of random bytes starting `misalign` bytes into an exactly-sized allocation, so that a
// read past the last row's end is a heap overflow under ASan.
struct Rows {
  std::vector<uint8_t> storage;
  const uint8_t* data = nullptr;
  ptrdiff_t stride = 0;
};

Rows RandomRows(std::mt19937& rng, int32_t row_bytes, int32_t rows, bool extremes) {
  Rows r;
  const int misalign = static_cast<int>(rng() % 4);
  r.stride = row_bytes + static_cast<ptrdiff_t>(rng() % 9);
  r.storage.resize(static_cast<size_t>(misalign + (rows - 1) * r.stride + row_bytes));
  for (auto& b : r.storage) {
    b = extremes ? static_cast<uint8_t>((rng() & 1) ? 255 : 0) : static_cast<uint8_t>(rng());
  }
  r.data = r.storage.data() + misalign;
  return r;
}

// A random source range [in0, in1) of an axis of `in_size` pixels.
void RandomRange(std::mt19937& rng, int32_t in_size, float* in0, float* in1) {
  *in0 = 0;
  *in1 = static_cast<float>(in_size);
  if (rng() % 3 == 0) {
    std::uniform_real_distribution<float> u(0.0f, static_cast<float>(in_size));
    float a = u(rng), b = u(rng);
    if (a > b) std::swap(a, b);
    if (b - a > 0.01f) *in0 = a, *in1 = b;
  }
}

class ResamplePerTarget : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override { hwy::SetSupportedTargetsForTest(GetParam()); }
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

TEST_P(ResamplePerTarget, HorizontalMatchesReference) {
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 400; ++iter) {
    const ResampleFilter filter = kFilters[iter % 5];
    const int32_t channels = 1 + iter % 4;
    const auto in_w = static_cast<int32_t>(1 + rng() % 300);
    const auto out_w = static_cast<int32_t>(1 + rng() % 300);
    const auto rows = static_cast<int32_t>(1 + rng() % 4);
    float in0, in1;
    RandomRange(rng, in_w, &in0, &in1);
    CoeffTable x;
    ASSERT_TRUE(ComputeCoeffs(in_w, in0, in1, out_w, filter, &x).ok());
    const Rows src = RandomRows(rng, in_w * channels, rows, iter % 7 == 0);
    const ptrdiff_t out_stride = out_w * channels + 3;
    std::vector<uint8_t> want(static_cast<size_t>(out_stride * rows), 0xAB);
    std::vector<uint8_t> got(want.size(), 0xAB);
    ResampleHorizontalReference(src.data, src.stride, in_w, rows, channels, x, want.data(),
                                out_stride);
    ResampleHorizontalSimd(src.data, src.stride, in_w, rows, channels, x, got.data(), out_stride);
    ASSERT_EQ(want, got) << "iter " << iter << " " << in_w << "->" << out_w << " c" << channels;
  }
}

TEST_P(ResamplePerTarget, VerticalMatchesReference) {
  std::mt19937 rng(5678);
  for (int iter = 0; iter < 300; ++iter) {
    const ResampleFilter filter = kFilters[iter % 5];
    const auto in_h = static_cast<int32_t>(1 + rng() % 200);
    const auto out_h = static_cast<int32_t>(1 + rng() % 200);
    const auto row_bytes = static_cast<int32_t>(1 + rng() % 260);
    float in0, in1;
    RandomRange(rng, in_h, &in0, &in1);
    CoeffTable y;
    ASSERT_TRUE(ComputeCoeffs(in_h, in0, in1, out_h, filter, &y).ok());
    const Rows src = RandomRows(rng, row_bytes, in_h, iter % 7 == 0);
    const ptrdiff_t out_stride = row_bytes + 5;
    std::vector<uint8_t> want(static_cast<size_t>(out_stride * out_h), 0xCD);
    std::vector<uint8_t> got(want.size(), 0xCD);
    ResampleVerticalReference(src.data, src.stride, row_bytes, y, want.data(), out_stride);
    ResampleVerticalSimd(src.data, src.stride, row_bytes, y, got.data(), out_stride);
    ASSERT_EQ(want, got) << "iter " << iter << " " << in_h << "->" << out_h << " bytes "
                         << row_bytes;
  }
}

// A page-sized row exercises the unrolled main loops rather than the tails.
TEST_P(ResamplePerTarget, PageWidthRowsMatchReference) {
  std::mt19937 rng(99);
  for (const ResampleFilter filter : kFilters) {
    CoeffTable x;
    ASSERT_TRUE(ComputeCoeffs(2480, 0, 2480, 1200, filter, &x).ok());
    const Rows src = RandomRows(rng, 2480 * 3, 3, false);
    std::vector<uint8_t> want(1200 * 3 * 3), got(want.size());
    ResampleHorizontalReference(src.data, src.stride, 2480, 3, 3, x, want.data(), 3600);
    ResampleHorizontalSimd(src.data, src.stride, 2480, 3, 3, x, got.data(), 3600);
    EXPECT_EQ(want, got);
  }
}

// Both passes streamed in bands equal the two reference passes: wide rows make several bands
// (the band buffer holds ~256 KiB), narrow ones a single band; up- and downscaling, fractional
// boxes, 1..4 channels.
TEST_P(ResamplePerTarget, SeparableMatchesReference) {
  std::mt19937 rng(4321);
  for (int iter = 0; iter < 40; ++iter) {
    const ResampleFilter filter = kFilters[iter % 5];
    const int32_t channels = 1 + iter % 4;
    const bool wide = iter % 2 == 0;
    const auto in_w = static_cast<int32_t>(wide ? 1500 + rng() % 700 : 1 + rng() % 120);
    const auto out_w = static_cast<int32_t>(wide ? 900 + rng() % 1400 : 1 + rng() % 120);
    const auto in_h = static_cast<int32_t>(1 + rng() % 250);
    const auto out_h = static_cast<int32_t>(1 + rng() % 250);
    float x0, x1, y0, y1;
    RandomRange(rng, in_w, &x0, &x1);
    RandomRange(rng, in_h, &y0, &y1);
    CoeffTable x, y;
    ASSERT_TRUE(ComputeCoeffs(in_w, x0, x1, out_w, filter, &x).ok());
    ASSERT_TRUE(ComputeCoeffs(in_h, y0, y1, out_h, filter, &y).ok());
    const Rows src = RandomRows(rng, in_w * channels, in_h, iter % 7 == 0);
    const ptrdiff_t out_stride = out_w * channels + 7;
    std::vector<uint8_t> want(static_cast<size_t>(out_stride * out_h), 0xEF);
    std::vector<uint8_t> got(want.size(), 0xEF);
    ResampleSeparableReference(src.data, src.stride, in_w, channels, x, y, want.data(), out_stride);
    ResampleSeparableSimd(src.data, src.stride, in_w, channels, x, y, got.data(), out_stride);
    ASSERT_EQ(want, got) << "iter " << iter << " " << in_w << "x" << in_h << "->" << out_w << "x"
                         << out_h << " c" << channels;
  }
}

// Windows near 64 bytes (the AVX-512 permute kernel's limit) and beyond it (the gather
// fallback): strong downscaling of wide rows, every channel count.
TEST_P(ResamplePerTarget, HorizontalWideWindowsMatchReference) {
  std::mt19937 rng(77);
  for (const int32_t channels : {1, 2, 3, 4}) {
    for (const int32_t out_w : {7, 13, 17, 31, 67, 130}) {
      for (const ResampleFilter filter : {ResampleFilter::kBilinear, ResampleFilter::kLanczos}) {
        CoeffTable x;
        ASSERT_TRUE(ComputeCoeffs(601, 0, 601, out_w, filter, &x).ok());
        const Rows src = RandomRows(rng, 601 * channels, 3, false);
        const ptrdiff_t out_stride = out_w * channels;
        std::vector<uint8_t> want(static_cast<size_t>(out_stride * 3)), got(want.size());
        ResampleHorizontalReference(src.data, src.stride, 601, 3, channels, x, want.data(),
                                    out_stride);
        ResampleHorizontalSimd(src.data, src.stride, 601, 3, channels, x, got.data(), out_stride);
        ASSERT_EQ(want, got) << "c" << channels << " -> " << out_w;
      }
    }
  }
}

// AVX3_DL's quad kernel around its limits: groups of 16 samples that start and end inside a
// pixel (RGB), windows of 64 bytes and of 128 (two registers, picked when they take fewer
// micro-ops: ratios from ~2.5x for RGB), single pixels too wide for either (gathers), an odd
// last row (no row pair), every filter and channel count, up- and downscales, fractional boxes.
TEST_P(ResamplePerTarget, HorizontalQuadWindowsMatchReference) {
  std::mt19937 rng(2024);
  for (const int32_t channels : {1, 2, 3, 4}) {
    for (const int32_t in_w : {97, 601, 1536}) {
      for (const double ratio : {0.7, 1.3, 2.2, 2.9, 3.0, 4.5, 6.0, 9.0, 17.0}) {
        for (const ResampleFilter filter : kFilters) {
          const auto out_w =
              static_cast<int32_t>(std::max(1.0, in_w / ratio + static_cast<double>(rng() % 3)));
          float in0 = 0, in1 = static_cast<float>(in_w);
          if (rng() % 4 == 0) in0 = 0.37f, in1 = static_cast<float>(in_w) - 1.6f;
          CoeffTable x;
          ASSERT_TRUE(ComputeCoeffs(in_w, in0, in1, out_w, filter, &x).ok());
          const auto rows = static_cast<int32_t>(1 + rng() % 5);
          const Rows src = RandomRows(rng, in_w * channels, rows, rng() % 5 == 0);
          const ptrdiff_t out_stride = out_w * channels + static_cast<ptrdiff_t>(rng() % 3);
          std::vector<uint8_t> want(static_cast<size_t>(out_stride * rows), 0x5A);
          std::vector<uint8_t> got(want.size(), 0x5A);
          ResampleHorizontalReference(src.data, src.stride, in_w, rows, channels, x, want.data(),
                                      out_stride);
          ResampleHorizontalSimd(src.data, src.stride, in_w, rows, channels, x, got.data(),
                                 out_stride);
          ASSERT_EQ(want, got) << in_w << " -> " << out_w << " c" << channels << " filter "
                               << static_cast<int>(filter) << " rows " << rows;
        }
      }
    }
  }
}

std::string TargetParamName(const ::testing::TestParamInfo<int64_t>& info) {
  return hwy::TargetName(info.param);
}

INSTANTIATE_TEST_SUITE_P(AllTargets, ResamplePerTarget,
                         ::testing::ValuesIn(hwy::SupportedAndGeneratedTargets()), TargetParamName);

}  // namespace
}  // namespace docfeed::internal

namespace docfeed::internal {
namespace {

bool SameTable(const CoeffTable& a, const CoeffTable& b) {
  return a.out_size == b.out_size && a.ksize == b.ksize && a.bounds == b.bounds &&
         a.weights == b.weights;
}

// ComputeCoeffs keeps a thread's last tables (resample_coeffs.cc). Geometries that differ in one
// key field each (the box's float bits, the filter, the arithmetic, the sizes), more of them than
// the cache holds, asked for over and over in changing orders, must each give the table a fresh
// thread (nothing cached) computes.
TEST(ComputeCoeffsCache, EveryGeometryGetsItsOwnTable) {
  struct Geometry {
    int32_t in_size;
    float in0, in1;
    int32_t out_size;
    ResampleFilter filter;
    ResampleArithmetic arithmetic;
  };
  const std::vector<Geometry> geometries = {
      {2481, 0, 2481, 1448, ResampleFilter::kLanczos, ResampleArithmetic::kPillow},
      {2481, 0, 2481, 1449, ResampleFilter::kLanczos, ResampleArithmetic::kPillow},
      {2482, 0, 2482, 1448, ResampleFilter::kLanczos, ResampleArithmetic::kPillow},
      {2481, 0, std::nextafter(2481.0f, 0.0f), 1448, ResampleFilter::kLanczos,
       ResampleArithmetic::kPillow},
      {2481, 0.5f, 2481, 1448, ResampleFilter::kLanczos, ResampleArithmetic::kPillow},
      {2481, 0, 2481, 1448, ResampleFilter::kBicubic, ResampleArithmetic::kPillow},
      {2481, 0, 2481, 1448, ResampleFilter::kBicubic, ResampleArithmetic::kTorchUint8},
      {2481, 0, 2481, 1448, ResampleFilter::kBilinear, ResampleArithmetic::kPillow},
      {2481, 0, 2481, 1448, ResampleFilter::kBilinear, ResampleArithmetic::kTorchUint8},
      {1448, 0, 1448, 1536, ResampleFilter::kLanczos, ResampleArithmetic::kPillow},
      {3508, 0, 3508, 2048, ResampleFilter::kHamming, ResampleArithmetic::kPillow},
      {100, 0, 100, 7, ResampleFilter::kBox, ResampleArithmetic::kPillow},
  };
  std::vector<CoeffTable> fresh(geometries.size());
  for (size_t i = 0; i < geometries.size(); ++i) {
    const Geometry& g = geometries[i];
    std::thread([&] {
      ASSERT_TRUE(
          ComputeCoeffs(g.in_size, g.in0, g.in1, g.out_size, g.filter, &fresh[i], g.arithmetic)
              .ok());
    }).join();
  }
  for (size_t i = 0; i < fresh.size(); ++i) {
    for (size_t j = i + 1; j < fresh.size(); ++j) {
      ASSERT_FALSE(SameTable(fresh[i], fresh[j])) << i << " and " << j << " are not distinct";
    }
  }
  std::mt19937 rng(7);
  std::vector<size_t> order;
  for (int round = 0; round < 6; ++round) {
    for (size_t i = 0; i < geometries.size(); ++i) order.push_back(i);
  }
  for (size_t i = 0; i < geometries.size(); ++i) order.push_back(i % 3);  // repeats in a row
  std::shuffle(order.begin(), order.begin() + static_cast<ptrdiff_t>(geometries.size()) * 3, rng);
  CoeffTable table;  // reused, as the callers reuse theirs
  for (const size_t i : order) {
    const Geometry& g = geometries[i];
    ASSERT_TRUE(
        ComputeCoeffs(g.in_size, g.in0, g.in1, g.out_size, g.filter, &table, g.arithmetic).ok());
    ASSERT_TRUE(SameTable(table, fresh[i])) << "geometry " << i;
  }
}

}  // namespace
}  // namespace docfeed::internal
