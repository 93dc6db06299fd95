// Binary PGM/PPM ("P5"/"P6", maxval 255): probe, decode, zero-copy view and encode.
// Format: Netpbm's pgm(5)/ppm(5) manual pages. The header is the magic, then width, height and
// maxval as ASCII decimals separated by whitespace (comments run from '#' to the end of the line),
// then exactly one whitespace byte, then the raster: rows top to bottom, 1 (P5) or 3 (P6, RGB)
// bytes per pixel. This is the container of preprocessed docfeed samples (docs/format.md): Pillow
// opens it as mode L / RGB, and the raster is the pixels, so a view costs no decoding.
#include <algorithm>
#include <cstring>
#include <string>

#include "codec/codec.h"
#include "codec/internal/formats.h"
#include "codec/internal/netpbm_header.h"

namespace docfeed::internal {
namespace {

struct PpmHeader {
  int32_t width = 0;
  int32_t height = 0;
  int32_t channels = 0;
  size_t raster_offset = 0;
};

// The magic, P5 (gray) or P6 (RGB): the channels.
Result<int32_t> PpmChannels(std::span<const uint8_t> bytes) {
  if (bytes.size() < 2 || bytes[0] != 'P') return CorruptionError("not a PPM/PGM file");
  const uint8_t kind = bytes[1];
  if (kind == '5') return 1;
  if (kind == '6') return 3;
  if (kind >= '1' && kind <= '7') {
    return UnsupportedError(std::string("Netpbm variant P") + static_cast<char>(kind) +
                            " is not supported (only binary P5 gray and P6 RGB, maxval 255)");
  }
  return CorruptionError("not a PPM/PGM file (magic P" + std::to_string(kind) + ")");
}

// Parses the header strictly from `bytes`; see the file comment for the grammar.
Result<PpmHeader> ParsePpmHeader(std::span<const uint8_t> bytes) {
  PpmHeader header;
  DOCFEED_ASSIGN_OR_RETURN(header.channels, PpmChannels(bytes));
  NetpbmHeaderTokens tokens(bytes, "PPM", /*comments=*/true);
  DOCFEED_ASSIGN_OR_RETURN(header.width, tokens.ParseNumber("width"));
  DOCFEED_ASSIGN_OR_RETURN(header.height, tokens.ParseNumber("height"));
  DOCFEED_ASSIGN_OR_RETURN(const int32_t maxval, tokens.ParseNumber("maxval"));
  if (maxval != 255) {
    return UnsupportedError("PPM maxval " + std::to_string(maxval) +
                            " is not supported (only 255, 8 bits per sample)");
  }
  DOCFEED_ASSIGN_OR_RETURN(header.raster_offset, tokens.EndOfFields("maxval"));
  return header;
}

// Parses the header and checks that the input holds exactly the raster it announces.
Result<PpmHeader> ParseWholePpm(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  DOCFEED_ASSIGN_OR_RETURN(PpmHeader header, ParsePpmHeader(bytes));
  DOCFEED_RETURN_IF_ERROR(CheckGeometry(static_cast<uint64_t>(header.width),
                                        static_cast<uint64_t>(header.height), limits));
  // Sides are below 2^31, so the product with 3 channels fits in 64 bits.
  const uint64_t raster =
      uint64_t(header.width) * uint64_t(header.height) * uint64_t(header.channels);
  const uint64_t available = bytes.size() - header.raster_offset;
  if (available < raster) {
    return CorruptionError("PPM file is truncated: the raster of " + std::to_string(header.width) +
                           "x" + std::to_string(header.height) + "x" +
                           std::to_string(header.channels) + " needs " + std::to_string(raster) +
                           " bytes, the file has " + std::to_string(available));
  }
  if (available > raster) {
    return CorruptionError("PPM file has " + std::to_string(available - raster) +
                           " bytes after the raster (docfeed reads exactly one image)");
  }
  return header;
}

}  // namespace

Result<ImageInfo> ProbePpm(std::span<const uint8_t> bytes) {
  DOCFEED_ASSIGN_OR_RETURN(PpmHeader header, ParsePpmHeader(bytes));
  ImageInfo info;
  info.width = header.width;
  info.height = header.height;
  info.channels = header.channels;
  info.codec = ImageCodec::kPpm;
  return info;
}

Result<Image> DecodePpm(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  DOCFEED_ASSIGN_OR_RETURN(PpmHeader header, ParseWholePpm(bytes, limits));
  Image image;
  image.width = header.width;
  image.height = header.height;
  image.channels = header.channels;
  const std::span<const uint8_t> raster = bytes.subspan(header.raster_offset);
  image.pixels.assign(raster.begin(), raster.end());
  return image;
}

Result<ImageView> ViewPpm(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  if (bytes.size() > limits.max_input_bytes) {
    return ResourceExhaustedError("encoded image of " + std::to_string(bytes.size()) +
                                  " bytes exceeds the limit of " +
                                  std::to_string(limits.max_input_bytes) + " bytes");
  }
  DOCFEED_ASSIGN_OR_RETURN(PpmHeader header, ParseWholePpm(bytes, limits));
  ImageView view;
  view.data = bytes.data() + header.raster_offset;
  view.width = header.width;
  view.height = header.height;
  view.channels = header.channels;
  view.stride_bytes = static_cast<ptrdiff_t>(header.width) * header.channels;
  return view;
}

Result<std::vector<uint8_t>> EncodePpm(const ImageView& image) {
  if (image.channels != 1 && image.channels != 3) {
    return InvalidArgumentError("PPM stores 1 (P5 gray) or 3 (P6 RGB) channels, not " +
                                std::to_string(image.channels));
  }
  if (image.width <= 0 || image.height <= 0 || image.data == nullptr) {
    return InvalidArgumentError("image has no pixels (" + std::to_string(image.width) + "x" +
                                std::to_string(image.height) + ")");
  }
  const size_t row_bytes = static_cast<size_t>(image.width) * static_cast<size_t>(image.channels);
  if (image.stride_bytes < static_cast<ptrdiff_t>(row_bytes)) {
    return InvalidArgumentError("image stride of " + std::to_string(image.stride_bytes) +
                                " bytes is shorter than a row of " + std::to_string(row_bytes));
  }
  const std::string header = std::string(image.channels == 1 ? "P5\n" : "P6\n") +
                             std::to_string(image.width) + " " + std::to_string(image.height) +
                             "\n255\n";
  std::vector<uint8_t> out(header.size() + row_bytes * static_cast<size_t>(image.height));
  std::memcpy(out.data(), header.data(), header.size());
  uint8_t* dst = out.data() + header.size();
  for (int32_t y = 0; y < image.height; ++y) {
    std::memcpy(dst, image.data + static_cast<ptrdiff_t>(y) * image.stride_bytes, row_bytes);
    dst += row_bytes;
  }
  return out;
}

}  // namespace docfeed::internal
