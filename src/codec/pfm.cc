// Grayscale float PFM ("Pf"): view, decode and encode (codec.h FloatRowsView).
// Format: the Netpbm PFM description. The header is "Pf", whitespace, width, whitespace, height,
// whitespace, the scale as an ASCII real number, then exactly one whitespace byte, then the
// raster: width * height IEEE-754 float32 values, rows stored from the BOTTOM row of the image to
// the top. A negative scale says the floats are little-endian, a positive one big-endian; its
// magnitude is a scale factor that readers such as Pillow ignore. docfeed writes "-1.0" only and
// reads only that (a magnitude other than 1 would give a value a meaning docfeed cannot keep, and
// big-endian floats need a byte swap on every host docfeed runs on), so a stored patch row is
// its float32 bytes as they are. This is the container of Pix2Struct's stored patches form
// (docs/format.md section 10): Pillow opens it as mode "F", the values exactly.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "codec/codec.h"
#include "codec/internal/formats.h"
#include "codec/internal/netpbm_header.h"

namespace docfeed::internal {
namespace {

constexpr size_t kMaxScaleChars = 32;

struct PfmHeader {
  int32_t width = 0;
  int32_t height = 0;
  size_t raster_offset = 0;
};

// The magic: "Pf" (grayscale) only.
Status CheckPfmMagic(std::span<const uint8_t> bytes) {
  if (bytes.size() < 2 || bytes[0] != 'P') return CorruptionError("not a PFM file");
  if (bytes[1] == 'f') return Status::Ok();
  if (bytes[1] == 'F') {
    return UnsupportedError(
        "colour PFM (\"PF\", three floats a pixel) is not supported (only grayscale \"Pf\", "
        "the container of stored patch rows)");
  }
  return CorruptionError("not a PFM file");
}

// The scale token: -1 with an optional fraction of zeros ("-1", "-1.", "-1.0", "-1.000000"),
// i.e. little-endian at scale 1.
Status CheckPfmScale(std::string_view word) {
  const std::string token(word);
  char* end = nullptr;
  const double scale = std::strtod(token.c_str(), &end);
  if (token.empty() || end != token.c_str() + token.size() || !(scale == scale) ||
      token.find_first_not_of("+-.0123456789eE") != std::string::npos) {
    return CorruptionError("PFM header: scale \"" + token + "\" is not a real number");
  }
  if (scale == 0) return CorruptionError("PFM header: scale is 0 (its sign gives the byte order)");
  if (scale > 0) {
    return UnsupportedError("PFM scale " + token +
                            " says big-endian floats; docfeed reads little-endian PFM only "
                            "(a negative scale)");
  }
  if (scale != -1.0) {
    return UnsupportedError("PFM scale " + token +
                            " is not supported (docfeed reads the values as they are: scale "
                            "-1.0 only)");
  }
  return Status::Ok();
}

Result<PfmHeader> ParsePfmHeader(std::span<const uint8_t> bytes) {
  DOCFEED_RETURN_IF_ERROR(CheckPfmMagic(bytes));
  NetpbmHeaderTokens tokens(bytes, "PFM", /*comments=*/false);
  PfmHeader header;
  DOCFEED_ASSIGN_OR_RETURN(header.width, tokens.ParseNumber("width"));
  DOCFEED_ASSIGN_OR_RETURN(header.height, tokens.ParseNumber("height"));
  DOCFEED_ASSIGN_OR_RETURN(const std::string_view scale, tokens.ParseWord("scale", kMaxScaleChars));
  DOCFEED_RETURN_IF_ERROR(CheckPfmScale(scale));
  DOCFEED_ASSIGN_OR_RETURN(header.raster_offset, tokens.EndOfFields("scale"));
  return header;
}

}  // namespace

Result<FloatRowsView> ViewPfm(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  if (bytes.size() > limits.max_input_bytes) {
    return ResourceExhaustedError("encoded image of " + std::to_string(bytes.size()) +
                                  " bytes exceeds the limit of " +
                                  std::to_string(limits.max_input_bytes) + " bytes");
  }
  DOCFEED_ASSIGN_OR_RETURN(const PfmHeader header, ParsePfmHeader(bytes));
  DOCFEED_RETURN_IF_ERROR(CheckGeometry(static_cast<uint64_t>(header.width),
                                        static_cast<uint64_t>(header.height), limits));
  // Sides are below 2^31, so the product with 4 bytes a value fits in 64 bits.
  const uint64_t row_bytes = uint64_t(header.width) * sizeof(float);
  const uint64_t raster = row_bytes * uint64_t(header.height);
  const uint64_t available = bytes.size() - header.raster_offset;
  if (available != raster) {
    return CorruptionError(
        "PFM raster of " + std::to_string(header.width) + "x" + std::to_string(header.height) +
        " float32 values needs " + std::to_string(raster) + " bytes, the file has " +
        std::to_string(available) +
        (available < raster ? " (truncated)" : " (bytes after the raster; docfeed reads one)"));
  }
  FloatRowsView view;
  view.width = header.width;
  view.height = header.height;
  // The file's last row is the image's top row.
  view.top_row = bytes.data() + header.raster_offset +
                 static_cast<size_t>(row_bytes) * static_cast<size_t>(header.height - 1);
  view.stride_bytes = -static_cast<ptrdiff_t>(row_bytes);
  return view;
}

Result<FloatRows> DecodePfm(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  DOCFEED_ASSIGN_OR_RETURN(const FloatRowsView view, ViewPfm(bytes, limits));
  FloatRows out;
  out.width = view.width;
  out.height = view.height;
  out.values.resize(static_cast<size_t>(view.width) * static_cast<size_t>(view.height));
  CopyFloatRows(view, 0, view.height, out.values.data());
  return out;
}

void CopyFloatRows(const FloatRowsView& view, int32_t first, int32_t count, float* out) {
  const size_t row_bytes = static_cast<size_t>(view.width) * sizeof(float);
  for (int32_t y = first; y < first + count; ++y) {
    // memcpy: the raster may sit at any byte offset inside a decompressed record batch.
    std::memcpy(out, view.top_row + static_cast<ptrdiff_t>(y) * view.stride_bytes, row_bytes);
    out += view.width;
  }
}

Result<std::vector<uint8_t>> EncodePfm(const float* rows, int32_t width, int32_t height) {
  if (width <= 0 || height <= 0 || rows == nullptr) {
    return InvalidArgumentError("PFM of " + std::to_string(width) + "x" + std::to_string(height) +
                                " values has no values");
  }
  const std::string header =
      "Pf\n" + std::to_string(width) + " " + std::to_string(height) + "\n-1.0\n";
  const size_t row_bytes = static_cast<size_t>(width) * sizeof(float);
  std::vector<uint8_t> out(header.size() + row_bytes * static_cast<size_t>(height));
  std::memcpy(out.data(), header.data(), header.size());
  uint8_t* dst = out.data() + header.size();
  // Bottom row first (PFM's order); the host is little-endian (format/value.cc), as the header's
  // negative scale says.
  for (int32_t y = height - 1; y >= 0; --y) {
    std::memcpy(dst, rows + static_cast<size_t>(y) * static_cast<size_t>(width), row_bytes);
    dst += row_bytes;
  }
  return out;
}

}  // namespace docfeed::internal
