// Normalize(): the 256-entry table against numpy's float32 results, float16/bfloat16 rounding,
// layouts, gray replication and argument checks. End-to-end parity with transformers is in
// tests/python/test_donut_parity.py.
#include "imaging/normalize.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/simd_mode.h"

namespace docfeed::internal {
namespace {

// numpy: ((np.arange(256).astype(np.float64) * (1 / 255)).astype(np.float32) - np.float32(0.5))
//        / np.float32(0.5), as uint32 bits (the processor's rescale + normalize, 0.5/0.5).
constexpr uint32_t kDefaultTableBits[256] = {
    0xbf800000, 0xbf7dfdfe, 0xbf7bfbfc, 0xbf79f9fa, 0xbf77f7f8, 0xbf75f5f6, 0xbf73f3f4, 0xbf71f1f2,
    0xbf6feff0, 0xbf6dedee, 0xbf6bebec, 0xbf69e9ea, 0xbf67e7e8, 0xbf65e5e6, 0xbf63e3e4, 0xbf61e1e2,
    0xbf5fdfe0, 0xbf5dddde, 0xbf5bdbdc, 0xbf59d9da, 0xbf57d7d8, 0xbf55d5d6, 0xbf53d3d4, 0xbf51d1d2,
    0xbf4fcfd0, 0xbf4dcdce, 0xbf4bcbcc, 0xbf49c9ca, 0xbf47c7c8, 0xbf45c5c6, 0xbf43c3c4, 0xbf41c1c2,
    0xbf3fbfc0, 0xbf3dbdbe, 0xbf3bbbbc, 0xbf39b9ba, 0xbf37b7b8, 0xbf35b5b6, 0xbf33b3b4, 0xbf31b1b2,
    0xbf2fafb0, 0xbf2dadae, 0xbf2babac, 0xbf29a9aa, 0xbf27a7a8, 0xbf25a5a6, 0xbf23a3a4, 0xbf21a1a2,
    0xbf1f9fa0, 0xbf1d9d9e, 0xbf1b9b9c, 0xbf19999a, 0xbf179798, 0xbf159596, 0xbf139394, 0xbf119192,
    0xbf0f8f90, 0xbf0d8d8e, 0xbf0b8b8c, 0xbf09898a, 0xbf078788, 0xbf058586, 0xbf038384, 0xbf018182,
    0xbefefefe, 0xbefafafa, 0xbef6f6f6, 0xbef2f2f2, 0xbeeeeeee, 0xbeeaeaea, 0xbee6e6e6, 0xbee2e2e2,
    0xbededede, 0xbedadada, 0xbed6d6d6, 0xbed2d2d2, 0xbececece, 0xbecacaca, 0xbec6c6c6, 0xbec2c2c2,
    0xbebebebe, 0xbebababa, 0xbeb6b6b6, 0xbeb2b2b2, 0xbeaeaeae, 0xbeaaaaaa, 0xbea6a6a6, 0xbea2a2a2,
    0xbe9e9e9e, 0xbe9a9a9a, 0xbe969696, 0xbe929292, 0xbe8e8e8e, 0xbe8a8a8a, 0xbe868686, 0xbe828282,
    0xbe7cfcfc, 0xbe74f4f4, 0xbe6cecec, 0xbe64e4e4, 0xbe5cdcdc, 0xbe54d4d4, 0xbe4ccccc, 0xbe44c4c4,
    0xbe3cbcbc, 0xbe34b4b4, 0xbe2cacac, 0xbe24a4a4, 0xbe1c9c9c, 0xbe149494, 0xbe0c8c8c, 0xbe048484,
    0xbdf8f8f8, 0xbde8e8e8, 0xbdd8d8d8, 0xbdc8c8c8, 0xbdb8b8b8, 0xbda8a8a8, 0xbd989898, 0xbd888888,
    0xbd70f0f0, 0xbd50d0d0, 0xbd30b0b0, 0xbd109090, 0xbce0e0e0, 0xbca0a0a0, 0xbc40c0c0, 0xbb808080,
    0x3b808100, 0x3c40c100, 0x3ca0a0c0, 0x3ce0e100, 0x3d1090a0, 0x3d30b0c0, 0x3d50d0e0, 0x3d70f100,
    0x3d888890, 0x3d9898a0, 0x3da8a8b0, 0x3db8b8c0, 0x3dc8c8d0, 0x3dd8d8e0, 0x3de8e8f0, 0x3df8f900,
    0x3e048488, 0x3e0c8c90, 0x3e149498, 0x3e1c9ca0, 0x3e24a4a8, 0x3e2cacb0, 0x3e34b4b8, 0x3e3cbcc0,
    0x3e44c4c8, 0x3e4cccd0, 0x3e54d4d8, 0x3e5cdce0, 0x3e64e4e8, 0x3e6cecf0, 0x3e74f4f8, 0x3e7cfd00,
    0x3e828284, 0x3e868688, 0x3e8a8a8c, 0x3e8e8e90, 0x3e929294, 0x3e969698, 0x3e9a9a9c, 0x3e9e9ea0,
    0x3ea2a2a4, 0x3ea6a6a8, 0x3eaaaaac, 0x3eaeaeb0, 0x3eb2b2b4, 0x3eb6b6b8, 0x3ebababc, 0x3ebebec0,
    0x3ec2c2c4, 0x3ec6c6c8, 0x3ecacacc, 0x3ececed0, 0x3ed2d2d4, 0x3ed6d6d8, 0x3edadadc, 0x3ededee0,
    0x3ee2e2e4, 0x3ee6e6e8, 0x3eeaeaec, 0x3eeeeef0, 0x3ef2f2f4, 0x3ef6f6f8, 0x3efafafc, 0x3efeff00,
    0x3f018182, 0x3f038384, 0x3f058586, 0x3f078788, 0x3f09898a, 0x3f0b8b8c, 0x3f0d8d8e, 0x3f0f8f90,
    0x3f119192, 0x3f139394, 0x3f159596, 0x3f179798, 0x3f19999a, 0x3f1b9b9c, 0x3f1d9d9e, 0x3f1f9fa0,
    0x3f21a1a2, 0x3f23a3a4, 0x3f25a5a6, 0x3f27a7a8, 0x3f29a9aa, 0x3f2babac, 0x3f2dadae, 0x3f2fafb0,
    0x3f31b1b2, 0x3f33b3b4, 0x3f35b5b6, 0x3f37b7b8, 0x3f39b9ba, 0x3f3bbbbc, 0x3f3dbdbe, 0x3f3fbfc0,
    0x3f41c1c2, 0x3f43c3c4, 0x3f45c5c6, 0x3f47c7c8, 0x3f49c9ca, 0x3f4bcbcc, 0x3f4dcdce, 0x3f4fcfd0,
    0x3f51d1d2, 0x3f53d3d4, 0x3f55d5d6, 0x3f57d7d8, 0x3f59d9da, 0x3f5bdbdc, 0x3f5dddde, 0x3f5fdfe0,
    0x3f61e1e2, 0x3f63e3e4, 0x3f65e5e6, 0x3f67e7e8, 0x3f69e9ea, 0x3f6bebec, 0x3f6dedee, 0x3f6feff0,
    0x3f71f1f2, 0x3f73f3f4, 0x3f75f5f6, 0x3f77f7f8, 0x3f79f9fa, 0x3f7bfbfc, 0x3f7dfdfe, 0x3f800000,
};

TEST(NormalizeTable, DefaultMatchesNumpyBitForBit) {
  Result<NormalizeTable> table = MakeNormalizeTable(DonutConfig{});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      EXPECT_EQ(std::bit_cast<uint32_t>(table->f32[c][v]), kDefaultTableBits[v])
          << "channel " << c << " value " << v;
    }
  }
  EXPECT_EQ(table->f32[0][0], -1.0f);
  EXPECT_EQ(table->f32[0][255], 1.0f);
}

TEST(NormalizeTable, ImagenetMeanStdMatchesNumpy) {
  DonutConfig config;
  config.mean = {0.485, 0.456, 0.406};
  config.std = {0.229, 0.224, 0.225};
  Result<NormalizeTable> table = MakeNormalizeTable(config);
  ASSERT_TRUE(table.ok());
  // Bits from numpy, as in kDefaultTableBits but with per-channel float32 mean/std.
  const uint32_t expected[4][3] = {{0xc0078bbd, 0xc0024924, 0xbfe6f809},
                                   {0xc006732b, 0xc0012a4f, 0xbfe4bcea},
                                   {0x3d97af32, 0x3e521b48, 0x3eda5d3c},
                                   {0x400fee1d, 0x401b6db7, 0x4028f5c3}};
  const int values[4] = {0, 1, 128, 255};
  for (int i = 0; i < 4; ++i) {
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(std::bit_cast<uint32_t>(table->f32[c][values[i]]), expected[i][c]);
    }
  }
}

TEST(NormalizeTable, FlagsOff) {
  DonutConfig config;
  config.do_normalize = false;
  Result<NormalizeTable> rescaled = MakeNormalizeTable(config);
  ASSERT_TRUE(rescaled.ok());
  EXPECT_EQ(rescaled->f32[1][255], 1.0f);
  EXPECT_EQ(rescaled->f32[1][51], static_cast<float>(51 * (1.0 / 255.0)));
  config.do_rescale = false;
  Result<NormalizeTable> raw = MakeNormalizeTable(config);
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->f32[2][200], 200.0f);
}

TEST(NormalizeTable, HalfEntriesAreRoundedFloat32) {
  Result<NormalizeTable> table = MakeNormalizeTable(DonutConfig{});
  ASSERT_TRUE(table.ok());
  // numpy .astype(np.float16) of values 0, 1, 2, 100, 127, 128, 200, 254, 255.
  const int values[] = {0, 1, 2, 100, 127, 128, 200, 254, 255};
  const uint16_t expected[] = {0xbc00, 0xbbf0, 0xbbe0, 0xb2e7, 0x9c04,
                               0x1c04, 0x388d, 0x3bf0, 0x3c00};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(table->f16[0][values[i]], expected[i]) << values[i];
  for (int v = 0; v < 256; ++v) {
    EXPECT_EQ(table->bf16[2][v], FloatToBfloat16(table->f32[2][v]));
  }
}

TEST(NormalizeTable, RejectsBadConfig) {
  DonutConfig config;
  config.std[1] = 0;
  EXPECT_EQ(MakeNormalizeTable(config).status().code(), StatusCode::kInvalidArgument);
  config = DonutConfig{};
  config.std[0] = 1e-50;  // Zero once in float32, as numpy would make it.
  EXPECT_EQ(MakeNormalizeTable(config).status().code(), StatusCode::kInvalidArgument);
  config = DonutConfig{};
  config.mean[2] = NAN;
  EXPECT_EQ(MakeNormalizeTable(config).status().code(), StatusCode::kInvalidArgument);
}

// An independent round-to-nearest-even reference for finite x below the largest bfloat16: the
// nearer of the two bfloat16 values around x (distances exact in double), ties to the even one.
uint16_t ReferenceBfloat16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const auto lo = static_cast<uint16_t>(bits >> 16);
  const auto hi = static_cast<uint16_t>(lo + 1);
  const double d_lo = std::fabs(double{x} - std::bit_cast<float>(uint32_t{lo} << 16));
  const double d_hi = std::fabs(double{std::bit_cast<float>(uint32_t{hi} << 16)} - x);
  if (d_lo != d_hi) return d_lo < d_hi ? lo : hi;
  return (lo & 1) == 0 ? lo : hi;
}

TEST(FloatConversion, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBfloat16(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBfloat16(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie -> even
  EXPECT_EQ(FloatToBfloat16(std::bit_cast<float>(0x3F818000u)), 0x3F82);  // tie -> even (up)
  EXPECT_EQ(FloatToBfloat16(std::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_EQ(FloatToBfloat16(-1.0f), 0xBF80);
  EXPECT_EQ(FloatToBfloat16(INFINITY), 0x7F80);
  EXPECT_EQ(FloatToBfloat16(std::bit_cast<float>(0x7F7FFFFFu)), 0x7F80);  // max float -> inf
  EXPECT_EQ(FloatToBfloat16(NAN) & 0x7FC0, 0x7FC0);
  for (uint64_t b = 0; b < 0x7F7F0000ull; b += 65521) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(b));
    ASSERT_EQ(FloatToBfloat16(x), ReferenceBfloat16(x)) << std::hex << b;
    ASSERT_EQ(FloatToBfloat16(-x), ReferenceBfloat16(-x)) << std::hex << b;
  }
}

TEST(FloatConversion, HalfRoundsToNearestEven) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even zero
  EXPECT_EQ(FloatToHalf(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(FloatToHalf(NAN) & 0x7E00, 0x7E00);
#if defined(__FLT16_MAX__)
  // The compiler's own float -> _Float16 conversion is IEEE round-to-nearest-even.
  for (uint64_t b = 0; b <= 0x7F800000ull; b += 4099) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(b));
    ASSERT_EQ(FloatToHalf(x), std::bit_cast<uint16_t>(static_cast<_Float16>(x))) << std::hex << b;
    ASSERT_EQ(FloatToHalf(-x), std::bit_cast<uint16_t>(static_cast<_Float16>(-x))) << std::hex << b;
  }
#endif
}

struct Planes {
  std::vector<uint8_t> rgb, gray;
  int32_t width = 5, height = 3;
  Planes() {
    for (int i = 0; i < width * height; ++i) {
      gray.push_back(static_cast<uint8_t>(i * 17));
      for (int c = 0; c < 3; ++c) rgb.push_back(static_cast<uint8_t>(i * 17 + c * 80));
    }
  }
  ImageView Rgb() const { return {rgb.data(), width, height, 3, width * 3}; }
  ImageView Gray() const { return {gray.data(), width, height, 1, width}; }
};

TEST(Normalize, LayoutsAndDtypes) {
  const Planes p;
  Result<NormalizeTable> table = MakeNormalizeTable(DonutConfig{});
  ASSERT_TRUE(table.ok());
  const size_t n = 5 * 3 * 3;
  std::vector<float> chw(n), hwc(n);
  ASSERT_TRUE(Normalize(p.Rgb(), *table, OutputLayout::kChw, DType::kFloat32, chw.data()).ok());
  ASSERT_TRUE(Normalize(p.Rgb(), *table, OutputLayout::kHwc, DType::kFloat32, hwc.data()).ok());
  std::vector<uint16_t> f16(n), bf16(n);
  std::vector<uint8_t> u8(n);
  ASSERT_TRUE(Normalize(p.Rgb(), *table, OutputLayout::kChw, DType::kFloat16, f16.data()).ok());
  ASSERT_TRUE(Normalize(p.Rgb(), *table, OutputLayout::kChw, DType::kBfloat16, bf16.data()).ok());
  ASSERT_TRUE(Normalize(p.Rgb(), *table, OutputLayout::kChw, DType::kUint8, u8.data()).ok());
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 15; ++i) {
      const uint8_t v = p.rgb[static_cast<size_t>(i * 3 + c)];
      const size_t chw_i = static_cast<size_t>(c * 15 + i);
      EXPECT_EQ(chw[chw_i], table->f32[c][v]);
      EXPECT_EQ(hwc[static_cast<size_t>(i * 3 + c)], table->f32[c][v]);
      EXPECT_EQ(f16[chw_i], FloatToHalf(table->f32[c][v]));
      EXPECT_EQ(bf16[chw_i], FloatToBfloat16(table->f32[c][v]));
      EXPECT_EQ(u8[chw_i], v);
    }
  }
  EXPECT_EQ(DTypeSize(DType::kBfloat16), 2u);
  EXPECT_EQ(DTypeSize(DType::kFloat32), 4u);
}

TEST(Normalize, GrayIsReplicated) {
  const Planes p;
  Result<NormalizeTable> table = MakeNormalizeTable(DonutConfig{});
  ASSERT_TRUE(table.ok());
  std::vector<uint8_t> replicated;
  for (uint8_t g : p.gray) replicated.insert(replicated.end(), {g, g, g});
  const ImageView rgb{replicated.data(), 5, 3, 3, 15};
  for (OutputLayout layout : {OutputLayout::kChw, OutputLayout::kHwc}) {
    std::vector<float> a(45), b(45);
    ASSERT_TRUE(Normalize(p.Gray(), *table, layout, DType::kFloat32, a.data()).ok());
    ASSERT_TRUE(Normalize(rgb, *table, layout, DType::kFloat32, b.data()).ok());
    EXPECT_EQ(a, b);
  }
}

TEST(Normalize, PaddedStrideIsHonoured) {
  std::vector<uint8_t> rows = {1, 2, 3, 99, 4, 5, 6, 99};  // 1x2 RGB... with 1 byte of padding
  const ImageView view{rows.data(), 1, 2, 3, 4};
  Result<NormalizeTable> table = MakeNormalizeTable(DonutConfig{});
  ASSERT_TRUE(table.ok());
  std::vector<uint8_t> out(6);
  ASSERT_TRUE(Normalize(view, *table, OutputLayout::kHwc, DType::kUint8, out.data()).ok());
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6}));
}

TEST(Normalize, RejectsBadArguments) {
  const Planes p;
  Result<NormalizeTable> table = MakeNormalizeTable(DonutConfig{});
  ASSERT_TRUE(table.ok());
  std::vector<float> out(45);
  ImageView bad = p.Rgb();
  bad.width = 0;
  EXPECT_FALSE(Normalize(bad, *table, OutputLayout::kChw, DType::kFloat32, out.data()).ok());
  bad = p.Rgb();
  bad.channels = 4;
  EXPECT_FALSE(Normalize(bad, *table, OutputLayout::kChw, DType::kFloat32, out.data()).ok());
  bad = p.Rgb();
  bad.stride_bytes = 4;
  EXPECT_FALSE(Normalize(bad, *table, OutputLayout::kChw, DType::kFloat32, out.data()).ok());
  EXPECT_FALSE(Normalize(p.Rgb(), *table, OutputLayout::kChw, DType::kFloat32, nullptr).ok());
}

// The SIMD CHW float32 writer (normalize_chw.cc) against the table read directly: every uint8
// value in every channel, widths around the vector and head sizes, a padded stride, and output
// planes at every float offset from a 64-byte boundary (streamed and unaligned stores).
class NormalizeChwTarget : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override { hwy::SetSupportedTargetsForTest(GetParam()); }
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

TEST_P(NormalizeChwTarget, Float32EqualsTableForEveryValueAndAlignment) {
  DonutConfig config;
  config.mean = {0.485, 0.456, 0.406};
  config.std = {0.229, 0.224, 0.225};
  Result<NormalizeTable> table = MakeNormalizeTable(config);
  ASSERT_TRUE(table.ok());
  for (int32_t width : {1, 15, 16, 17, 31, 64, 100, 256, 1200}) {
    const int32_t height = 3;
    const int32_t stride = width * 3 + 5;
    std::vector<uint8_t> pixels(static_cast<size_t>(stride) * height);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7 + i / 256);
    const ImageView view{pixels.data(), width, height, 3, stride};
    const size_t n = static_cast<size_t>(width) * height * 3;
    std::vector<float> buffer(n + 32);
    for (size_t shift = 0; shift < 16; ++shift) {
      float* out =
          buffer.data() + (16 - reinterpret_cast<uintptr_t>(buffer.data()) / 4 % 16) + shift;
      ASSERT_TRUE(Normalize(view, *table, OutputLayout::kChw, DType::kFloat32, out).ok());
      for (int c = 0; c < 3; ++c) {
        for (int32_t y = 0; y < height; ++y) {
          for (int32_t x = 0; x < width; ++x) {
            const uint8_t v = pixels[static_cast<size_t>(y * stride + x * 3 + c)];
            const size_t i = static_cast<size_t>((c * height + y) * width + x);
            ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(table->f32[c][v]))
                << "width " << width << " shift " << shift << " c " << c << " x " << x;
          }
        }
      }
    }
  }
  // All 256 values per channel, once through the SIMD path and once through the scalar one.
  std::vector<uint8_t> ramp(256 * 3);
  for (int v = 0; v < 256; ++v) {
    for (int c = 0; c < 3; ++c) ramp[static_cast<size_t>(v * 3 + c)] = static_cast<uint8_t>(v);
  }
  const ImageView view{ramp.data(), 256, 1, 3, 256 * 3};
  std::vector<float> simd(256 * 3), scalar(256 * 3);
  ASSERT_TRUE(Normalize(view, *table, OutputLayout::kChw, DType::kFloat32, simd.data()).ok());
  SetSimdModeOverride(SimdMode::kScalar);
  const Status s = Normalize(view, *table, OutputLayout::kChw, DType::kFloat32, scalar.data());
  ClearSimdModeOverride();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(std::memcmp(simd.data(), scalar.data(), simd.size() * sizeof(float)), 0);
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      ASSERT_EQ(std::bit_cast<uint32_t>(simd[static_cast<size_t>(c * 256 + v)]),
                std::bit_cast<uint32_t>(table->f32[c][v]));
    }
  }
}

std::string TargetParamName(const ::testing::TestParamInfo<int64_t>& param) {
  return hwy::TargetName(param.param);
}

INSTANTIATE_TEST_SUITE_P(AllTargets, NormalizeChwTarget,
                         ::testing::ValuesIn(hwy::SupportedAndGeneratedTargets()), TargetParamName);

// NormalizePadded equals DonutPad into a canvas followed by Normalize, for every dtype, layout,
// source channel count and SIMD mode, with the image at corners, edges and inside; the canvas
// widths make the SIMD writer's rows start at every alignment.
TEST(NormalizePadded, EqualsPadThenNormalize) {
  DonutConfig config;
  config.mean = {0.485, 0.456, 0.406};
  config.std = {0.229, 0.224, 0.225};
  Result<NormalizeTable> table = MakeNormalizeTable(config);
  ASSERT_TRUE(table.ok());
  std::mt19937 rng(5);
  for (SimdMode mode : {SimdMode::kAuto, SimdMode::kScalar}) {
    SetSimdModeOverride(mode);
    for (int iter = 0; iter < 60; ++iter) {
      const int32_t cw = 1 + static_cast<int32_t>(rng() % 70),
                    ch = 1 + static_cast<int32_t>(rng() % 9);
      const int32_t w = 1 + static_cast<int32_t>(rng() % cw),
                    h = 1 + static_cast<int32_t>(rng() % ch);
      const int32_t c = rng() % 2 == 0 ? 3 : 1;
      const PadOffsets at{static_cast<int32_t>(rng() % (ch - h + 1)),
                          static_cast<int32_t>(rng() % (cw - w + 1))};
      std::vector<uint8_t> pixels(static_cast<size_t>(w) * h * c + 5);
      for (uint8_t& v : pixels) v = static_cast<uint8_t>(rng());
      const ImageView image{pixels.data(), w, h, c, static_cast<ptrdiff_t>(w) * c};
      std::vector<uint8_t> canvas(static_cast<size_t>(cw) * ch * 3);
      ASSERT_TRUE(DonutPad(image, at, MutableImageView{canvas.data(), cw, ch, 3, cw * 3}).ok());
      const ImageView padded{canvas.data(), cw, ch, 3, cw * 3};
      for (DType dtype : {DType::kUint8, DType::kFloat32, DType::kFloat16, DType::kBfloat16}) {
        for (OutputLayout layout : {OutputLayout::kChw, OutputLayout::kHwc}) {
          const size_t bytes = canvas.size() * DTypeSize(dtype);
          std::vector<float> want(bytes / 4 + 1), got(bytes / 4 + 1, 12345.0f);
          ASSERT_TRUE(Normalize(padded, *table, layout, dtype, want.data()).ok());
          ASSERT_TRUE(NormalizePadded(image, at, ch, cw, *table, layout, dtype, got.data()).ok());
          ASSERT_EQ(std::memcmp(want.data(), got.data(), bytes), 0)
              << w << "x" << h << "x" << c << " in " << cw << "x" << ch << " at " << at.left << ","
              << at.top << " dtype " << static_cast<int>(dtype);
        }
      }
    }
  }
  ClearSimdModeOverride();
}

TEST(NormalizePadded, RejectsWhatDoesNotFit) {
  Result<NormalizeTable> table = MakeNormalizeTable(DonutConfig{});
  ASSERT_TRUE(table.ok());
  std::vector<uint8_t> pixels(4 * 3 * 3);
  const ImageView image{pixels.data(), 4, 3, 3, 12};
  std::vector<float> out(5 * 5 * 3);
  const auto run = [&](PadOffsets at, int32_t h, int32_t w, const ImageView& v, void* dst) {
    return NormalizePadded(v, at, h, w, *table, OutputLayout::kChw, DType::kFloat32, dst);
  };
  EXPECT_TRUE(run({1, 1}, 5, 5, image, out.data()).ok());
  EXPECT_FALSE(run({3, 0}, 5, 5, image, out.data()).ok());  // Bottom edge.
  EXPECT_FALSE(run({0, 2}, 5, 5, image, out.data()).ok());  // Right edge.
  EXPECT_FALSE(run({-1, 0}, 5, 5, image, out.data()).ok());
  EXPECT_FALSE(run({0, 0}, 0, 5, image, out.data()).ok());
  EXPECT_FALSE(run({0, 0}, 5, 5, image, nullptr).ok());
  ImageView bad = image;
  bad.channels = 2;
  EXPECT_FALSE(run({0, 0}, 5, 5, bad, out.data()).ok());
}

}  // namespace
}  // namespace docfeed::internal
