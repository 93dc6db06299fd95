// Pillow's Reduce.c semantics, restructured: column sums over the block's rows first, then
// sums over the block's columns. Integer sums are exact, so the order does not change a byte.
#include "kernels/reduce.h"

#include <algorithm>
#include <vector>

namespace docfeed::internal {

uint32_t ReduceMultiplier(uint32_t block_pixels) {
  // Pillow: max_int = (1 << 30) * 4.0 stored as float; max_dividend = 256 * n as UINT32; the
  // quotient is a float division, truncated to UINT32.
  const float max_int = static_cast<float>((1 << 30) * 4.0);
  const uint32_t max_dividend = (uint32_t{1} << 8) * block_pixels;
  return static_cast<uint32_t>(max_int / static_cast<float>(max_dividend));
}

namespace {

// Sums rows [row0, row0 + rows) of every byte column into `sums`.
void SumRows(const uint8_t* src, ptrdiff_t stride, int32_t row0, int32_t rows, size_t row_bytes,
             uint32_t* sums) {
  const uint8_t* first = src + row0 * stride;
  for (size_t i = 0; i < row_bytes; ++i) sums[i] = first[i];
  for (int32_t r = row0 + 1; r < row0 + rows; ++r) {
    const uint8_t* in = src + r * stride;
    for (size_t i = 0; i < row_bytes; ++i) sums[i] += in[i];
  }
}

// Output pixels [ox0, ox1) whose blocks are `cols` wide and `rows` high.
template <int kChannels>
void ReduceBlocks(const uint32_t* sums, int32_t factor_x, int32_t ox0, int32_t ox1, int32_t cols,
                  int32_t rows, uint8_t* out) {
  const auto n = static_cast<uint32_t>(cols * rows);
  const uint32_t multiplier = ReduceMultiplier(n);
  for (int32_t ox = ox0; ox < ox1; ++ox) {
    const uint32_t* block = sums + static_cast<ptrdiff_t>(ox) * factor_x * kChannels;
    uint32_t sum[kChannels];
    for (int c = 0; c < kChannels; ++c) sum[c] = n / 2;
    for (int32_t x = 0; x < cols; ++x) {
      for (int c = 0; c < kChannels; ++c) sum[c] += block[x * kChannels + c];
    }
    for (int c = 0; c < kChannels; ++c) {
      out[ox * kChannels + c] = static_cast<uint8_t>((sum[c] * multiplier) >> 24);
    }
  }
}

// Full blocks, then the partial last column (Pillow's ImagingReduceCorners).
template <int kChannels>
void ReduceRowC(const uint32_t* sums, int32_t width, int32_t factor_x, int32_t rows, uint8_t* out) {
  const int32_t full = width / factor_x;
  ReduceBlocks<kChannels>(sums, factor_x, 0, full, factor_x, rows, out);
  if (width % factor_x != 0) {
    ReduceBlocks<kChannels>(sums, factor_x, full, full + 1, width % factor_x, rows, out);
  }
}

void ReduceRow(const uint32_t* sums, int32_t width, int32_t channels, int32_t factor_x,
               int32_t rows, uint8_t* out) {
  switch (channels) {
    case 1:
      return ReduceRowC<1>(sums, width, factor_x, rows, out);
    case 2:
      return ReduceRowC<2>(sums, width, factor_x, rows, out);
    case 3:
      return ReduceRowC<3>(sums, width, factor_x, rows, out);
    default:
      return ReduceRowC<4>(sums, width, factor_x, rows, out);
  }
}

}  // namespace

void ReduceBox(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t width, int32_t height,
               int32_t channels, int32_t factor_x, int32_t factor_y, uint8_t* dst,
               ptrdiff_t dst_stride_bytes) {
  const size_t row_bytes = static_cast<size_t>(width) * static_cast<size_t>(channels);
  std::vector<uint32_t> sums(row_bytes);
  const int32_t out_height = (height + factor_y - 1) / factor_y;
  for (int32_t oy = 0; oy < out_height; ++oy) {
    const int32_t rows = std::min(factor_y, height - oy * factor_y);
    SumRows(src, src_stride_bytes, oy * factor_y, rows, row_bytes, sums.data());
    ReduceRow(sums.data(), width, channels, factor_x, rows, dst + oy * dst_stride_bytes);
  }
}

}  // namespace docfeed::internal
