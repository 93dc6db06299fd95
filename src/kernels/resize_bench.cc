// Resize benchmarks on realistic pages: A4 RGB at 300 and 150 dpi resized to Donut's
// 1200-pixel shortest edge, and Donut's BICUBIC thumbnail step; scalar reference vs Highway.
// Run: build/bin/kernels_bench --benchmark_filter=BM_Resize
#include <benchmark/benchmark.h>
#include <hwy/targets.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "kernels/resample.h"
#include "kernels/resample_coeffs.h"
#include "kernels/resize.h"
#include "kernels/simd_mode.h"

namespace docfeed::internal {
namespace {

// A white page with dark text-like strokes and mild scanner noise.
std::vector<uint8_t> DocumentPage(int32_t width, int32_t height) {
  std::vector<uint8_t> page(static_cast<size_t>(width) * height * 3, 255);
  std::mt19937 rng(42);
  const int32_t line_pitch = std::max(8, height / 90);
  for (int32_t y0 = line_pitch; y0 + line_pitch < height; y0 += line_pitch) {
    for (int32_t x = width / 12; x < width - width / 12; ++x) {
      if ((x / 7 + y0) % 5 == 0) continue;  // Gaps between "words".
      for (int32_t y = y0; y < y0 + line_pitch / 2; ++y) {
        if (rng() % 3 == 0) {
          uint8_t* p = &page[(static_cast<size_t>(y) * width + x) * 3];
          p[0] = p[1] = p[2] = static_cast<uint8_t>(rng() % 60);
        }
      }
    }
  }
  for (auto& v : page) v = static_cast<uint8_t>(std::max(0, v - static_cast<int>(rng() % 6)));
  return page;
}

void RunResize(benchmark::State& state, ResampleFilter filter, int32_t in_w, int32_t in_h,
               int32_t out_w, int32_t out_h, double gap) {
  const bool scalar = state.range(0) == 0;
  const std::vector<uint8_t> page = DocumentPage(in_w, in_h);
  std::vector<uint8_t> out(static_cast<size_t>(out_w) * out_h * 3);
  const ImageView src{page.data(), in_w, in_h, 3, in_w * 3};
  const MutableImageView dst{out.data(), out_w, out_h, 3, out_w * 3};
  SetSimdModeOverride(scalar ? SimdMode::kScalar : SimdMode::kAuto);
  for (auto _ : state) {
    Status s = Resize(src, dst, filter, nullptr, gap);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(out.data());
  }
  ClearSimdModeOverride();
  state.SetLabel(scalar ? "scalar" : "simd");
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(page.size()));
}

// Args: {0 = scalar, 1 = SIMD}. A4 at 300 dpi is 2480x3508; Donut's shortest-edge step makes
// it 1200x1697 (BILINEAR). At 150 dpi it is 1240x1754.
void BM_Resize_Bilinear_A4_300dpi(benchmark::State& s) {
  RunResize(s, ResampleFilter::kBilinear, 2480, 3508, 1200, 1697, 0);
}
void BM_Resize_Bicubic_A4_300dpi(benchmark::State& s) {
  RunResize(s, ResampleFilter::kBicubic, 2480, 3508, 1200, 1697, 0);
}
void BM_Resize_Lanczos_A4_300dpi(benchmark::State& s) {
  RunResize(s, ResampleFilter::kLanczos, 2480, 3508, 1200, 1697, 0);
}
void BM_Resize_Bilinear_A4_150dpi(benchmark::State& s) {
  RunResize(s, ResampleFilter::kBilinear, 1240, 1754, 1200, 1697, 0);
}
void BM_Resize_Bicubic_A4_150dpi(benchmark::State& s) {
  RunResize(s, ResampleFilter::kBicubic, 1240, 1754, 1200, 1697, 0);
}
void BM_Resize_Lanczos_A4_150dpi(benchmark::State& s) {
  RunResize(s, ResampleFilter::kLanczos, 1240, 1754, 1200, 1697, 0);
}
// Donut's thumbnail step: 1200x1697 -> 1098x1553, BICUBIC, reducing_gap 2.0.
void BM_Resize_BicubicThumbnail_Donut(benchmark::State& s) {
  RunResize(s, ResampleFilter::kBicubic, 1200, 1697, 1098, 1553, 2.0);
}

// Arg 0 is the scalar reference; others restrict Highway to one target (1 = best supported).
constexpr int64_t kPassTargets[] = {0, 0, HWY_AVX3_DL, HWY_AVX3, HWY_AVX2};

// Restricts dispatch to the target an Arg names while alive; false if the CPU lacks it.
class TargetScope {
 public:
  explicit TargetScope(int64_t arg) {
    const int64_t t = kPassTargets[arg];
    ok_ = t == 0 || (hwy::SupportedTargets() & t) != 0;
    if (ok_ && t != 0) hwy::SetSupportedTargetsForTest(t);
    label_ = arg == 0 ? "scalar" : t == 0 ? "simd" : hwy::TargetName(t);
  }
  ~TargetScope() { hwy::SetSupportedTargetsForTest(0); }
  TargetScope(const TargetScope&) = delete;
  TargetScope& operator=(const TargetScope&) = delete;
  bool ok() const { return ok_; }
  const char* label() const { return label_; }

 private:
  bool ok_;
  const char* label_;
};

// One pass alone, on the rows/bytes Donut's BILINEAR step feeds it (A4 RGB 300 dpi, 2480 ->
// 1200 wide, 3508 -> 1697 high). Args: kPassTargets.
void BM_Pass_Horizontal_Donut(benchmark::State& state) {
  const bool scalar = state.range(0) == 0;
  const TargetScope target(state.range(0));
  if (!target.ok()) return state.SkipWithError("target not supported");
  const std::vector<uint8_t> page = DocumentPage(2480, 3508);
  std::vector<uint8_t> out(static_cast<size_t>(1200) * 3508 * 3);
  CoeffTable x;
  if (!ComputeCoeffs(2480, 0, 2480, 1200, ResampleFilter::kBilinear, &x).ok()) std::abort();
  for (auto _ : state) {
    if (scalar) {
      ResampleHorizontalReference(page.data(), 2480 * 3, 2480, 3508, 3, x, out.data(), 1200 * 3);
    } else {
      ResampleHorizontalSimd(page.data(), 2480 * 3, 2480, 3508, 3, x, out.data(), 1200 * 3);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(target.label());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(page.size()));
}
// The horizontal passes of whole-page document presets on 2481-pixel RGB scan rows, as the
// presets run them: a kernel prepared once (MakeHorizontalKernel) on rows that the decoder or
// the band buffer just wrote, hence in cache; here 32 rows (~240 KB, in L2) over and over. On a
// whole page in memory the pass is bound by DRAM bandwidth instead. Args: kPassTargets.
void RunHorizontalPass(benchmark::State& state, ResampleFilter filter, int32_t out_w,
                       int32_t in_w = 2481) {
  constexpr int32_t kRows = 32;
  const TargetScope target(state.range(0));
  if (!target.ok()) return state.SkipWithError("target not supported");
  const std::vector<uint8_t> page = DocumentPage(in_w, kRows * 8);
  const uint8_t* rows = page.data() + static_cast<size_t>(in_w) * 3 * kRows * 4;  // Text lines.
  std::vector<uint8_t> out(static_cast<size_t>(out_w) * kRows * 3);
  CoeffTable x;
  if (!ComputeCoeffs(in_w, 0, in_w, out_w, filter, &x).ok()) std::abort();
  SetSimdModeOverride(state.range(0) == 0 ? SimdMode::kScalar : SimdMode::kAuto);
  const std::unique_ptr<HorizontalKernel> kernel = MakeHorizontalKernel(x, 3, in_w);
  ClearSimdModeOverride();
  for (auto _ : state) {
    kernel->Run(rows, in_w * 3, kRows, out.data(), out_w * 3);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(target.label());
  state.SetItemsProcessed(state.iterations() * kRows);  // Rows.
}
// Idefics3 (longest edge 2048): LANCZOS 2481 -> 1448, ~12 taps.
void BM_Pass_Horizontal_Idefics3(benchmark::State& s) {
  RunHorizontalPass(s, ResampleFilter::kLanczos, 1448);
}
// Idefics3's global image: LANCZOS 1536 -> 512 (1536x2048 resized to 384x512), ~19 taps.
void BM_Pass_Horizontal_Idefics3Global(benchmark::State& s) {
  RunHorizontalPass(s, ResampleFilter::kLanczos, 512, 1536);
}
// Qwen2-VL (max_pixels 1003520): BICUBIC 2481 -> 840, ~13 taps.
void BM_Pass_Horizontal_Qwen2VL(benchmark::State& s) {
  RunHorizontalPass(s, ResampleFilter::kBicubic, 840);
}
// Donut's shortest-edge step on this scan: BILINEAR 2481 -> 1200, ~5 taps.
void BM_Pass_Horizontal_Donut2481(benchmark::State& s) {
  RunHorizontalPass(s, ResampleFilter::kBilinear, 1200);
}

void BM_Pass_Vertical_Donut(benchmark::State& state) {
  const bool scalar = state.range(0) == 0;
  const TargetScope target(state.range(0));
  if (!target.ok()) return state.SkipWithError("target not supported");
  const std::vector<uint8_t> page = DocumentPage(1200, 3508);
  std::vector<uint8_t> out(static_cast<size_t>(1200) * 1697 * 3);
  CoeffTable y;
  if (!ComputeCoeffs(3508, 0, 3508, 1697, ResampleFilter::kBilinear, &y).ok()) std::abort();
  for (auto _ : state) {
    if (scalar) {
      ResampleVerticalReference(page.data(), 1200 * 3, 1200 * 3, y, out.data(), 1200 * 3);
    } else {
      ResampleVerticalSimd(page.data(), 1200 * 3, 1200 * 3, y, out.data(), 1200 * 3);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(target.label());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(page.size()));
}

#define DOCFEED_RESIZE_BENCH(name) \
  BENCHMARK(name)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()
DOCFEED_RESIZE_BENCH(BM_Resize_Bilinear_A4_300dpi);
DOCFEED_RESIZE_BENCH(BM_Resize_Bicubic_A4_300dpi);
DOCFEED_RESIZE_BENCH(BM_Resize_Lanczos_A4_300dpi);
DOCFEED_RESIZE_BENCH(BM_Resize_Bilinear_A4_150dpi);
DOCFEED_RESIZE_BENCH(BM_Resize_Bicubic_A4_150dpi);
DOCFEED_RESIZE_BENCH(BM_Resize_Lanczos_A4_150dpi);
DOCFEED_RESIZE_BENCH(BM_Resize_BicubicThumbnail_Donut);
BENCHMARK(BM_Pass_Horizontal_Donut)->DenseRange(0, 4)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Pass_Horizontal_Idefics3)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Pass_Horizontal_Idefics3Global)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Pass_Horizontal_Qwen2VL)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Pass_Horizontal_Donut2481)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Pass_Vertical_Donut)->DenseRange(0, 4)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace docfeed::internal

BENCHMARK_MAIN();
