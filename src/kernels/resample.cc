// Highway SIMD resampling passes and their dispatch. Bit-identical to resample_reference.cc.
//
// Generic targets (AVX2, SSE4, SSSE3, SCALAR) multiply in 32-bit lanes (exact: |pixel * weight|
// < 2^30) and keep Pillow's accumulation, rounding bias and clamp, so every target yields the
// reference's bytes. AVX3/AVX3_DL use resample_avx512-inl.h instead: 16-bit multiply-adds with
// each 22-bit weight split into two int16 halves, exact modulo 2^32 (argument there).
//
// Vertical pass: all output bytes of a row share one weight per tap, so lanes are consecutive
// bytes of the row: acc += promote(src_row_t[i..]) * broadcast(k_t).
// Horizontal pass, AVX-512 targets (for windows their permutes cannot take): lanes are
// consecutive output pixels. Each lane's tap t is a 4-byte gather at byte (first(o) + t) *
// channels, which holds all channels of that source pixel; the weights are re-laid out per lane
// group ("group tables") once per call. Lanes of a group with fewer taps read byte 0 with
// weight 0. Other targets: BandedRows (a band of rows transposed, then the vertical pass's loop).
// Both passes together (SeparableImpl) stream bands of rows through a cache-sized buffer.
#include "kernels/resample.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/simd_mode.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/resample.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// foreach_target.h must precede highway.h.
#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace docfeed::internal {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

using D32 = hn::ScalableTag<int32_t>;
using DU32 = hn::RebindToUnsigned<D32>;
using DU8 = hn::Rebind<uint8_t, D32>;  // One byte per int32 lane.
using V32 = hn::Vec<D32>;

// Pillow's clip8 on a vector of accumulators, narrowed to bytes.
HWY_INLINE hn::Vec<DU8> Clip8(V32 acc) {
  const D32 d;
  const V32 shifted = hn::ShiftRight<kPrecisionBits>(acc);
  return hn::DemoteTo(DU8(), hn::Min(hn::Max(shifted, hn::Zero(d)), hn::Set(d, 255)));
}

inline uint8_t Clip8Scalar(int32_t acc) {
  return static_cast<uint8_t>(std::clamp(acc >> kPrecisionBits, 0, 255));
}

// ------------------------------------------------------------------ vertical pass

// One output row, `kUnroll` vectors of bytes at a time; the tail is scalar.
void VerticalRow(const uint8_t* src, ptrdiff_t stride, int32_t row_bytes, const int32_t* k,
                 int32_t taps, uint8_t* out) {
  constexpr size_t kUnroll = 4;
  const D32 d;
  const DU8 d8;
  const auto n = static_cast<int32_t>(hn::Lanes(d));
  int32_t i = 0;
  constexpr auto kUnroll32 = static_cast<int32_t>(kUnroll);
  for (; i + n * kUnroll32 <= row_bytes; i += n * kUnroll32) {
    V32 acc[kUnroll];
    for (auto& a : acc) a = hn::Set(d, kRoundingBias);
    const uint8_t* p = src + i;
    for (int32_t t = 0; t < taps; ++t, p += stride) {
      const V32 kv = hn::Set(d, k[t]);
      for (size_t u = 0; u < kUnroll; ++u) {
        acc[u] = hn::Add(acc[u], hn::PromoteTo(d, hn::LoadU(d8, p + u * n)) * kv);
      }
    }
    for (size_t u = 0; u < kUnroll; ++u) hn::StoreU(Clip8(acc[u]), d8, out + i + u * n);
  }
  for (; i + n <= row_bytes; i += n) {
    V32 acc = hn::Set(d, kRoundingBias);
    const uint8_t* p = src + i;
    for (int32_t t = 0; t < taps; ++t, p += stride) {
      acc = hn::Add(acc, hn::PromoteTo(d, hn::LoadU(d8, p)) * hn::Set(d, k[t]));
    }
    hn::StoreU(Clip8(acc), d8, out + i);
  }
  for (; i < row_bytes; ++i) {
    int32_t acc = kRoundingBias;
    for (int32_t t = 0; t < taps; ++t) acc += src[t * stride + i] * k[t];
    out[i] = Clip8Scalar(acc);
  }
}

// Output rows [o0, o1) at dst + (o - o0) * dst_stride; `src` starts at source row `src_row0`.
void VerticalRows(const uint8_t* src, ptrdiff_t src_stride, int32_t src_row0, int32_t row_bytes,
                  const CoeffTable& y, int32_t o0, int32_t o1, uint8_t* dst, ptrdiff_t dst_stride) {
  for (int32_t o = o0; o < o1; ++o) {
    VerticalRow(src + (y.first(o) - src_row0) * src_stride, src_stride, row_bytes, y.row(o),
                y.taps(o), dst + (o - o0) * dst_stride);
  }
}

// ------------------------------------------------------------------ horizontal pass

// Weights and gather offsets re-laid out for groups of `lanes` consecutive output pixels:
// for group g and tap t, vector (start[g] + t) holds one byte offset / weight per lane.
struct GroupTables {
  size_t lanes = 0;
  int32_t groups = 0;
  hwy::AlignedFreeUniquePtr<int32_t[]> start;  // groups + 1 entries, in vectors.
  hwy::AlignedFreeUniquePtr<int32_t[]> offsets;
  hwy::AlignedFreeUniquePtr<int32_t[]> weights;
};

int32_t GroupTaps(const CoeffTable& x, int32_t first_out, size_t lanes) {
  int32_t taps = 0;
  for (size_t l = 0; l < lanes && first_out + static_cast<int32_t>(l) < x.out_size; ++l) {
    taps = std::max(taps, x.taps(first_out + static_cast<int32_t>(l)));
  }
  return taps;
}

void FillGroup(const CoeffTable& x, int32_t channels, int32_t first_out, int32_t taps, size_t lanes,
               int32_t* offsets, int32_t* weights) {
  for (int32_t t = 0; t < taps; ++t) {
    for (size_t l = 0; l < lanes; ++l) {
      const int32_t o = first_out + static_cast<int32_t>(l);
      const bool used = o < x.out_size && t < x.taps(o);
      offsets[t * lanes + l] = used ? (x.first(o) + t) * channels : 0;
      weights[t * lanes + l] = used ? x.row(o)[t] : 0;
    }
  }
}

// Used by the gathering targets only (kGathers below); the others compile it and never call it.
[[maybe_unused]] GroupTables BuildGroupTables(const CoeffTable& x, int32_t channels, size_t lanes) {
  GroupTables g;
  g.lanes = lanes;
  g.groups = static_cast<int32_t>((static_cast<size_t>(x.out_size) + lanes - 1) / lanes);
  g.start = hwy::AllocateAligned<int32_t>(static_cast<size_t>(g.groups) + 1);
  g.start[0] = 0;
  for (int32_t i = 0; i < g.groups; ++i) {
    g.start[i + 1] = g.start[i] + GroupTaps(x, i * static_cast<int32_t>(lanes), lanes);
  }
  const size_t total = static_cast<size_t>(g.start[g.groups]) * lanes + lanes;
  g.offsets = hwy::AllocateAligned<int32_t>(total);
  g.weights = hwy::AllocateAligned<int32_t>(total);
  for (int32_t i = 0; i < g.groups; ++i) {
    FillGroup(x, channels, i * static_cast<int32_t>(lanes), g.start[i + 1] - g.start[i], lanes,
              g.offsets.get() + g.start[i] * lanes, g.weights.get() + g.start[i] * lanes);
  }
  return g;
}

// Channel c of gathered pixels (byte c of each 32-bit lane).
template <int c>
HWY_INLINE V32 Channel(hn::Vec<DU32> px) {
  const DU32 du;
  if constexpr (c == 3) {
    return hn::BitCast(D32(), hn::ShiftRight<24>(px));
  } else {
    return hn::BitCast(D32(), hn::And(hn::ShiftRight<8 * c>(px), hn::Set(du, 0xFFu)));
  }
}

template <int kChannels>
HWY_INLINE void Accumulate(hn::Vec<DU32> px, V32 kv, V32* acc) {
  acc[0] = hn::Add(acc[0], Channel<0>(px) * kv);
  if constexpr (kChannels > 1) acc[1] = hn::Add(acc[1], Channel<1>(px) * kv);
  if constexpr (kChannels > 2) acc[2] = hn::Add(acc[2], Channel<2>(px) * kv);
  if constexpr (kChannels > 3) acc[3] = hn::Add(acc[3], Channel<3>(px) * kv);
}

template <int kChannels>
HWY_INLINE void StorePixels(const V32* acc, uint8_t* out) {
  const DU8 d8;
  if constexpr (kChannels == 1) {
    hn::StoreU(Clip8(acc[0]), d8, out);
  } else if constexpr (kChannels == 2) {
    hn::StoreInterleaved2(Clip8(acc[0]), Clip8(acc[1]), d8, out);
  } else if constexpr (kChannels == 3) {
    hn::StoreInterleaved3(Clip8(acc[0]), Clip8(acc[1]), Clip8(acc[2]), d8, out);
  } else {
    hn::StoreInterleaved4(Clip8(acc[0]), Clip8(acc[1]), Clip8(acc[2]), Clip8(acc[3]), d8, out);
  }
}

template <int kChannels>
void HorizontalRow(const uint8_t* src, const GroupTables& g, int32_t out_size, uint8_t* out) {
  const D32 d;
  const DU32 du;
  const size_t lanes = g.lanes;
  const auto* base = reinterpret_cast<const int32_t*>(src);
  for (int32_t i = 0; i < g.groups; ++i) {
    V32 acc[kChannels];
    for (auto& a : acc) a = hn::Set(d, kRoundingBias);
    const int32_t* off = g.offsets.get() + g.start[i] * lanes;
    const int32_t* wt = g.weights.get() + g.start[i] * lanes;
    for (int32_t t = g.start[i]; t < g.start[i + 1]; ++t, off += lanes, wt += lanes) {
      const V32 px = hn::GatherOffset(d, base, hn::Load(d, off));
      Accumulate<kChannels>(hn::BitCast(du, px), hn::Load(d, wt), acc);
    }
    const int32_t first_out = i * static_cast<int32_t>(lanes);
    const int32_t count = std::min(static_cast<int32_t>(lanes), out_size - first_out);
    if (count == static_cast<int32_t>(lanes)) {
      StorePixels<kChannels>(acc, out + first_out * kChannels);
    } else {
      HWY_ALIGN uint8_t tail[HWY_MAX_BYTES * kChannels];
      StorePixels<kChannels>(acc, tail);
      std::memcpy(out + first_out * kChannels, tail, static_cast<size_t>(count) * kChannels);
    }
  }
}

// A 4-byte gather at the last pixel reads up to 4 - channels bytes past the row. That is
// inside the next row except on the last row, which is therefore copied into padded storage.
template <int kChannels>
void HorizontalRows(const GroupTables& g, const uint8_t* src, ptrdiff_t src_stride,
                    int32_t src_width, int32_t rows, const CoeffTable& x, uint8_t* dst,
                    ptrdiff_t dst_stride) {
  for (int32_t r = 0; r + 1 < rows; ++r) {
    HorizontalRow<kChannels>(src + r * src_stride, g, x.out_size, dst + r * dst_stride);
  }
  if (rows < 1) return;
  const size_t row_bytes = static_cast<size_t>(src_width) * kChannels;
  auto last = hwy::AllocateAligned<uint8_t>(row_bytes + 4);
  std::memcpy(last.get(), src + (rows - 1) * src_stride, row_bytes);
  std::memset(last.get() + row_bytes, 0, 4);
  HorizontalRow<kChannels>(last.get(), g, x.out_size, dst + (rows - 1) * dst_stride);
}

// The horizontal pass by bands of N rows (N: the int32 lanes), for the targets without AVX-512,
// whose gathers are slow on many cores (AVX2 on AMD's, SSE4, NEON): the band is transposed so
// that source pixel x's N x kChannels bytes lie together (a "column"), then each output pixel
// is, for each of the kChannels vectors v, acc_v += promote(column bytes [v * N, v * N + N) of
// pixel first(o) + t) * broadcast(k_t), the vertical pass's loop, with no gather; the clipped
// bytes are transposed back. Lanes hold the same 32-bit sums as the gather pass's, so the
// bytes are the same. The transposes read and write exactly the rows' bytes.
template <int kChannels>
void BandedRows(const uint8_t* src, ptrdiff_t src_stride, int32_t src_width, int32_t rows,
                const CoeffTable& x, uint8_t* dst, ptrdiff_t dst_stride) {
  const D32 d;
  const DU8 d8;
  const auto n = static_cast<int32_t>(hn::Lanes(d));
  const size_t column = static_cast<size_t>(n) * kChannels;
  auto in = hwy::AllocateAligned<uint8_t>(static_cast<size_t>(src_width) * column);
  auto out = hwy::AllocateAligned<uint8_t>(static_cast<size_t>(x.out_size) * column);
  for (int32_t r0 = 0; r0 < rows; r0 += n) {
    const int32_t band = std::min(n, rows - r0);
    // A last band of fewer rows: the missing rows are zeros, and their outputs are dropped.
    if (band < n) std::memset(in.get(), 0, static_cast<size_t>(src_width) * column);
    for (int32_t r = 0; r < band; ++r) {
      const uint8_t* row = src + (r0 + r) * src_stride;
      uint8_t* to = in.get() + r * kChannels;
      for (int32_t px = 0; px < src_width; ++px) {
        std::memcpy(to + px * column, row + px * kChannels, kChannels);
      }
    }
    for (int32_t o = 0; o < x.out_size; ++o) {
      V32 acc[kChannels];
      for (auto& a : acc) a = hn::Set(d, kRoundingBias);
      const uint8_t* p = in.get() + static_cast<size_t>(x.first(o)) * column;
      const int32_t* k = x.row(o);
      for (int32_t t = 0; t < x.taps(o); ++t, p += column) {
        const V32 kv = hn::Set(d, k[t]);
        for (int v = 0; v < kChannels; ++v) {
          acc[v] = hn::Add(acc[v], hn::PromoteTo(d, hn::LoadU(d8, p + v * n)) * kv);
        }
      }
      uint8_t* q = out.get() + static_cast<size_t>(o) * column;
      for (int v = 0; v < kChannels; ++v) hn::StoreU(Clip8(acc[v]), d8, q + v * n);
    }
    for (int32_t r = 0; r < band; ++r) {
      uint8_t* row = dst + (r0 + r) * dst_stride;
      const uint8_t* from = out.get() + r * kChannels;
      for (int32_t o = 0; o < x.out_size; ++o) {
        std::memcpy(row + o * kChannels, from + o * column, kChannels);
      }
    }
  }
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include "kernels/resample_avx512-inl.h"
#endif  // HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

// Whether this target's horizontal pass gathers (AVX-512, for windows too wide for its
// permutes: its gathers are fast) or runs BandedRows (every other target).
constexpr bool kGathers = HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL;

// A horizontal pass with its weights re-laid out once, run on any rows of the source.
class HorizontalPlan {
 public:
  HorizontalPlan(const CoeffTable& x, int32_t channels, int32_t src_width)
      : x_(x), channels_(channels), src_width_(src_width) {
#if HWY_TARGET == HWY_AVX3_DL
    quad_ = BuildQuadTables(x, channels, &quad_tables_);
    if (quad_) return;
#endif
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    permute_ = BuildPermuteTables(x, channels, &permute_tables_);
    if (permute_) return;
#endif
    if constexpr (kGathers) groups_ = BuildGroupTables(x, channels, hn::Lanes(D32()));
  }

  void Run(const uint8_t* src, ptrdiff_t src_stride, int32_t rows, uint8_t* dst,
           ptrdiff_t dst_stride) const {
#if HWY_TARGET == HWY_AVX3_DL
    if (quad_) return QuadRows(quad_tables_, src, src_stride, rows, dst, dst_stride);
#endif
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    if (permute_) return PermuteRows(permute_tables_, src, src_stride, rows, dst, dst_stride);
#endif
    if constexpr (!kGathers) {
      switch (channels_) {
        case 1:
          return BandedRows<1>(src, src_stride, src_width_, rows, x_, dst, dst_stride);
        case 2:
          return BandedRows<2>(src, src_stride, src_width_, rows, x_, dst, dst_stride);
        case 3:
          return BandedRows<3>(src, src_stride, src_width_, rows, x_, dst, dst_stride);
        default:
          return BandedRows<4>(src, src_stride, src_width_, rows, x_, dst, dst_stride);
      }
    }
    switch (channels_) {
      case 1:
        return HorizontalRows<1>(groups_, src, src_stride, src_width_, rows, x_, dst, dst_stride);
      case 2:
        return HorizontalRows<2>(groups_, src, src_stride, src_width_, rows, x_, dst, dst_stride);
      case 3:
        return HorizontalRows<3>(groups_, src, src_stride, src_width_, rows, x_, dst, dst_stride);
      default:
        return HorizontalRows<4>(groups_, src, src_stride, src_width_, rows, x_, dst, dst_stride);
    }
  }

 private:
  const CoeffTable& x_;
  int32_t channels_;
  int32_t src_width_;
  GroupTables groups_;
#if HWY_TARGET == HWY_AVX3_DL
  bool quad_ = false;
  QuadTables quad_tables_;
#endif
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  bool permute_ = false;
  PermuteTables permute_tables_;
#endif
};

// A vertical pass prepared once, run on any range of output rows.
class VerticalPlan {
 public:
  explicit VerticalPlan(const CoeffTable& y) : y_(y) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    pairs_ = BuildVerticalPairs(y);
#endif
  }

  // Output rows [o0, o1) at dst + (o - o0) * dst_stride; `src` starts at source row `src_row0`.
  void Run(const uint8_t* src, ptrdiff_t src_stride, int32_t src_row0, int32_t row_bytes,
           int32_t o0, int32_t o1, uint8_t* dst, ptrdiff_t dst_stride) const {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    VerticalRowsAvx3(pairs_, src, src_stride, src_row0, row_bytes, y_, o0, o1, dst, dst_stride);
#else
    VerticalRows(src, src_stride, src_row0, row_bytes, y_, o0, o1, dst, dst_stride);
#endif
  }

 private:
  const CoeffTable& y_;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  VerticalPairs pairs_;
#endif
};

// Source rows [first, last) that output rows [o0, o1) read.
void RowSpan(const CoeffTable& y, int32_t o0, int32_t o1, int32_t* first, int32_t* last) {
  *first = y.first(o0);
  *last = y.first(o0) + y.taps(o0);
  for (int32_t o = o0 + 1; o < o1; ++o) {
    *first = std::min(*first, y.first(o));
    *last = std::max(*last, y.first(o) + y.taps(o));
  }
}

// Bytes of horizontally resampled rows one band keeps: about half of a 2 MiB L2, next to the
// source rows streaming in and the weight tables.
constexpr size_t kBandBytes = size_t{256} << 10;

}  // namespace

void HorizontalPassImpl(const uint8_t* src, ptrdiff_t src_stride, int32_t src_width, int32_t rows,
                        int32_t channels, const CoeffTable& x, uint8_t* dst, ptrdiff_t dst_stride) {
  HorizontalPlan(x, channels, src_width).Run(src, src_stride, rows, dst, dst_stride);
}

void VerticalPassImpl(const uint8_t* src, ptrdiff_t src_stride, int32_t row_bytes,
                      const CoeffTable& y, uint8_t* dst, ptrdiff_t dst_stride) {
  VerticalPlan(y).Run(src, src_stride, 0, row_bytes, 0, y.out_size, dst, dst_stride);
}

// Both passes, streamed in bands of output rows: the horizontal pass produces only the rows a
// band's vertical weights read (rows shared with the previous band are moved, not recomputed)
// into a buffer that stays in cache, and the vertical pass consumes them at once. The
// intermediate rows are the same 8-bit values as in the two-pass order, so are the bytes.
void SeparableImpl(const uint8_t* src, ptrdiff_t src_stride, int32_t src_width, int32_t channels,
                   const CoeffTable& x, const CoeffTable& y, uint8_t* dst, ptrdiff_t dst_stride) {
  const HorizontalPlan horizontal(x, channels, src_width);
  const VerticalPlan vertical(y);
  const auto stride = static_cast<ptrdiff_t>(x.out_size) * channels;
  int32_t span_first, span_last;
  RowSpan(y, 0, y.out_size, &span_first, &span_last);
  const auto band_rows = static_cast<int64_t>(kBandBytes / static_cast<size_t>(stride));
  const auto band = static_cast<int32_t>(std::clamp<int64_t>(
      band_rows * y.out_size / std::max(1, span_last - span_first), 1, y.out_size));
  int32_t capacity = 0;
  for (int32_t o0 = 0; o0 < y.out_size; o0 += band) {
    int32_t first, last;
    RowSpan(y, o0, std::min(y.out_size, o0 + band), &first, &last);
    capacity = std::max(capacity, last - first);
  }
  auto buffer = hwy::AllocateAligned<uint8_t>(static_cast<size_t>(capacity) * stride);
  int32_t have_first = 0, have_last = 0;  // Source rows held in `buffer`.
  for (int32_t o0 = 0; o0 < y.out_size; o0 += band) {
    const int32_t o1 = std::min(y.out_size, o0 + band);
    int32_t first, last;
    RowSpan(y, o0, o1, &first, &last);
    int32_t keep = 0;
    if (first >= have_first && first < have_last) {
      keep = std::min(have_last, last) - first;
      std::memmove(buffer.get(), buffer.get() + (first - have_first) * stride,
                   static_cast<size_t>(keep) * stride);
    }
    horizontal.Run(src + (first + keep) * src_stride, src_stride, last - first - keep,
                   buffer.get() + keep * stride, stride);
    vertical.Run(buffer.get(), stride, first, static_cast<int32_t>(stride), o0, o1,
                 dst + o0 * dst_stride, dst_stride);
    have_first = first, have_last = last;
  }
}

// The streaming kernels (resample.h) over this target's plans. The plans keep references to the
// tables, which the caller keeps alive.
class HorizontalKernelImpl final : public HorizontalKernel {
 public:
  HorizontalKernelImpl(const CoeffTable& x, int32_t channels, int32_t src_width)
      : plan_(x, channels, src_width) {}
  void Run(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t rows, uint8_t* dst,
           ptrdiff_t dst_stride_bytes) const override {
    plan_.Run(src, src_stride_bytes, rows, dst, dst_stride_bytes);
  }

 private:
  HorizontalPlan plan_;
};

class VerticalKernelImpl final : public VerticalKernel {
 public:
  VerticalKernelImpl(const CoeffTable& y, int32_t row_bytes) : plan_(y), row_bytes_(row_bytes) {}
  void Run(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_row0, int32_t o0, int32_t o1,
           uint8_t* dst, ptrdiff_t dst_stride_bytes) const override {
    plan_.Run(src, src_stride_bytes, src_row0, row_bytes_, o0, o1, dst, dst_stride_bytes);
  }

 private:
  VerticalPlan plan_;
  int32_t row_bytes_;
};

std::unique_ptr<HorizontalKernel> MakeHorizontalKernelImpl(const CoeffTable& x, int32_t channels,
                                                           int32_t src_width) {
  return std::make_unique<HorizontalKernelImpl>(x, channels, src_width);
}

std::unique_ptr<VerticalKernel> MakeVerticalKernelImpl(const CoeffTable& y, int32_t row_bytes) {
  return std::make_unique<VerticalKernelImpl>(y, row_bytes);
}

}  // namespace HWY_NAMESPACE
}  // namespace docfeed::internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace docfeed::internal {

HWY_EXPORT(HorizontalPassImpl);
HWY_EXPORT(VerticalPassImpl);
HWY_EXPORT(SeparableImpl);
HWY_EXPORT(MakeHorizontalKernelImpl);
HWY_EXPORT(MakeVerticalKernelImpl);

namespace {

// The reference passes behind the kernel interfaces (DOCFEED_SIMD=scalar).
class HorizontalReferenceKernel final : public HorizontalKernel {
 public:
  HorizontalReferenceKernel(const CoeffTable& x, int32_t channels, int32_t src_width)
      : x_(x), channels_(channels), src_width_(src_width) {}
  void Run(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t rows, uint8_t* dst,
           ptrdiff_t dst_stride_bytes) const override {
    ResampleHorizontalReference(src, src_stride_bytes, src_width_, rows, channels_, x_, dst,
                                dst_stride_bytes);
  }

 private:
  const CoeffTable& x_;
  int32_t channels_;
  int32_t src_width_;
};

class VerticalReferenceKernel final : public VerticalKernel {
 public:
  VerticalReferenceKernel(const CoeffTable& y, int32_t row_bytes) : y_(y), row_bytes_(row_bytes) {}
  void Run(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_row0, int32_t o0, int32_t o1,
           uint8_t* dst, ptrdiff_t dst_stride_bytes) const override {
    // Pillow's loop (resample_reference.cc) on one output row at a time.
    for (int32_t o = o0; o < o1; ++o) {
      const uint8_t* in = src + (y_.first(o) - src_row0) * src_stride_bytes;
      const int32_t* k = y_.row(o);
      uint8_t* out = dst + (o - o0) * dst_stride_bytes;
      for (int32_t i = 0; i < row_bytes_; ++i) {
        int32_t acc = kRoundingBias;
        for (int32_t t = 0; t < y_.taps(o); ++t) acc += in[t * src_stride_bytes + i] * k[t];
        out[i] = static_cast<uint8_t>(std::clamp(acc >> kPrecisionBits, 0, 255));
      }
    }
  }

 private:
  const CoeffTable& y_;
  int32_t row_bytes_;
};

}  // namespace

std::unique_ptr<HorizontalKernel> MakeHorizontalKernel(const CoeffTable& x, int32_t channels,
                                                       int32_t src_width) {
  if (CurrentSimdMode() == SimdMode::kScalar) {
    return std::make_unique<HorizontalReferenceKernel>(x, channels, src_width);
  }
  return HWY_DYNAMIC_DISPATCH(MakeHorizontalKernelImpl)(x, channels, src_width);
}

std::unique_ptr<VerticalKernel> MakeVerticalKernel(const CoeffTable& y, int32_t row_bytes) {
  if (CurrentSimdMode() == SimdMode::kScalar) {
    return std::make_unique<VerticalReferenceKernel>(y, row_bytes);
  }
  return HWY_DYNAMIC_DISPATCH(MakeVerticalKernelImpl)(y, row_bytes);
}

void ResampleHorizontalSimd(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_width,
                            int32_t rows, int32_t channels, const CoeffTable& x, uint8_t* dst,
                            ptrdiff_t dst_stride_bytes) {
  HWY_DYNAMIC_DISPATCH(HorizontalPassImpl)
  (src, src_stride_bytes, src_width, rows, channels, x, dst, dst_stride_bytes);
}

void ResampleVerticalSimd(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t row_bytes,
                          const CoeffTable& y, uint8_t* dst, ptrdiff_t dst_stride_bytes) {
  HWY_DYNAMIC_DISPATCH(VerticalPassImpl)
  (src, src_stride_bytes, row_bytes, y, dst, dst_stride_bytes);
}

void ResampleSeparableSimd(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_width,
                           int32_t channels, const CoeffTable& x, const CoeffTable& y, uint8_t* dst,
                           ptrdiff_t dst_stride_bytes) {
  HWY_DYNAMIC_DISPATCH(SeparableImpl)
  (src, src_stride_bytes, src_width, channels, x, y, dst, dst_stride_bytes);
}

void ResampleSeparable(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_width,
                       int32_t channels, const CoeffTable& x, const CoeffTable& y, uint8_t* dst,
                       ptrdiff_t dst_stride_bytes) {
  if (CurrentSimdMode() == SimdMode::kScalar) {
    return ResampleSeparableReference(src, src_stride_bytes, src_width, channels, x, y, dst,
                                      dst_stride_bytes);
  }
  ResampleSeparableSimd(src, src_stride_bytes, src_width, channels, x, y, dst, dst_stride_bytes);
}

void ResampleHorizontal(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_width,
                        int32_t rows, int32_t channels, const CoeffTable& x, uint8_t* dst,
                        ptrdiff_t dst_stride_bytes) {
  if (CurrentSimdMode() == SimdMode::kScalar) {
    return ResampleHorizontalReference(src, src_stride_bytes, src_width, rows, channels, x, dst,
                                       dst_stride_bytes);
  }
  ResampleHorizontalSimd(src, src_stride_bytes, src_width, rows, channels, x, dst,
                         dst_stride_bytes);
}

void ResampleVertical(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t row_bytes,
                      const CoeffTable& y, uint8_t* dst, ptrdiff_t dst_stride_bytes) {
  if (CurrentSimdMode() == SimdMode::kScalar) {
    return ResampleVerticalReference(src, src_stride_bytes, row_bytes, y, dst, dst_stride_bytes);
  }
  ResampleVerticalSimd(src, src_stride_bytes, row_bytes, y, dst, dst_stride_bytes);
}

}  // namespace docfeed::internal
#endif  // HWY_ONCE
