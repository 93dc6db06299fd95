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

namespace docfeed::internal {
namespace {

// A real header is ~20 bytes; comments make it longer. Anything above this is refused, so a
// stream of whitespace or comment bytes is never scanned for long.
constexpr size_t kMaxHeaderBytes = 4096;
constexpr uint64_t kMaxDecimal = 0x7FFFFFFF;  // width/height/maxval must fit in int32.

bool IsSpace(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

struct PpmHeader {
  int32_t width = 0;
  int32_t height = 0;
  int32_t channels = 0;
  size_t raster_offset = 0;
};

// Parses the header strictly from `bytes`; see the file comment for the grammar.
class HeaderParser {
 public:
  explicit HeaderParser(std::span<const uint8_t> bytes)
      : bytes_(bytes.first(std::min(bytes.size(), kMaxHeaderBytes))),
        truncated_input_(bytes.size() <= kMaxHeaderBytes) {}

  Result<PpmHeader> Parse() {
    DOCFEED_ASSIGN_OR_RETURN(int32_t channels, ParseMagic());
    PpmHeader header;
    header.channels = channels;
    DOCFEED_ASSIGN_OR_RETURN(header.width, ParseNumber("width"));
    DOCFEED_ASSIGN_OR_RETURN(header.height, ParseNumber("height"));
    DOCFEED_ASSIGN_OR_RETURN(int32_t maxval, ParseNumber("maxval"));
    if (maxval != 255) {
      return UnsupportedError("PPM maxval " + std::to_string(maxval) +
                              " is not supported (only 255, 8 bits per sample)");
    }
    // ParseNumber stopped at the byte after the digits, which must be one whitespace byte.
    if (pos_ >= bytes_.size()) return EndOfHeader("the whitespace after maxval");
    if (!IsSpace(bytes_[pos_])) return CorruptionError("PPM header: no whitespace after maxval");
    header.raster_offset = pos_ + 1;
    return header;
  }

 private:
  Result<int32_t> ParseMagic() {
    if (bytes_.size() < 2 || bytes_[0] != 'P') return CorruptionError("not a PPM/PGM file");
    const uint8_t kind = bytes_[1];
    pos_ = 2;
    if (kind == '5') return 1;
    if (kind == '6') return 3;
    if (kind >= '1' && kind <= '7') {
      return UnsupportedError(std::string("Netpbm variant P") + static_cast<char>(kind) +
                              " is not supported (only binary P5 gray and P6 RGB, maxval 255)");
    }
    return CorruptionError("not a PPM/PGM file (magic P" + std::to_string(kind) + ")");
  }

  Status EndOfHeader(std::string_view what) const {
    if (!truncated_input_) {
      return CorruptionError("PPM header longer than " + std::to_string(kMaxHeaderBytes) +
                             " bytes");
    }
    return CorruptionError("PPM file is truncated in its header (before " + std::string(what) +
                           ")");
  }

  // Skips whitespace and comments; at least one whitespace byte or comment must separate tokens.
  Status SkipSeparator(std::string_view next) {
    const size_t start = pos_;
    while (pos_ < bytes_.size()) {
      if (IsSpace(bytes_[pos_])) {
        ++pos_;
      } else if (bytes_[pos_] == '#') {
        while (pos_ < bytes_.size() && bytes_[pos_] != '\n' && bytes_[pos_] != '\r') ++pos_;
      } else {
        break;
      }
    }
    if (pos_ >= bytes_.size()) return EndOfHeader(next);
    if (pos_ == start) {
      return CorruptionError("PPM header: no whitespace before " + std::string(next));
    }
    return Status::Ok();
  }

  Result<int32_t> ParseNumber(std::string_view field) {
    DOCFEED_RETURN_IF_ERROR(SkipSeparator(field));
    uint64_t value = 0;
    const size_t start = pos_;
    while (pos_ < bytes_.size() && bytes_[pos_] >= '0' && bytes_[pos_] <= '9') {
      value = value * 10 + (bytes_[pos_] - '0');
      if (value > kMaxDecimal) {
        return CorruptionError("PPM header: " + std::string(field) + " is too large");
      }
      ++pos_;
    }
    if (pos_ == start) {
      return CorruptionError("PPM header: " + std::string(field) + " is not a decimal number");
    }
    return static_cast<int32_t>(value);
  }

  std::span<const uint8_t> bytes_;
  bool truncated_input_;  // bytes_ is the whole input (not cut at kMaxHeaderBytes)
  size_t pos_ = 0;
};

// Parses the header and checks that the input holds exactly the raster it announces.
Result<PpmHeader> ParseWholePpm(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  DOCFEED_ASSIGN_OR_RETURN(PpmHeader header, HeaderParser(bytes).Parse());
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
  DOCFEED_ASSIGN_OR_RETURN(PpmHeader header, HeaderParser(bytes).Parse());
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
