// Shared body of the codec fuzzers (jpeg/png/webp/gif/ppm/pfm/tiff_decode_fuzz.cc): probe and
// decode arbitrary bytes and check the invariants callers rely on. Any crash, sanitizer report or
// failed check is a bug. Limits are lowered so the fuzzer spends its time on parsing, not on huge
// buffers.
#ifndef DOCFEED_TESTS_FUZZ_CODEC_FUZZ_COMMON_H_
#define DOCFEED_TESTS_FUZZ_CODEC_FUZZ_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "codec/codec.h"

namespace docfeed::internal {

inline void FuzzDecodeOnce(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  DecodeLimits limits;
  // 1 MP: the same header parsing and row loops as larger images, a 16th of the memory traffic.
  limits.max_pixels = 1 << 20;
  const Result<ImageInfo> info = ProbeImage(bytes);
  const Result<Image> image = DecodeImage(bytes, limits);
  if (!image.ok()) return;
  // A decoded image is consistent, and agrees with the probe on geometry.
  if (image->pixels.size() != image->stride_bytes() * static_cast<size_t>(image->height) ||
      image->channels < 1 || image->channels > 4 || !info.ok() || info->width != image->width ||
      info->height != image->height || info->channels != image->channels) {
    std::abort();
  }
  // Orientation must preserve the pixel count for every value the probe can report.
  const Image turned = ApplyOrientation(*image, info->exif_orientation);
  if (turned.pixels.size() != image->pixels.size()) std::abort();
  // Small images must survive a lossless PNG round trip.
  if (image->pixels.size() <= (1u << 16)) {
    const Result<std::vector<uint8_t>> png = EncodePng(*image, 1);
    if (!png.ok()) std::abort();
    const Result<Image> again = DecodeImage(*png);
    if (!again.ok() || again->pixels != image->pixels) std::abort();
  }
}

// Decodes pages 1..3 of a multi-page file (TIFF) with the same consistency checks as page 0.
inline void FuzzDecodePages(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  const Result<ImageInfo> first = ProbeImage(bytes);
  if (!first.ok()) return;
  DecodeLimits limits;
  limits.max_pixels = 1 << 20;
  for (int32_t page = 1; page < first->frames && page < 4; ++page) {
    const DecodeOptions options{.frame = page};
    const Result<ImageInfo> info = ProbeImage(bytes, options);
    const Result<Image> image = DecodeImage(bytes, limits, options);
    if (!image.ok()) continue;
    if (!info.ok() || info->width != image->width || info->height != image->height ||
        info->channels != image->channels ||
        image->pixels.size() != image->stride_bytes() * static_cast<size_t>(image->height)) {
      std::abort();
    }
  }
}

}  // namespace docfeed::internal

#endif  // DOCFEED_TESTS_FUZZ_CODEC_FUZZ_COMMON_H_
