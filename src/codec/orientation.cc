// ApplyOrientation: the eight EXIF orientations (EXIF 2.32, tag 0x0112) mapped to the Pillow
// transposes that PIL.ImageOps.exif_transpose applies:
//   2 FLIP_LEFT_RIGHT, 3 ROTATE_180, 4 FLIP_TOP_BOTTOM, 5 TRANSPOSE, 6 ROTATE_270 (clockwise
//   quarter turn), 7 TRANSVERSE, 8 ROTATE_90 (counter-clockwise quarter turn).
#include <cstring>

#include "base/check.h"
#include "base/recycled_bytes.h"
#include "codec/codec.h"

namespace docfeed::internal {
namespace {

struct Point {
  int32_t x;
  int32_t y;
};

// The source pixel in a w x h image for output pixel (x, y) after `orientation`.
Point SourceOf(int32_t orientation, int32_t w, int32_t h, int32_t x, int32_t y) {
  switch (orientation) {
    case 2:  // Mirror horizontally.
      return {w - 1 - x, y};
    case 3:  // Turn 180 degrees.
      return {w - 1 - x, h - 1 - y};
    case 4:  // Mirror vertically.
      return {x, h - 1 - y};
    case 5:  // Transpose (mirror along the main diagonal).
      return {y, x};
    case 6:  // Turn 90 degrees clockwise.
      return {y, h - 1 - x};
    case 7:  // Transverse (mirror along the anti-diagonal).
      return {w - 1 - y, h - 1 - x};
    default:  // 8: turn 90 degrees counter-clockwise.
      return {w - 1 - y, x};
  }
}

}  // namespace

Image ApplyOrientation(const Image& image, int32_t exif_orientation) {
  DOCFEED_CHECK(image.pixels.size() == image.stride_bytes() * static_cast<size_t>(image.height));
  if (exif_orientation < 2 || exif_orientation > 8) return image;
  const bool swaps_axes = exif_orientation >= 5;
  Image out{.width = swaps_axes ? image.height : image.width,
            .height = swaps_axes ? image.width : image.height,
            .channels = image.channels,
            .pixels = TakeBytes(image.pixels.size())};  // every pixel written below
  const size_t channels = static_cast<size_t>(image.channels);
  for (int32_t y = 0; y < out.height; ++y) {
    uint8_t* dst = out.pixels.data() + static_cast<size_t>(y) * out.stride_bytes();
    for (int32_t x = 0; x < out.width; ++x) {
      const Point s = SourceOf(exif_orientation, image.width, image.height, x, y);
      const uint8_t* src = image.pixels.data() + static_cast<size_t>(s.y) * image.stride_bytes() +
                           static_cast<size_t>(s.x) * channels;
      std::memcpy(dst + static_cast<size_t>(x) * channels, src, channels);
    }
  }
  return out;
}

}  // namespace docfeed::internal
