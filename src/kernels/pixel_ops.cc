#include "kernels/pixel_ops.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace docfeed::internal {

void CopyRows(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t row_bytes, int32_t rows,
              uint8_t* dst, ptrdiff_t dst_stride_bytes) {
  for (int32_t r = 0; r < rows; ++r) {
    std::memcpy(dst + r * dst_stride_bytes, src + r * src_stride_bytes,
                static_cast<size_t>(row_bytes));
  }
}

void PremultiplyAlpha(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t width, int32_t height,
                      int32_t channels, uint8_t* dst, ptrdiff_t dst_stride_bytes) {
  for (int32_t y = 0; y < height; ++y) {
    const uint8_t* in = src + y * src_stride_bytes;
    uint8_t* out = dst + y * dst_stride_bytes;
    for (int32_t x = 0; x < width; ++x, in += channels, out += channels) {
      const uint32_t alpha = in[channels - 1];
      for (int32_t c = 0; c + 1 < channels; ++c) {
        const uint32_t tmp = in[c] * alpha + 128;  // Pillow's MULDIV255.
        out[c] = static_cast<uint8_t>(((tmp >> 8) + tmp) >> 8);
      }
      out[channels - 1] = static_cast<uint8_t>(alpha);
    }
  }
}

void UnpremultiplyAlphaInPlace(uint8_t* data, ptrdiff_t stride_bytes, int32_t width, int32_t height,
                               int32_t channels) {
  for (int32_t y = 0; y < height; ++y) {
    uint8_t* px = data + y * stride_bytes;
    for (int32_t x = 0; x < width; ++x, px += channels) {
      const uint32_t alpha = px[channels - 1];
      if (alpha == 0 || alpha == 255) continue;
      for (int32_t c = 0; c + 1 < channels; ++c) {
        px[c] = static_cast<uint8_t>(std::min<uint32_t>(255, (255 * px[c]) / alpha));
      }
    }
  }
}

namespace {

// Pillow's COORD(): -1 for negative coordinates, else truncation.
int32_t Coord(double v) { return v < 0.0 ? -1 : static_cast<int32_t>(v); }

}  // namespace

void ResizeNearest(const uint8_t* src, ptrdiff_t src_stride_bytes, int32_t src_width,
                   int32_t src_height, int32_t channels, const float box[4], uint8_t* dst,
                   ptrdiff_t dst_stride_bytes, int32_t dst_width, int32_t dst_height) {
  // a[0], a[4]: the float box extent over the output size, in double (ImagingScaleAffine).
  const double step_x = static_cast<double>(box[2] - box[0]) / dst_width;
  const double step_y = static_cast<double>(box[3] - box[1]) / dst_height;
  std::vector<int32_t> xin(static_cast<size_t>(dst_width));
  double xo = box[0] + step_x * 0.5;
  for (int32_t x = 0; x < dst_width; ++x, xo += step_x) {
    const int32_t xi = Coord(xo);
    xin[static_cast<size_t>(x)] = (xi >= 0 && xi < src_width) ? xi : -1;
  }
  const size_t pixel_bytes = static_cast<size_t>(channels);
  double yo = box[1] + step_y * 0.5;
  for (int32_t y = 0; y < dst_height; ++y, yo += step_y) {
    uint8_t* out = dst + y * dst_stride_bytes;
    std::memset(out, 0, static_cast<size_t>(dst_width) * pixel_bytes);
    const int32_t yi = Coord(yo);
    if (yi < 0 || yi >= src_height) continue;
    const uint8_t* in = src + yi * src_stride_bytes;
    for (int32_t x = 0; x < dst_width; ++x) {
      const int32_t xi = xin[static_cast<size_t>(x)];
      if (xi >= 0) std::memcpy(out + x * pixel_bytes, in + xi * pixel_bytes, pixel_bytes);
    }
  }
}

}  // namespace docfeed::internal
