// Small whole-image operations that Resize() and Reduce() compose: copy/crop, Pillow's alpha
// premultiplication round trip (modes LA <-> La, RGBA <-> RGBa) and NEAREST resampling.
// All are scalar, exact and thread-safe; only ResizeNearest allocates (one row table).
#ifndef DOCFEED_KERNELS_PIXEL_OPS_H_
#define DOCFEED_KERNELS_PIXEL_OPS_H_

#include <cstddef>
#include <cstdint>

namespace docfeed::internal {

// Copies `rows` rows of `row_bytes` bytes.
void CopyRows(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t row_bytes, int32_t rows,
              uint8_t* dst, ptrdiff_t dst_stride_bytes);

// Pillow's rgbA2rgba / LA->La conversion: colour = (c * a + 128 + ((c * a + 128) >> 8)) >> 8.
// The last channel is alpha. REQUIRES: channels is 2 or 4; src may equal dst.
void PremultiplyAlpha(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t width, int32_t height,
                      int32_t channels, uint8_t* dst, ptrdiff_t dst_stride_bytes);

// Pillow's rgba2rgbA / La->LA conversion, in place: colour = min(255, 255 * c / a) unless
// a is 0 or 255. REQUIRES: channels is 2 or 4.
void UnpremultiplyAlphaInPlace(uint8_t* data, ptrdiff_t stride_bytes, int32_t width, int32_t height,
                               int32_t channels);

// Pillow's NEAREST resize (ImagingScaleAffine in Geometry.c): source coordinates advance by
// (box width / out width) from box.x0 + step / 2, accumulated in double; pixels that fall
// outside the source are 0. box = {x0, y0, x1, y1} as float32.
// REQUIRES: the box lies inside the source; sizes >= 1.
void ResizeNearest(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_width,
                   int32_t src_height, int32_t channels, const float box[4], uint8_t* dst,
                   ptrdiff_t dst_stride_bytes, int32_t dst_width, int32_t dst_height);

}  // namespace docfeed::internal

#endif  // DOCFEED_KERNELS_PIXEL_OPS_H_
