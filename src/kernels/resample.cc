// Highway SIMD resampling passes and their dispatch. Bit-identical to resample_reference.cc.
//
// Exactness: the weights have 22 bits, so 16-bit multiply-add (pmaddwd) would round them.
// Both passes multiply in 32-bit lanes instead (exact: |pixel * weight| < 2^30) and keep Pillow's
// accumulation, rounding bias and clamp, so every target yields the reference's bytes.
//
// Vertical pass: all output bytes of a row share one weight per tap, so lanes are consecutive
// bytes of the row: acc += promote(src_row_t[i..]) * broadcast(k_t).
// Horizontal pass: lanes are consecutive output pixels. Each lane's tap t is a 4-byte gather at
// byte (first(o) + t) * channels, which holds all channels of that source pixel; the weights are
// re-laid out per lane group ("group tables") once per call. Lanes of a group with fewer taps
// read byte 0 with weight 0.
#include "kernels/resample.h"

#include <algorithm>
#include <cstring>

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

void VerticalPass(const uint8_t* src, ptrdiff_t src_stride, int32_t row_bytes, const CoeffTable& y,
                  uint8_t* dst, ptrdiff_t dst_stride) {
  for (int32_t o = 0; o < y.out_size; ++o) {
    VerticalRow(src + y.first(o) * src_stride, src_stride, row_bytes, y.row(o), y.taps(o),
                dst + o * dst_stride);
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

GroupTables BuildGroupTables(const CoeffTable& x, int32_t channels, size_t lanes) {
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
void HorizontalRows(const uint8_t* src, ptrdiff_t src_stride, int32_t src_width, int32_t rows,
                    const CoeffTable& x, uint8_t* dst, ptrdiff_t dst_stride) {
  const GroupTables g = BuildGroupTables(x, kChannels, hn::Lanes(D32()));
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

}  // namespace

void HorizontalPassImpl(const uint8_t* src, ptrdiff_t src_stride, int32_t src_width, int32_t rows,
                        int32_t channels, const CoeffTable& x, uint8_t* dst, ptrdiff_t dst_stride) {
  switch (channels) {
    case 1:
      return HorizontalRows<1>(src, src_stride, src_width, rows, x, dst, dst_stride);
    case 2:
      return HorizontalRows<2>(src, src_stride, src_width, rows, x, dst, dst_stride);
    case 3:
      return HorizontalRows<3>(src, src_stride, src_width, rows, x, dst, dst_stride);
    default:
      return HorizontalRows<4>(src, src_stride, src_width, rows, x, dst, dst_stride);
  }
}

void VerticalPassImpl(const uint8_t* src, ptrdiff_t src_stride, int32_t row_bytes,
                      const CoeffTable& y, uint8_t* dst, ptrdiff_t dst_stride) {
  VerticalPass(src, src_stride, row_bytes, y, dst, dst_stride);
}

}  // namespace HWY_NAMESPACE
}  // namespace docfeed::internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace docfeed::internal {

HWY_EXPORT(HorizontalPassImpl);
HWY_EXPORT(VerticalPassImpl);

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
