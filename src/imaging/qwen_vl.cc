#include "imaging/qwen_vl.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "imaging/normalize_chw.h"
#include "kernels/simd_mode.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace docfeed::internal {
namespace {

// Python's round(x) for a float: to nearest, ties to even. std::nearbyint rounds in the current
// mode, which is round-to-nearest-even unless someone changed it; std::round would take ties away
// from zero (round(2.5) is 2 in Python).
double PythonRound(double x) {
  const double floor = std::floor(x);
  const double diff = x - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return std::fmod(floor, 2.0) == 0 ? floor : floor + 1;
}

std::string Dims(int64_t height, int64_t width) {
  return std::to_string(width) + "x" + std::to_string(height);
}

// The values of one patch row for channel value lookups of type T.
template <typename T>
void WritePatches(const ImageView& page, const QwenVLConfig& config, const T* const tables[3],
                  T* out) {
  const int32_t p = config.patch_size;
  const int32_t m = config.merge_size;
  const int32_t frames = config.temporal_patch_size;
  const int32_t grid_h = page.height / p;
  const int32_t grid_w = page.width / p;
  const size_t plane = static_cast<size_t>(p) * static_cast<size_t>(p);
  const int32_t channels = page.channels;
  for (int32_t bh = 0; bh < grid_h / m; ++bh) {
    for (int32_t bw = 0; bw < grid_w / m; ++bw) {
      for (int32_t mh = 0; mh < m; ++mh) {
        for (int32_t mw = 0; mw < m; ++mw) {
          const int32_t y0 = (bh * m + mh) * p;
          const int32_t x0 = (bw * m + mw) * p;
          for (int32_t c = 0; c < 3; ++c) {
            const T* table = tables[c];
            const int32_t src_c = channels == 1 ? 0 : c;
            T* first = out;  // frame 0 of this channel; the other frames copy it
            for (int32_t y = 0; y < p; ++y) {
              const uint8_t* row = page.data + static_cast<ptrdiff_t>(y0 + y) * page.stride_bytes +
                                   static_cast<ptrdiff_t>(x0) * channels + src_c;
              for (int32_t x = 0; x < p; ++x) *out++ = table[row[x * channels]];
            }
            for (int32_t f = 1; f < frames; ++f) {
              std::memcpy(out, first, plane * sizeof(T));
              out += plane;
            }
          }
        }
      }
    }
  }
}

// WritePatches for float32 from a 3-channel page, same values: each band of one merged row of
// patches (patch_size x merge_size pixel rows) is normalized once into three CHW scratch planes
// by the SIMD table writer (normalize_chw.h: the same table entries), kept in cache, and each
// patch row is then copied from them into every frame. kPatch > 0 fixes patch_size at compile
// time (14, every Qwen2-VL / Qwen2.5-VL checkpoint's), so that a row's copy is a few vector
// moves rather than a call to memcpy.
template <int32_t kPatch>
void WritePatchesFloat32Banded(const ImageView& page, const QwenVLConfig& config,
                               const float* const tables[3], float* out) {
  const int32_t p = kPatch > 0 ? kPatch : config.patch_size;
  const int32_t m = config.merge_size;
  const int32_t frames = config.temporal_patch_size;
  const int32_t band_rows = p * m;
  const auto width = static_cast<size_t>(page.width);
  const size_t plane = static_cast<size_t>(band_rows) * width;
  const std::unique_ptr<float[]> band(new float[3 * plane]);  // every element written per band
  for (int32_t y0 = 0; y0 < page.height; y0 += band_rows) {
    const ImageView rows{page.data + static_cast<ptrdiff_t>(y0) * page.stride_bytes, page.width,
                         band_rows, 3, page.stride_bytes};
    NormalizeChwFloat32Strided(rows, tables, band.get(), plane, width, Stores::kCached);
    for (int32_t bw = 0; bw < page.width / band_rows; ++bw) {
      for (int32_t mh = 0; mh < m; ++mh) {
        for (int32_t mw = 0; mw < m; ++mw) {
          const float* patch = band.get() + static_cast<size_t>(mh * p) * width +
                               static_cast<size_t>((bw * m + mw) * p);
          for (int32_t c = 0; c < 3; ++c) {
            for (int32_t f = 0; f < frames; ++f) {
              const float* src = patch + static_cast<size_t>(c) * plane;
              for (int32_t y = 0; y < p; ++y, src += width, out += p) {
                if constexpr (kPatch > 0) {
                  std::memcpy(out, src, sizeof(float) * kPatch);
                } else {
                  std::memcpy(out, src, sizeof(float) * static_cast<size_t>(p));
                }
              }
            }
          }
        }
      }
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define DOCFEED_QWEN_AVX512 "avx512f,avx512bw,avx512vl,avx512vbmi"

// 16 lanes of 32-bit table entries to dst: as they are for float32, their low halves (the
// float16 / bfloat16 bits) for 16-bit T.
template <typename T>
[[gnu::target(DOCFEED_QWEN_AVX512), gnu::always_inline]] inline void Store16(T* dst, __m512i v) {
  if constexpr (sizeof(T) == 4) {
    _mm512_storeu_si512(dst, v);
  } else {
    // (The maskz forms here and below: the plain ones' undefined sources trip GCC 12's
    // -Wmaybe-uninitialized.)
    const __m256i halves = _mm512_maskz_cvtepi32_epi16(static_cast<__mmask16>(0xffff), v);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), halves);
  }
}

// WritePatches with AVX-512, same values, for 8 <= patch_size <= 16 (kPatch > 0 fixes it at
// compile time: 14, every Qwen2-VL / Qwen2.5-VL checkpoint's). `tables` hold 32-bit entries:
// the float32 table, or the 16-bit one zero-extended.
//
// The output (23.7 MB a page at max_pixels 1003520) is what costs: the writer is bound by
// taking its lines into the cache, and goes at that speed only when it writes them in address
// order. So each patch's pixels are first deinterleaved into byte planes (one vpermb a row, in
// L1), then per channel its rows are gathered from the table into registers and stored frame
// after frame, row after row. Each row is one 16-lane store whose 16 - p extra lanes fall on
// the next row, which the next store overwrites; the last row of a frame is stored as the 16
// values that end the frame (its p and the row before's last 16 - p), so nothing is written
// outside it. Masked 14-lane stores would avoid that, but measured 4x slower here, and
// interleaving the six (channel, frame) blocks row by row (three gathers a pixel row) twice as
// slow as this order.
template <typename T, int32_t kChannels, int32_t kPatch>
[[gnu::target(DOCFEED_QWEN_AVX512)]] void WritePatchesAvx512(const ImageView& page,
                                                             const QwenVLConfig& config,
                                                             const void* const tables[3], T* out) {
  // (The bound, which the caller checks, also tells the compiler that planar and v suffice.)
  const int32_t p = std::clamp(kPatch > 0 ? kPatch : config.patch_size, 8, 16);
  const int32_t m = config.merge_size;
  const int32_t frames = config.temporal_patch_size;
  const size_t plane = static_cast<size_t>(p) * static_cast<size_t>(p);
  const auto lanes = static_cast<__mmask16>((1u << p) - 1);
  // The bytes of one patch row; masked, so the last row of the page is not read past.
  const __mmask64 row_bytes = (uint64_t{1} << (p * kChannels)) - 1;
  // vpermb order: byte 16 c + i of a row's planes is pixel i's channel c.
  alignas(64) uint8_t order[64] = {};
  for (int32_t c = 0; c < 3; ++c) {
    for (int32_t i = 0; i < 16; ++i) order[c * 16 + i] = static_cast<uint8_t>(3 * i + c);
  }
  const __m512i planar_order = _mm512_load_si512(order);
  constexpr __mmask64 kPlanes = (uint64_t{1} << 48) - 1;
  // The frame's last 16 values: lanes 2p - 16.. of row p - 2, then row p - 1.
  alignas(64) int32_t tail[16];
  for (int32_t j = 0; j < 16; ++j) tail[j] = j < 16 - p ? 2 * p - 16 + j : j - (16 - p) + 16;
  const __m512i tail_order = _mm512_load_si512(tail);
  const __m512i zero = _mm512_setzero_si512();
  for (int32_t bh = 0; bh < page.height / (p * m); ++bh) {
    for (int32_t bw = 0; bw < page.width / (p * m); ++bw) {
      for (int32_t mh = 0; mh < m; ++mh) {
        for (int32_t mw = 0; mw < m; ++mw) {
          const uint8_t* src = page.data +
                               static_cast<ptrdiff_t>((bh * m + mh) * p) * page.stride_bytes +
                               static_cast<ptrdiff_t>((bw * m + mw) * p) * kChannels;
          // Row y's channel c at planar[64 y + 16 c] (a gray page's bytes at planar[64 y]).
          alignas(64) uint8_t planar[16 * 64];
          for (int32_t y = 0; y < p; ++y, src += page.stride_bytes) {
            if constexpr (kChannels == 3) {
              const __m512i px = _mm512_maskz_loadu_epi8(row_bytes, src);
              _mm512_store_si512(planar + 64 * y,
                                 _mm512_maskz_permutexvar_epi8(kPlanes, planar_order, px));
            } else {
              const __m128i px = _mm_maskz_loadu_epi8(static_cast<__mmask16>(row_bytes), src);
              _mm_store_si128(reinterpret_cast<__m128i*>(planar + 64 * y), px);
            }
          }
          for (int32_t c = 0; c < 3; ++c) {
            const uint8_t* channel = planar + (kChannels == 3 ? 16 * c : 0);
            __m512i v[16];
#pragma GCC unroll 16
            for (int32_t y = 0; y < p; ++y) {
              const __m512i idx = _mm512_maskz_cvtepu8_epi32(
                  lanes, _mm_load_si128(reinterpret_cast<const __m128i*>(channel + 64 * y)));
              v[y] = _mm512_mask_i32gather_epi32(zero, lanes, idx, tables[c], 4);
            }
            const __m512i last = _mm512_permutex2var_epi32(v[p - 2], tail_order, v[p - 1]);
            for (int32_t f = 0; f < frames; ++f, out += plane) {
#pragma GCC unroll 16
              for (int32_t y = 0; y + 1 < p; ++y) Store16(out + y * p, v[y]);
              Store16(out + plane - 16, last);
            }
          }
        }
      }
    }
  }
}
#endif  // __x86_64__ && __GNUC__

// Writes the patches with WritePatchesAvx512 where it applies (SIMD mode auto, an AVX-512 VBMI
// CPU, 8 <= patch_size <= 16); returns false, writing nothing, elsewhere.
template <typename T>
bool WritePatchesFast(const ImageView& page, const QwenVLConfig& config,
                      const void* const tables[3], T* out) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (CurrentSimdMode() != SimdMode::kAuto || config.patch_size < 8 || config.patch_size > 16 ||
      !CpuHasAvx512Vbmi()) {
    return false;
  }
  const bool p14 = config.patch_size == 14;
  if (page.channels == 3) {
    p14 ? WritePatchesAvx512<T, 3, 14>(page, config, tables, out)
        : WritePatchesAvx512<T, 3, 0>(page, config, tables, out);
  } else {
    p14 ? WritePatchesAvx512<T, 1, 14>(page, config, tables, out)
        : WritePatchesAvx512<T, 1, 0>(page, config, tables, out);
  }
  return true;
#else
  (void)page, (void)config, (void)tables, (void)out;
  return false;
#endif
}

// WritePatchesFast for 16-bit tables: its gathers read 32-bit entries, so the tables are
// zero-extended first (3 KiB, on the stack).
bool WritePatchesFast16(const ImageView& page, const QwenVLConfig& config,
                        const std::array<std::array<uint16_t, 256>, 3>& tables, uint16_t* out) {
  uint32_t wide[3][256];
  for (int32_t c = 0; c < 3; ++c) {
    for (int32_t v = 0; v < 256; ++v) wide[c][v] = tables[static_cast<size_t>(c)][v];
  }
  const void* wide_tables[3] = {wide[0], wide[1], wide[2]};
  return WritePatchesFast(page, config, wide_tables, out);
}

}  // namespace

Status ValidateQwenVLConfig(const QwenVLConfig& config) {
  auto in_range = [](int32_t v) { return v >= 1 && v <= 1024; };
  if (!in_range(config.patch_size)) return InvalidArgumentError("patch_size must be in 1..1024");
  if (!in_range(config.temporal_patch_size)) {
    return InvalidArgumentError("temporal_patch_size must be in 1..1024");
  }
  if (!in_range(config.merge_size)) return InvalidArgumentError("merge_size must be in 1..1024");
  if (config.min_pixels < 1) return InvalidArgumentError("min_pixels must be at least 1");
  if (config.max_pixels < config.min_pixels || config.max_pixels > (int64_t{1} << 40)) {
    return InvalidArgumentError("max_pixels must be in min_pixels.." +
                                std::to_string(int64_t{1} << 40) + ", got " +
                                std::to_string(config.max_pixels));
  }
  if (config.hf_version != 4 && config.hf_version != 5) {
    return InvalidArgumentError("hf_version must be 4 or 5");
  }
  if (config.backend == DonutBackend::kTorchvision && config.hf_version != 5) {
    return InvalidArgumentError(
        "backend torchvision needs hf_version 5 (transformers 4's fast processor is not "
        "reproduced)");
  }
  return MakeQwenVLTable(config).status();
}

Result<NormalizeTable> MakeQwenVLTable(const QwenVLConfig& config) {
  // The table's arithmetic is the same as Donut's for the same generation and backend: numpy's
  // rescale + normalize, or torchvision's fused one; only these fields matter to it.
  DonutConfig normalization;
  normalization.hf_version = config.hf_version;
  normalization.backend = config.backend;
  normalization.do_rescale = config.do_rescale;
  normalization.do_normalize = config.do_normalize;
  normalization.rescale_factor = config.rescale_factor;
  normalization.mean = config.mean;
  normalization.std = config.std;
  return MakeNormalizeTable(normalization);
}

Result<QwenGeometry> QwenSmartResize(int64_t height, int64_t width, const QwenVLConfig& config) {
  if (height < 1 || width < 1) {
    return InvalidArgumentError("image is " + Dims(height, width) + ", expected a non-empty one");
  }
  if (!config.do_resize) {
    if (height % config.patch_size != 0 || width % config.patch_size != 0 ||
        (height / config.patch_size) % config.merge_size != 0 ||
        (width / config.patch_size) % config.merge_size != 0) {
      return InvalidArgumentError("with do_resize off the page must be a multiple of " +
                                  std::to_string(config.patch_size * config.merge_size) +
                                  " on each side, got " + Dims(height, width));
    }
    return QwenGeometry{static_cast<int32_t>(height), static_cast<int32_t>(width)};
  }
  const double ratio =
      static_cast<double>(std::max(height, width)) / static_cast<double>(std::min(height, width));
  if (ratio > 200) {
    return InvalidArgumentError("absolute aspect ratio must be smaller than 200, got " +
                                std::to_string(ratio) + " (" + Dims(height, width) + ")");
  }
  const int64_t factor = int64_t{config.patch_size} * config.merge_size;
  const double f = static_cast<double>(factor);
  const double h = static_cast<double>(height);
  const double w = static_cast<double>(width);
  const double area = static_cast<double>(height * width);  // exact: both below 2^31
  int64_t h_bar = static_cast<int64_t>(PythonRound(h / f)) * factor;
  int64_t w_bar = static_cast<int64_t>(PythonRound(w / f)) * factor;
  if (h_bar * w_bar > config.max_pixels) {
    const double beta = std::sqrt(area / static_cast<double>(config.max_pixels));
    h_bar = std::max(factor, static_cast<int64_t>(std::floor(h / beta / f)) * factor);
    w_bar = std::max(factor, static_cast<int64_t>(std::floor(w / beta / f)) * factor);
  } else if (h_bar * w_bar < config.min_pixels) {
    const double beta = std::sqrt(static_cast<double>(config.min_pixels) / area);
    h_bar = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
  }
  if (h_bar < factor || w_bar < factor || h_bar > INT32_MAX || w_bar > INT32_MAX) {
    return InvalidArgumentError("smart_resize of " + Dims(height, width) + " gives " +
                                Dims(h_bar, w_bar) + ", not a page of whole merged patches");
  }
  return QwenGeometry{static_cast<int32_t>(h_bar), static_cast<int32_t>(w_bar)};
}

int64_t QwenPatchCount(int32_t height, int32_t width, const QwenVLConfig& config) {
  return int64_t{height / config.patch_size} * int64_t{width / config.patch_size};
}

int64_t QwenPatchDim(const QwenVLConfig& config) {
  return int64_t{3} * config.temporal_patch_size * config.patch_size * config.patch_size;
}

int64_t QwenMaxPatches(const QwenVLConfig& config) {
  // Bounds on h_bar * w_bar. Rounding alone keeps it within max_pixels (or it takes the first
  // branch). The first branch's floors keep it within max_pixels unless a side is clamped up to
  // the factor f: then the other side is at most w / beta = sqrt(max_pixels * w / h) <=
  // sqrt(200 * max_pixels). The second branch's ceilings add at most f to sides a, b with
  // a * b = min_pixels and a / b <= 200: (a + f)(b + f) <= min + f * sqrt(min) * (sqrt(200) +
  // 1 / sqrt(200)) + f^2. A margin of one merged patch per side covers the doubles' rounding.
  const double f = static_cast<double>(int64_t{config.patch_size} * config.merge_size);
  const double max_area = static_cast<double>(config.max_pixels);
  const double min_area = static_cast<double>(config.min_pixels);
  const double s = std::sqrt(200.0);
  const double clamped = f * (std::sqrt(200.0 * max_area) + 2 * f);
  const double grown = min_area + f * std::sqrt(min_area) * (s + 1 / s) + 4 * f * f;
  const double area = std::max({max_area + 2 * f * f, clamped, grown});
  const double per_patch = static_cast<double>(config.patch_size) * config.patch_size;
  return static_cast<int64_t>(std::ceil(area / per_patch));
}

Status QwenPatchify(const ImageView& page, const QwenVLConfig& config, const NormalizeTable& table,
                    DType dtype, void* out) {
  const int32_t merged = config.patch_size * config.merge_size;
  if (page.data == nullptr || out == nullptr || page.width < 1 || page.height < 1 ||
      (page.channels != 1 && page.channels != 3) ||
      page.stride_bytes < static_cast<ptrdiff_t>(page.width) * page.channels) {
    return InvalidArgumentError("patchify: needs a non-empty 1- or 3-channel page and an output");
  }
  if (page.height % merged != 0 || page.width % merged != 0) {
    return InvalidArgumentError("patchify: page is " + Dims(page.height, page.width) +
                                ", not a multiple of " + std::to_string(merged) + " on each side");
  }
  switch (dtype) {
    case DType::kUint8: {
      static const std::array<uint8_t, 256> identity = [] {
        std::array<uint8_t, 256> t{};
        for (int v = 0; v < 256; ++v) t[v] = static_cast<uint8_t>(v);
        return t;
      }();
      const uint8_t* tables[3] = {identity.data(), identity.data(), identity.data()};
      WritePatches(page, config, tables, static_cast<uint8_t*>(out));
      break;
    }
    case DType::kFloat32: {
      const float* tables[3] = {table.f32[0].data(), table.f32[1].data(), table.f32[2].data()};
      const void* entries[3] = {tables[0], tables[1], tables[2]};
      auto* dst = static_cast<float*>(out);
      if (WritePatchesFast(page, config, entries, dst)) break;
      if (page.channels == 3 && CurrentSimdMode() == SimdMode::kAuto) {
        config.patch_size == 14 ? WritePatchesFloat32Banded<14>(page, config, tables, dst)
                                : WritePatchesFloat32Banded<0>(page, config, tables, dst);
      } else {
        WritePatches(page, config, tables, dst);
      }
      break;
    }
    case DType::kFloat16: {
      auto* dst = static_cast<uint16_t*>(out);
      if (WritePatchesFast16(page, config, table.f16, dst)) break;
      const uint16_t* tables[3] = {table.f16[0].data(), table.f16[1].data(), table.f16[2].data()};
      WritePatches(page, config, tables, dst);
      break;
    }
    case DType::kBfloat16: {
      auto* dst = static_cast<uint16_t*>(out);
      if (WritePatchesFast16(page, config, table.bf16, dst)) break;
      const uint16_t* tables[3] = {table.bf16[0].data(), table.bf16[1].data(),
                                   table.bf16[2].data()};
      WritePatches(page, config, tables, dst);
      break;
    }
  }
  return Status::Ok();
}

}  // namespace docfeed::internal
