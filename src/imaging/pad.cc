// Padding for the Donut preset: the seeded generator and the constant-0 pad (donut.h).
#include <cstring>
#include <string>

#include "imaging/donut.h"

namespace docfeed::internal {
namespace {

bool ValidView(const ImageView& v) {
  return v.data != nullptr && v.width >= 1 && v.height >= 1 && v.channels >= 1 && v.channels <= 4 &&
         v.stride_bytes >= static_cast<ptrdiff_t>(v.width) * v.channels;
}

// One padded row: zeros left and right of the image row, which is replicated to RGB if gray.
void PadRow(const uint8_t* src, int32_t src_width, int32_t src_channels, int32_t left, uint8_t* dst,
            int32_t dst_width) {
  const auto left_bytes = static_cast<size_t>(left) * 3;
  std::memset(dst, 0, left_bytes);
  uint8_t* body = dst + left_bytes;
  if (src_channels == 3) {
    std::memcpy(body, src, static_cast<size_t>(src_width) * 3);
  } else {
    for (int32_t x = 0; x < src_width; ++x) {
      body[3 * x] = body[3 * x + 1] = body[3 * x + 2] = src[x];
    }
  }
  const int32_t right = dst_width - left - src_width;
  std::memset(body + static_cast<size_t>(src_width) * 3, 0, static_cast<size_t>(right) * 3);
}

}  // namespace

PadRng::PadRng(uint64_t seed) : engine_(seed) {}

PadRng PadRng::ForSample(uint64_t seed, uint64_t epoch, uint64_t sample_index) {
  // Hash the three numbers together so neighbouring samples and epochs get unrelated streams.
  uint64_t x = seed;
  uint64_t h = SplitMix64(x) ^ epoch;
  h = SplitMix64(h) ^ sample_index;
  return PadRng(SplitMix64(h));
}

uint64_t PadRng::Next() { return engine_.Next(); }

uint32_t PadRng::UniformInclusive(uint32_t max_inclusive) {
  // Lemire, "Fast random integer generation in an interval" (2019): unbiased for any range.
  const uint64_t range = uint64_t{max_inclusive} + 1;
  uint64_t m = (Next() >> 32) * range;
  if (static_cast<uint32_t>(m) < range) {
    const auto threshold = static_cast<uint32_t>((uint64_t{1} << 32) % range);
    while (static_cast<uint32_t>(m) < threshold) m = (Next() >> 32) * range;
  }
  return static_cast<uint32_t>(m >> 32);
}

Status DonutPad(const ImageView& resized, PadOffsets offsets, const MutableImageView& out) {
  const ImageView out_view{out.data, out.width, out.height, out.channels, out.stride_bytes};
  if (!ValidView(resized) || !ValidView(out_view) || out.channels != 3 ||
      (resized.channels != 1 && resized.channels != 3)) {
    return InvalidArgumentError("donut pad: needs a 1- or 3-channel image and a 3-channel output");
  }
  if (offsets.top < 0 || offsets.left < 0 || int64_t{offsets.top} + resized.height > out.height ||
      int64_t{offsets.left} + resized.width > out.width) {
    return InvalidArgumentError(
        "donut pad: a " + std::to_string(resized.width) + "x" + std::to_string(resized.height) +
        " image at (left " + std::to_string(offsets.left) + ", top " + std::to_string(offsets.top) +
        ") does not fit in " + std::to_string(out.width) + "x" + std::to_string(out.height));
  }
  const auto row_bytes = static_cast<size_t>(out.width) * 3;
  for (int32_t y = 0; y < out.height; ++y) {
    uint8_t* dst = out.data + y * out.stride_bytes;
    const int32_t sy = y - offsets.top;
    if (sy < 0 || sy >= resized.height) {
      std::memset(dst, 0, row_bytes);
      continue;
    }
    PadRow(resized.data + sy * resized.stride_bytes, resized.width, resized.channels, offsets.left,
           dst, out.width);
  }
  return Status::Ok();
}

}  // namespace docfeed::internal
