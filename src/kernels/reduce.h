// Box reduction kernel: Pillow's ImagingReduce (src/libImaging/Reduce.c), 8-bit.
//
// Each output pixel is the rounded mean of a factor_x x factor_y block; the last column and row
// use the partial blocks that remain. The mean is computed as Pillow does, with a float32-derived
// reciprocal: out = ((sum + n / 2) * m(n)) >> 24 in uint32, m(n) = (uint32)(2^32f / (256 n)f).
// Scalar only: reduce() runs at most once per resize (reducing_gap) and is memory-bound.
// Thread-safe; allocates one row of column sums per call.
#ifndef DOCFEED_KERNELS_REDUCE_H_
#define DOCFEED_KERNELS_REDUCE_H_

#include <cstddef>
#include <cstdint>

namespace docfeed::internal {

// src: `height` rows of `width * channels` bytes, `src_stride_bytes` apart (the reduce box).
// dst: ceil(height / factor_y) rows of ceil(width / factor_x) * channels bytes.
// REQUIRES: width, height, factor_x, factor_y >= 1; channels in 1..4; no overlap.
void ReduceBox(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t width, int32_t height,
               int32_t channels, int32_t factor_x, int32_t factor_y, uint8_t* dst,
               ptrdiff_t dst_stride_bytes);

// Pillow's division_UINT32(n, 8): the multiplier m(n) above.
uint32_t ReduceMultiplier(uint32_t block_pixels);

}  // namespace docfeed::internal

#endif  // DOCFEED_KERNELS_REDUCE_H_
