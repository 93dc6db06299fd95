// Resampling passes: the horizontal and vertical 8-bit convolutions of Pillow's Resample.c.
//
// Each pass reads 8-bit interleaved rows, multiplies by 22-bit fixed-point weights from a
// CoeffTable, accumulates in int32 starting at 2^21, and writes clamp(acc >> 22, 0, 255). That
// is Pillow's ImagingResampleHorizontal_8bpc / ImagingResampleVertical_8bpc.
//
// Every pass has a scalar reference (`*Reference`, resample_reference.cc) and a Highway SIMD
// version (resample.cc) that produces identical bytes on every target. The plain names dispatch
// once per call: to the reference when DOCFEED_SIMD=scalar (see simd_mode.h), else to the best
// Highway target the CPU supports.
//
// All functions are thread-safe and allocate only per call, never per row.
#ifndef DOCFEED_KERNELS_RESAMPLE_H_
#define DOCFEED_KERNELS_RESAMPLE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/resample_coeffs.h"

namespace docfeed::internal {

// Horizontal pass. Output row r, column o, channel c is
//   clamp((2^21 + sum_t src[r][(x.first(o) + t) * channels + c] * x.row(o)[t]) >> 22, 0, 255).
// src: `rows` rows of `src_width * channels` bytes, `src_stride_bytes` apart. dst: `rows` rows of
// `x.out_size * channels` bytes, `dst_stride_bytes` apart.
// Reads only the bytes of those rows (never past the last row's end).
// REQUIRES: channels in 1..4; every tap index lies in [0, src_width); no overlap of src and dst.
void ResampleHorizontal(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_width,
                        int32_t rows, int32_t channels, const CoeffTable& x, uint8_t* dst,
                        ptrdiff_t dst_stride_bytes);

// Vertical pass. Output row o, byte i is
//   clamp((2^21 + sum_t src[y.first(o) + t][i] * y.row(o)[t]) >> 22, 0, 255)
// for i in [0, row_bytes). Output has y.out_size rows. Channels do not matter vertically.
// REQUIRES: every tap row exists in src; no overlap of src and dst.
void ResampleVertical(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t row_bytes,
                      const CoeffTable& y, uint8_t* dst, ptrdiff_t dst_stride_bytes);

// Both passes, horizontal first, with Pillow's 8-bit rounding in between (the horizontal pass
// first, ImagingResampleInner's order): equal to ResampleHorizontal over the source rows that `y`
// reads, into a temporary, followed by ResampleVertical. `y` indexes source rows. The SIMD
// version streams bands of rows through a cache-sized buffer instead of a whole temporary image.
// dst: y.out_size rows of x.out_size * channels bytes.
// REQUIRES: as both passes; no overlap of src and dst.
void ResampleSeparable(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_width,
                       int32_t channels, const CoeffTable& x, const CoeffTable& y, uint8_t* dst,
                       ptrdiff_t dst_stride_bytes);

// The scalar references (same contracts).
void ResampleHorizontalReference(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_width,
                                 int32_t rows, int32_t channels, const CoeffTable& x, uint8_t* dst,
                                 ptrdiff_t dst_stride_bytes);
void ResampleVerticalReference(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t row_bytes,
                               const CoeffTable& y, uint8_t* dst, ptrdiff_t dst_stride_bytes);
void ResampleSeparableReference(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_width,
                                int32_t channels, const CoeffTable& x, const CoeffTable& y,
                                uint8_t* dst, ptrdiff_t dst_stride_bytes);

// The Highway versions, ignoring DOCFEED_SIMD; they use the target hwy::SupportedTargets()
// picks (tests iterate over targets with hwy::SetSupportedTargetsForTest).
void ResampleHorizontalSimd(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_width,
                            int32_t rows, int32_t channels, const CoeffTable& x, uint8_t* dst,
                            ptrdiff_t dst_stride_bytes);
void ResampleVerticalSimd(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t row_bytes,
                          const CoeffTable& y, uint8_t* dst, ptrdiff_t dst_stride_bytes);
void ResampleSeparableSimd(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_width,
                           int32_t channels, const CoeffTable& x, const CoeffTable& y, uint8_t* dst,
                           ptrdiff_t dst_stride_bytes);

// ------------------------------------------------------------------ row streaming
//
// The passes above work on whole images. The kernels below run one pass on any rows, with the
// weights prepared once, so that a resize can consume its source band by band (e.g. straight
// from a decoder) while the rows are still in cache: see MakeResizeStream (resize.h).

// One horizontal pass over `x`, prepared once (SIMD group tables), run on any rows.
class HorizontalKernel {
 public:
  virtual ~HorizontalKernel() = default;
  // As ResampleHorizontal on `rows` rows. REQUIRES: as ResampleHorizontal.
  virtual void Run(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t rows, uint8_t* dst,
                   ptrdiff_t dst_stride_bytes) const = 0;
};

// One vertical pass over `y`, prepared once, run on any range of output rows.
class VerticalKernel {
 public:
  virtual ~VerticalKernel() = default;
  // Output rows [o0, o1) of ResampleVertical, written at dst + (o - o0) * dst_stride_bytes.
  // `src` points at source row `src_row0`.
  // REQUIRES: every row the outputs read lies in [src_row0, src_row0 + rows held at src).
  virtual void Run(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_row0, int32_t o0,
                   int32_t o1, uint8_t* dst, ptrdiff_t dst_stride_bytes) const = 0;
};

// Kernels for the current SIMD mode (the reference when DOCFEED_SIMD=scalar, else the best
// Highway target). They keep a reference to the table: REQUIRES: it outlives the kernel.
std::unique_ptr<HorizontalKernel> MakeHorizontalKernel(const CoeffTable& x, int32_t channels,
                                                       int32_t src_width);
std::unique_ptr<VerticalKernel> MakeVerticalKernel(const CoeffTable& y, int32_t row_bytes);

}  // namespace docfeed::internal

#endif  // DOCFEED_KERNELS_RESAMPLE_H_
