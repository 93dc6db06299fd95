// Properties of the Qwen2-VL geometry and patch layout that hold for every size; the pixel
// values themselves are compared with transformers in tests/python/test_hf_qwen_vl_parity.py.
#include "imaging/qwen_vl.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/simd_mode.h"

namespace docfeed::internal {
namespace {

TEST(QwenSmartResize, RoundsHalfToEvenAsPython) {
  QwenVLConfig config;
  config.min_pixels = 1;
  // 42 / 28 = 1.5 -> 2, 70 / 28 = 2.5 -> 2, 98 / 28 = 3.5 -> 4, 126 / 28 = 4.5 -> 4.
  Result<QwenGeometry> g = QwenSmartResize(42, 70, config);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->height, 56);
  EXPECT_EQ(g->width, 56);
  g = QwenSmartResize(98, 126, config);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->height, 112);
  EXPECT_EQ(g->width, 112);
}

TEST(QwenSmartResize, RefusesAspectRatiosOver200AndEmptyResults) {
  QwenVLConfig config;
  EXPECT_TRUE(QwenSmartResize(20, 4000, config).ok());  // exactly 200
  Result<QwenGeometry> g = QwenSmartResize(20, 4001, config);
  ASSERT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("absolute aspect ratio must be smaller than 200"),
            std::string::npos);
  EXPECT_EQ(QwenSmartResize(0, 10, config).status().code(), StatusCode::kInvalidArgument);
}

// Every size smart_resize accepts gives whole merged patches within QwenMaxPatches, over a sweep
// of sizes and settings that reaches all three branches and the clamped sides.
TEST(QwenMaxPatches, BoundsEveryAcceptedSize) {
  std::vector<QwenVLConfig> configs(4);
  configs[1].max_pixels = 28 * 28 * 64;
  configs[2].min_pixels = 256 * 256;
  configs[2].max_pixels = 300 * 300;
  configs[3].patch_size = 16;
  configs[3].merge_size = 1;
  configs[3].max_pixels = 16 * 16 * 8;
  configs[3].min_pixels = 16 * 16 * 8;
  const std::vector<int64_t> sides = {1,   2,   13,   27,   28,   29,   41,   42,   100,
                                      399, 777, 1200, 1553, 4000, 5000, 9999, 20000};
  for (const QwenVLConfig& config : configs) {
    const int64_t bound = QwenMaxPatches(config);
    const int32_t merged = config.patch_size * config.merge_size;
    for (int64_t h : sides) {
      for (int64_t w : sides) {
        Result<QwenGeometry> g = QwenSmartResize(h, w, config);
        if (!g.ok()) continue;
        EXPECT_EQ(g->height % merged, 0);
        EXPECT_EQ(g->width % merged, 0);
        EXPECT_LE(QwenPatchCount(g->height, g->width, config), bound)
            << h << "x" << w << " max_pixels " << config.max_pixels;
      }
    }
  }
}

// Row r of the output is patch r in merge order; each row is channel, frame, y, x. Checked on a
// page whose every pixel encodes its coordinates, with the uint8 (table-free) output.
TEST(QwenPatchify, LaysOutPatchesInMergeOrderWithRepeatedFrames) {
  QwenVLConfig config;
  config.patch_size = 2;
  config.merge_size = 2;
  config.temporal_patch_size = 2;
  const int32_t height = 8, width = 4;  // grid 4 x 2 patches, merge blocks 2 x 1
  std::vector<uint8_t> pixels(static_cast<size_t>(height) * width * 3);
  for (int32_t y = 0; y < height; ++y) {
    for (int32_t x = 0; x < width; ++x) {
      for (int32_t c = 0; c < 3; ++c) {
        pixels[(y * width + x) * 3 + c] = static_cast<uint8_t>(y * 16 + x * 4 + c);
      }
    }
  }
  Result<NormalizeTable> table = MakeQwenVLTable(config);
  ASSERT_TRUE(table.ok());
  std::vector<uint8_t> out(static_cast<size_t>(QwenPatchCount(height, width, config)) *
                           QwenPatchDim(config));
  ASSERT_TRUE(QwenPatchify({pixels.data(), width, height, 3, width * 3}, config, *table,
                           DType::kUint8, out.data())
                  .ok());
  // Patch order: block (0,0): (0,0) (0,1) (1,0) (1,1); block (1,0): (2,0) (2,1) (3,0) (3,1).
  const int32_t order[8][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}, {3, 0}, {3, 1}};
  size_t i = 0;
  for (const auto& [pr, pc] : order) {
    for (int32_t c = 0; c < 3; ++c) {
      for (int32_t t = 0; t < 2; ++t) {
        for (int32_t y = 0; y < 2; ++y) {
          for (int32_t x = 0; x < 2; ++x, ++i) {
            EXPECT_EQ(out[i], (pr * 2 + y) * 16 + (pc * 2 + x) * 4 + c) << "element " << i;
          }
        }
      }
    }
  }
  EXPECT_EQ(i, out.size());
}

// float32 takes the AVX-512 writer (patch sizes 8..16, where the CPU has it), else from RGB pages
// a banded SIMD writer (compile-time patch size 14, or any size); DOCFEED_SIMD=scalar the table
// loop. Every path must give each element the
// table entry of its pixel, in merge order, every frame the same, whatever the row stride.
TEST(QwenPatchify, Float32IsTheTableEntryOfEachPixelOnEveryPath) {
  struct Case {
    int32_t patch, merge, frames, height, width, channels, stride_pad;
  };
  const Case cases[] = {{14, 2, 2, 56, 84, 3, 0}, {14, 2, 2, 28, 28, 3, 5},
                        {14, 2, 2, 56, 28, 1, 3}, {2, 2, 1, 8, 12, 3, 1},
                        {3, 3, 3, 18, 27, 3, 0},  {16, 1, 2, 32, 48, 3, 7}};
  for (const Case& k : cases) {
    QwenVLConfig config;
    config.patch_size = k.patch;
    config.merge_size = k.merge;
    config.temporal_patch_size = k.frames;
    const ptrdiff_t stride = ptrdiff_t{k.width} * k.channels + k.stride_pad;
    std::vector<uint8_t> pixels(static_cast<size_t>(stride) * k.height);
    uint32_t state = 12345;
    for (uint8_t& v : pixels)
      v = static_cast<uint8_t>((state = state * 1103515245u + 12345u) >> 24);
    Result<NormalizeTable> table = MakeQwenVLTable(config);
    ASSERT_TRUE(table.ok());
    // The expected values, enumerated directly: merge blocks, the patches in a block, channels,
    // frames, rows, columns.
    std::vector<float> want;
    const int32_t p = k.patch, m = k.merge;
    for (int32_t bh = 0; bh < k.height / (p * m); ++bh) {
      for (int32_t bw = 0; bw < k.width / (p * m); ++bw) {
        for (int32_t i = 0; i < m * m; ++i) {
          const int32_t y0 = (bh * m + i / m) * p, x0 = (bw * m + i % m) * p;
          for (int32_t c = 0; c < 3; ++c) {
            for (int32_t t = 0; t < k.frames; ++t) {
              for (int32_t y = 0; y < p; ++y) {
                for (int32_t x = 0; x < p; ++x) {
                  const int32_t src_c = k.channels == 1 ? 0 : c;
                  const uint8_t v = pixels[static_cast<size_t>((y0 + y) * stride +
                                                               (x0 + x) * k.channels + src_c)];
                  want.push_back(table->f32[static_cast<size_t>(c)][v]);
                }
              }
            }
          }
        }
      }
    }
    ASSERT_EQ(want.size(), static_cast<size_t>(QwenPatchCount(k.height, k.width, config) *
                                               QwenPatchDim(config)));
    for (SimdMode mode : {SimdMode::kAuto, SimdMode::kScalar}) {
      SetSimdModeOverride(mode);
      std::vector<float> got(want.size(), -7.0f);
      ASSERT_TRUE(QwenPatchify({pixels.data(), k.width, k.height, k.channels, stride}, config,
                               *table, DType::kFloat32, got.data())
                      .ok());
      EXPECT_EQ(got, want) << "patch " << k.patch << " merge " << k.merge << " frames " << k.frames
                           << " channels " << k.channels << " mode "
                           << (mode == SimdMode::kAuto ? "auto" : "scalar");
    }
    ClearSimdModeOverride();
  }
}

// The SIMD writers (AVX-512 for 8 <= patch_size <= 16 where the CPU has it, else the banded one
// for float32 RGB) against the plain table loop (DOCFEED_SIMD=scalar), byte for byte, for every
// dtype with tables, gray and RGB pages 1..5 merged patches wide, padded rows, and nothing
// written past the output (each frame's last row is stored differently from the others).
TEST(QwenPatchify, SimdWritersMatchTheTableLoop) {
  struct Setting {
    int32_t patch, merge, frames;
  };
  const Setting settings[] = {{14, 2, 2}, {14, 1, 1}, {16, 1, 2}, {9, 2, 3}, {8, 3, 2}, {15, 2, 1}};
  for (const Setting& s : settings) {
    QwenVLConfig config;
    config.patch_size = s.patch;
    config.merge_size = s.merge;
    config.temporal_patch_size = s.frames;
    Result<NormalizeTable> table = MakeQwenVLTable(config);
    ASSERT_TRUE(table.ok());
    const int32_t merged = s.patch * s.merge;
    for (int32_t blocks = 1; blocks <= 5; ++blocks) {
      for (int32_t channels : {1, 3}) {
        const int32_t width = merged * blocks, height = merged * (blocks % 2 + 1);
        const ptrdiff_t stride = ptrdiff_t{width} * channels + blocks % 3;
        std::vector<uint8_t> pixels(static_cast<size_t>(stride) * height);
        uint32_t state = static_cast<uint32_t>(blocks * 977 + s.patch);
        for (uint8_t& v : pixels)
          v = static_cast<uint8_t>((state = state * 1103515245u + 12345u) >> 24);
        const ImageView page{pixels.data(), width, height, channels, stride};
        const size_t values =
            static_cast<size_t>(QwenPatchCount(height, width, config) * QwenPatchDim(config));
        for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBfloat16}) {
          const size_t size = DTypeSize(dtype);
          std::vector<std::vector<uint8_t>> outs;
          for (SimdMode mode : {SimdMode::kScalar, SimdMode::kAuto}) {
            SetSimdModeOverride(mode);
            // 64 guard bytes past the output, which must keep their value.
            std::vector<uint8_t> out((values + 64) * size, 0xa5);
            ASSERT_TRUE(QwenPatchify(page, config, *table, dtype, out.data()).ok());
            for (size_t i = values * size; i < out.size(); ++i) ASSERT_EQ(out[i], 0xa5) << i;
            outs.push_back(std::move(out));
          }
          ClearSimdModeOverride();
          EXPECT_TRUE(outs[0] == outs[1])
              << "patch " << s.patch << " merge " << s.merge << " frames " << s.frames << " "
              << width << "x" << height << " channels " << channels << " dtype size " << size;
        }
      }
    }
  }
}

TEST(QwenPatchify, RefusesPagesThatAreNotWholeMergedPatches) {
  QwenVLConfig config;
  std::vector<uint8_t> pixels(30 * 28 * 3);
  Result<NormalizeTable> table = MakeQwenVLTable(config);
  ASSERT_TRUE(table.ok());
  std::vector<float> out(4 * QwenPatchDim(config));
  EXPECT_EQ(
      QwenPatchify({pixels.data(), 28, 30, 3, 28 * 3}, config, *table, DType::kFloat32, out.data())
          .code(),
      StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace docfeed::internal
