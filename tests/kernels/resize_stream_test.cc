// MakeResizeStream: for every Highway target and the scalar reference, streaming a source in
// random bands gives exactly Resize()'s bytes, into a destination or through a chain of two
// streams (the Donut preset's shape); and the cases it leaves to Resize() return nullptr.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/resize.h"
#include "kernels/simd_mode.h"

namespace docfeed::internal {
namespace {

std::vector<uint8_t> RandomPixels(size_t n, std::mt19937& rng) {
  std::vector<uint8_t> v(n);
  // Runs of equal values with jumps, like text on paper, plus plain noise.
  uint8_t value = 0;
  for (auto& p : v) {
    if (rng() % 7 == 0) value = static_cast<uint8_t>(rng());
    p = rng() % 4 == 0 ? static_cast<uint8_t>(rng()) : value;
  }
  return v;
}

// Collects pushed rows into one image (exact size, so ASan sees any overrun).
class Collector : public RowSink {
 public:
  explicit Collector(size_t row_bytes) : row_bytes_(row_bytes) {}
  void PushRows(const uint8_t* rows, ptrdiff_t stride, int32_t count) override {
    for (int32_t r = 0; r < count; ++r)
      rows_.insert(rows_.end(), rows + r * stride, rows + r * stride + row_bytes_);
  }
  const std::vector<uint8_t>& bytes() const { return rows_; }

 private:
  size_t row_bytes_;
  std::vector<uint8_t> rows_;
};

// Pushes an image in random bands (1..40 rows), through a buffer of exactly that many rows.
void PushInBands(RowSink& sink, const std::vector<uint8_t>& src, int32_t height, size_t row_bytes,
                 std::mt19937& rng) {
  for (int32_t r = 0; r < height;) {
    const int32_t n = std::min<int32_t>(height - r, 1 + static_cast<int32_t>(rng() % 40));
    std::vector<uint8_t> band(src.begin() + static_cast<ptrdiff_t>(r * row_bytes),
                              src.begin() + static_cast<ptrdiff_t>((r + n) * row_bytes));
    sink.PushRows(band.data(), static_cast<ptrdiff_t>(row_bytes), n);
    r += n;
  }
}

struct Case {
  int32_t sw, sh, dw, dh, c;
  ResampleFilter filter;
  Box box;
  double gap;
};

Case RandomCase(std::mt19937& rng) {
  const ResampleFilter filters[] = {ResampleFilter::kBilinear, ResampleFilter::kBicubic,
                                    ResampleFilter::kLanczos, ResampleFilter::kBox,
                                    ResampleFilter::kHamming};
  Case k{};
  k.sw = 1 + static_cast<int32_t>(rng() % 300);
  k.sh = 1 + static_cast<int32_t>(rng() % 300);
  // Mostly downscales, some upscales, some unchanged axes (one-pass and copy cases).
  auto side = [&](int32_t s) {
    switch (rng() % 5) {
      case 0:
        return s;
      case 1:
        return 1 + static_cast<int32_t>(rng() % (2 * s + 1));
      default:
        return 1 + static_cast<int32_t>(rng() % s);
    }
  };
  k.dw = side(k.sw);
  k.dh = side(k.sh);
  k.c = rng() % 2 == 0 ? 3 : 1;
  k.filter = filters[rng() % 5];
  k.box = Box{0, 0, static_cast<double>(k.sw), static_cast<double>(k.sh)};
  if (rng() % 4 == 0) {
    std::uniform_real_distribution<double> u(0, 1);
    k.box.x0 = u(rng) * k.sw / 3, k.box.y0 = u(rng) * k.sh / 3;
    k.box.x1 = k.sw - u(rng) * k.sw / 3, k.box.y1 = k.sh - u(rng) * k.sh / 3;
  }
  k.gap = rng() % 3 == 0 ? 2.0 : 0;
  return k;
}

std::string Describe(const Case& k) {
  return std::to_string(k.sw) + "x" + std::to_string(k.sh) + "x" + std::to_string(k.c) + " -> " +
         std::to_string(k.dw) + "x" + std::to_string(k.dh) + " filter " +
         std::to_string(static_cast<int>(k.filter)) + " box " + std::to_string(k.box.x0) + "," +
         std::to_string(k.box.y0) + "," + std::to_string(k.box.x1) + "," +
         std::to_string(k.box.y1) + " gap " + std::to_string(k.gap);
}

class ResizeStreamPerTarget : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override {
    if (GetParam() == 0) {
      SetSimdModeOverride(SimdMode::kScalar);
    } else {
      hwy::SetSupportedTargetsForTest(GetParam());
    }
  }
  void TearDown() override {
    hwy::SetSupportedTargetsForTest(0);
    ClearSimdModeOverride();
  }
};

TEST_P(ResizeStreamPerTarget, MatchesResizeIntoDestinationAndThroughChain) {
  std::mt19937 rng(7);
  int streamed = 0;
  for (int iter = 0; iter < 100; ++iter) {
    const Case k = RandomCase(rng);
    SCOPED_TRACE(Describe(k));
    const size_t src_row = static_cast<size_t>(k.sw) * k.c,
                 dst_row = static_cast<size_t>(k.dw) * k.c;
    const std::vector<uint8_t> src = RandomPixels(src_row * k.sh, rng);
    std::vector<uint8_t> want(dst_row * k.dh);
    ASSERT_TRUE(
        Resize(ImageView{src.data(), k.sw, k.sh, k.c, static_cast<ptrdiff_t>(src_row)},
               MutableImageView{want.data(), k.dw, k.dh, k.c, static_cast<ptrdiff_t>(dst_row)},
               k.filter, &k.box, k.gap)
            .ok());
    // Into a destination.
    std::vector<uint8_t> got(want.size());
    auto stream =
        MakeResizeStream(k.sw, k.sh, k.c, k.dw, k.dh, k.filter, &k.box, k.gap,
                         StreamOutput{got.data(), static_cast<ptrdiff_t>(dst_row), nullptr});
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    if (*stream == nullptr) continue;  // Left to Resize (reduce step or crop).
    ++streamed;
    PushInBands(**stream, src, k.sh, src_row, rng);
    ASSERT_EQ(got, want);
    // Into a second stream (a 2x downscale BICUBIC of the first's output), as the Donut preset
    // chains its two resizes.
    const int32_t w2 = std::max(1, k.dw / 2), h2 = std::max(1, k.dh / 2);
    std::vector<uint8_t> want2(static_cast<size_t>(w2) * h2 * k.c);
    ASSERT_TRUE(
        Resize(ImageView{want.data(), k.dw, k.dh, k.c, static_cast<ptrdiff_t>(dst_row)},
               MutableImageView{want2.data(), w2, h2, k.c, static_cast<ptrdiff_t>(w2) * k.c},
               ResampleFilter::kBicubic, nullptr, 0)
            .ok());
    Collector collect(static_cast<size_t>(w2) * k.c);
    auto second = MakeResizeStream(k.dw, k.dh, k.c, w2, h2, ResampleFilter::kBicubic, nullptr, 0,
                                   StreamOutput{nullptr, 0, &collect});
    ASSERT_TRUE(second.ok() && *second != nullptr);
    auto first = MakeResizeStream(k.sw, k.sh, k.c, k.dw, k.dh, k.filter, &k.box, k.gap,
                                  StreamOutput{nullptr, 0, second->get()});
    ASSERT_TRUE(first.ok() && *first != nullptr);
    PushInBands(**first, src, k.sh, src_row, rng);
    ASSERT_EQ(collect.bytes(), want2);
  }
  EXPECT_GT(streamed, 60);
}

// Donut's shapes at a quarter of the page size: A4 RGB -> 300 wide (BILINEAR), then the
// thumbnail (BICUBIC, reducing_gap 2.0), pushed in libjpeg-like 16-row bands; an upscaled
// receipt; and a tall receipt, whose first resize runs the vertical pass first.
TEST_P(ResizeStreamPerTarget, DonutPagesMatchResize) {
  std::mt19937 rng(11);
  struct Page {
    int32_t w, h, rw, rh, tw, th;
  };
  for (const Page& pg : {Page{311, 439, 300, 423, 275, 388}, Page{200, 1000, 300, 1500, 77, 388},
                         Page{175, 650, 120, 445, 104, 388}}) {
    for (int32_t c : {1, 3}) {
      const size_t row = static_cast<size_t>(pg.w) * c;
      const std::vector<uint8_t> src = RandomPixels(row * pg.h, rng);
      std::vector<uint8_t> mid(static_cast<size_t>(pg.rw) * pg.rh * c),
          want(static_cast<size_t>(pg.tw) * pg.th * c), got(want.size());
      ASSERT_TRUE(
          Resize(ImageView{src.data(), pg.w, pg.h, c, static_cast<ptrdiff_t>(row)},
                 MutableImageView{mid.data(), pg.rw, pg.rh, c, static_cast<ptrdiff_t>(pg.rw) * c},
                 ResampleFilter::kBilinear)
              .ok());
      ASSERT_TRUE(
          Resize(ImageView{mid.data(), pg.rw, pg.rh, c, static_cast<ptrdiff_t>(pg.rw) * c},
                 MutableImageView{want.data(), pg.tw, pg.th, c, static_cast<ptrdiff_t>(pg.tw) * c},
                 ResampleFilter::kBicubic, nullptr, 2.0)
              .ok());
      auto second =
          MakeResizeStream(pg.rw, pg.rh, c, pg.tw, pg.th, ResampleFilter::kBicubic, nullptr, 2.0,
                           StreamOutput{got.data(), static_cast<ptrdiff_t>(pg.tw) * c, nullptr});
      ASSERT_TRUE(second.ok());
      if (*second == nullptr) continue;  // The receipt's thumbnail reduces first.
      auto first = MakeResizeStream(pg.w, pg.h, c, pg.rw, pg.rh, ResampleFilter::kBilinear, nullptr,
                                    0, StreamOutput{nullptr, 0, second->get()});
      ASSERT_TRUE(first.ok() && *first != nullptr);
      for (int32_t r = 0; r < pg.h; r += 16) {
        (*first)->PushRows(src.data() + r * row, static_cast<ptrdiff_t>(row),
                           std::min(16, pg.h - r));
      }
      ASSERT_EQ(got, want) << pg.w << "x" << pg.h << "x" << c;
    }
  }
}

std::vector<int64_t> TargetsAndScalar() {
  std::vector<int64_t> t = hwy::SupportedAndGeneratedTargets();
  t.push_back(0);
  return t;
}

std::string TargetParamName(const ::testing::TestParamInfo<int64_t>& info) {
  return info.param == 0 ? std::string("Reference") : hwy::TargetName(info.param);
}

INSTANTIATE_TEST_SUITE_P(AllTargets, ResizeStreamPerTarget, ::testing::ValuesIn(TargetsAndScalar()),
                         TargetParamName);

TEST(ResizeStream, DeclinesWhatResizeDoesOtherwise) {
  const StreamOutput none{nullptr, 0, nullptr};
  std::vector<uint8_t> dst(64 * 64 * 4);
  const StreamOutput out{dst.data(), 64 * 4, nullptr};
  auto alpha = MakeResizeStream(100, 100, 4, 50, 50, ResampleFilter::kBilinear, nullptr, 0, out);
  ASSERT_TRUE(alpha.ok());
  EXPECT_EQ(*alpha, nullptr);
  auto nearest = MakeResizeStream(100, 100, 3, 50, 50, ResampleFilter::kNearest, nullptr, 0, out);
  ASSERT_TRUE(nearest.ok());
  EXPECT_EQ(*nearest, nullptr);
  auto reduce = MakeResizeStream(400, 400, 3, 50, 50, ResampleFilter::kBicubic, nullptr, 2.0, out);
  ASSERT_TRUE(reduce.ok());
  EXPECT_EQ(*reduce, nullptr);
  const Box crop{3, 4, 53, 54};
  auto cropped = MakeResizeStream(100, 100, 3, 50, 50, ResampleFilter::kBicubic, &crop, 0, out);
  ASSERT_TRUE(cropped.ok());
  EXPECT_EQ(*cropped, nullptr);
  EXPECT_FALSE(
      MakeResizeStream(100, 100, 3, 50, 50, ResampleFilter::kBicubic, nullptr, 0, none).ok());
  EXPECT_FALSE(MakeResizeStream(0, 100, 3, 50, 50, ResampleFilter::kBicubic, nullptr, 0, out).ok());
  EXPECT_FALSE(
      MakeResizeStream(100, 100, 3, 50, 50, ResampleFilter::kBicubic, nullptr, 0.5, out).ok());
  const Box outside{0, 0, 101, 100};
  EXPECT_FALSE(
      MakeResizeStream(100, 100, 3, 50, 50, ResampleFilter::kBicubic, &outside, 0, out).ok());
}

}  // namespace
}  // namespace docfeed::internal
