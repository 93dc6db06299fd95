// docfeed's vocabulary for pixels: an 8-bit Image and the element types and layouts of model
// inputs (plain values, no third-party types), and a PNG encoder for Images.
#ifndef DOCFEED_IMAGE_H_
#define DOCFEED_IMAGE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "docfeed/status.h"

namespace docfeed {

// An 8-bit image: interleaved channels, rows top to bottom, no padding
// (stride_bytes == width * channels). A plain value; copying copies the pixels.
struct Image {
  int32_t width = 0;
  int32_t height = 0;
  int32_t channels = 0;  // 1 L, 2 LA, 3 RGB, 4 RGBA.
  std::vector<uint8_t> pixels;

  size_t stride_bytes() const { return static_cast<size_t>(width) * static_cast<size_t>(channels); }
};

// Element type of a model input. kUint8 skips rescale/normalize and writes the pixels (e.g. for
// normalization on the GPU).
enum class DType { kUint8, kFloat32, kFloat16, kBfloat16 };

// HWC: (height, width, 3), the padded stage's layout. CHW: (3, height, width), pixel_values'.
enum class OutputLayout { kHwc, kChw };

// Bytes per element of `dtype`.
size_t DTypeSize(DType dtype);

// The image as a lossless 8-bit PNG file: colour type from `image.channels` (1 gray, 2 gray +
// alpha, 3 RGB, 4 RGBA), zlib `compression_level` 0..9 (6 is Pillow's default). Pillow opens the
// result with the same pixels. Reentrant.
// Errors: InvalidArgument for an empty or inconsistent image (pixels.size() != height *
// stride_bytes()) or a level outside 0..9; ResourceExhausted when the encoder cannot allocate.
Result<std::vector<uint8_t>> EncodePng(const Image& image, int compression_level = 6);

}  // namespace docfeed

#endif  // DOCFEED_IMAGE_H_
