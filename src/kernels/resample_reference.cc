// Scalar reference passes: Pillow's ImagingResampleHorizontal_8bpc and
// ImagingResampleVertical_8bpc (src/libImaging/Resample.c), one channel count per template
// instance like Pillow's per-band-count loops. These define the bytes; the SIMD passes in
// resample.cc must match them exactly.
#include <algorithm>
#include <vector>

#include "kernels/resample.h"

namespace docfeed::internal {
namespace {

// Pillow's clip8(): (acc >> 22) saturated to 0..255. The shift is arithmetic (floor).
inline uint8_t Clip8(int32_t acc) {
  return static_cast<uint8_t>(std::clamp(acc >> kPrecisionBits, 0, 255));
}

template <int kChannels>
void HorizontalRow(const uint8_t* src, const CoeffTable& x, uint8_t* dst) {
  for (int32_t o = 0; o < x.out_size; ++o) {
    const uint8_t* in = src + static_cast<ptrdiff_t>(x.first(o)) * kChannels;
    const int32_t* k = x.row(o);
    const int32_t taps = x.taps(o);
    int32_t acc[kChannels];
    for (int c = 0; c < kChannels; ++c) acc[c] = kRoundingBias;
    for (int32_t t = 0; t < taps; ++t) {
      for (int c = 0; c < kChannels; ++c) acc[c] += in[t * kChannels + c] * k[t];
    }
    for (int c = 0; c < kChannels; ++c) dst[o * kChannels + c] = Clip8(acc[c]);
  }
}

template <int kChannels>
void HorizontalRows(const uint8_t* src, ptrdiff_t src_stride, int32_t rows, const CoeffTable& x,
                    uint8_t* dst, ptrdiff_t dst_stride) {
  for (int32_t r = 0; r < rows; ++r) {
    HorizontalRow<kChannels>(src + r * src_stride, x, dst + r * dst_stride);
  }
}

}  // namespace

void ResampleHorizontalReference(const uint8_t* src, ptrdiff_t src_stride_bytes,
                                 int32_t /*src_width*/, int32_t rows, int32_t channels,
                                 const CoeffTable& x, uint8_t* dst, ptrdiff_t dst_stride_bytes) {
  switch (channels) {
    case 1:
      return HorizontalRows<1>(src, src_stride_bytes, rows, x, dst, dst_stride_bytes);
    case 2:
      return HorizontalRows<2>(src, src_stride_bytes, rows, x, dst, dst_stride_bytes);
    case 3:
      return HorizontalRows<3>(src, src_stride_bytes, rows, x, dst, dst_stride_bytes);
    default:
      return HorizontalRows<4>(src, src_stride_bytes, rows, x, dst, dst_stride_bytes);
  }
}

void ResampleVerticalReference(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t row_bytes,
                               const CoeffTable& y, uint8_t* dst, ptrdiff_t dst_stride_bytes) {
  for (int32_t o = 0; o < y.out_size; ++o) {
    const uint8_t* in = src + y.first(o) * src_stride_bytes;
    const int32_t* k = y.row(o);
    const int32_t taps = y.taps(o);
    uint8_t* out = dst + o * dst_stride_bytes;
    for (int32_t i = 0; i < row_bytes; ++i) {
      int32_t acc = kRoundingBias;
      for (int32_t t = 0; t < taps; ++t) acc += in[t * src_stride_bytes + i] * k[t];
      out[i] = Clip8(acc);
    }
  }
}

void ResampleSeparableReference(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_width,
                                int32_t channels, const CoeffTable& x, const CoeffTable& y,
                                uint8_t* dst, ptrdiff_t dst_stride_bytes) {
  // ImagingResampleInner: the horizontal pass over the rows the vertical weights read, into an
  // 8-bit temporary, then the vertical pass with its first rows shifted to the temporary's.
  const int32_t first = y.first(0);
  const int32_t last = y.first(y.out_size - 1) + y.taps(y.out_size - 1);
  const auto stride = static_cast<ptrdiff_t>(x.out_size) * channels;
  std::vector<uint8_t> temp(static_cast<size_t>(stride) * static_cast<size_t>(last - first));
  ResampleHorizontalReference(src + first * src_stride_bytes, src_stride_bytes, src_width,
                              last - first, channels, x, temp.data(), stride);
  CoeffTable shifted = y;
  for (int32_t o = 0; o < y.out_size; ++o) shifted.bounds[2 * static_cast<size_t>(o)] -= first;
  ResampleVerticalReference(temp.data(), stride, static_cast<int32_t>(stride), shifted, dst,
                            dst_stride_bytes);
}

}  // namespace docfeed::internal
