// Format sniffing, the ProbeImage/DecodeImage dispatch and the checks shared by all formats.
#include "codec/codec.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "codec/internal/formats.h"

namespace docfeed::internal {
namespace {

bool HasPrefix(std::span<const uint8_t> bytes, std::string_view magic, size_t offset = 0) {
  return bytes.size() >= offset + magic.size() &&
         std::memcmp(bytes.data() + offset, magic.data(), magic.size()) == 0;
}

}  // namespace

std::string_view ImageCodecName(ImageCodec codec) {
  switch (codec) {
    case ImageCodec::kJpeg:
      return "jpeg";
    case ImageCodec::kPng:
      return "png";
    case ImageCodec::kWebp:
      return "webp";
    case ImageCodec::kGif:
      return "gif";
    case ImageCodec::kBmp:
      return "bmp";
    case ImageCodec::kTiff:
      return "tiff";
    case ImageCodec::kPpm:
      return "ppm";
    case ImageCodec::kPdf:
      return "pdf";
    case ImageCodec::kPfm:
      return "pfm";
    case ImageCodec::kUnknown:
      break;
  }
  return "unknown";
}

// Signatures: JPEG SOI + first marker prefix (ITU-T T.81 B.1.1.3), PNG spec section 5.2,
// WebP RFC 9649 section 2.4, GIF89a spec section 17, BMP "BM", TIFF 6.0 section 2 (and BigTIFF),
// Netpbm "P1".."P7" followed by whitespace (pbm(5), pgm(5), ppm(5), pam(5)), PFM "Pf"/"PF"
// followed by whitespace (Netpbm's PFM description), PDF "%PDF-"
// (ISO 32000-1, 7.5.2).
ImageCodec SniffCodec(std::span<const uint8_t> bytes) {
  using std::string_view_literals::operator""sv;
  if (HasPrefix(bytes, "\xFF\xD8\xFF"sv)) return ImageCodec::kJpeg;
  if (HasPrefix(bytes, "\x89PNG\r\n\x1A\n"sv)) return ImageCodec::kPng;
  if (HasPrefix(bytes, "RIFF"sv) && HasPrefix(bytes, "WEBP"sv, 8)) return ImageCodec::kWebp;
  if (HasPrefix(bytes, "GIF87a"sv) || HasPrefix(bytes, "GIF89a"sv)) return ImageCodec::kGif;
  if (HasPrefix(bytes, "BM"sv)) return ImageCodec::kBmp;
  for (std::string_view magic : {"II*\0"sv, "MM\0*"sv, "II+\0"sv, "MM\0+"sv}) {
    if (HasPrefix(bytes, magic)) return ImageCodec::kTiff;
  }
  if (bytes.size() >= 3 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '7' &&
      std::strchr(" \t\n\r\v\f", bytes[2]) != nullptr && bytes[2] != 0) {
    return ImageCodec::kPpm;
  }
  if (bytes.size() >= 3 && bytes[0] == 'P' && (bytes[1] == 'f' || bytes[1] == 'F') &&
      std::strchr(" \t\n\r\v\f", bytes[2]) != nullptr && bytes[2] != 0) {
    return ImageCodec::kPfm;
  }
  if (HasPrefix(bytes, "%PDF-"sv)) return ImageCodec::kPdf;
  return ImageCodec::kUnknown;
}

std::string_view PillowModeName(const ImageInfo& info) {
  const bool tiff = info.codec == ImageCodec::kTiff;
  if (info.cmyk) return "CMYK";
  if (info.palette) return tiff && info.has_alpha ? "PA" : "P";
  if ((info.codec == ImageCodec::kPng || tiff) && info.channels == 1) {
    if (info.bit_depth == 1) return "1";
    if (info.bit_depth == 16) return tiff && info.big_endian ? "I;16B" : "I;16";
  }
  constexpr std::array<std::string_view, 4> kModes = {"L", "LA", "RGB", "RGBA"};
  if (info.channels < 1 || info.channels > 4) return "";
  return kModes[static_cast<size_t>(info.channels - 1)];
}

Status CheckGeometry(uint64_t width, uint64_t height, const DecodeLimits& limits) {
  if (width == 0 || height == 0) {
    return CorruptionError("image has zero size (" + std::to_string(width) + "x" +
                           std::to_string(height) + ")");
  }
  // Both sides come from 32-bit header fields, so the product cannot overflow 64 bits.
  if (width * height > limits.max_pixels) {
    return ResourceExhaustedError("image of " + std::to_string(width) + "x" +
                                  std::to_string(height) + " pixels exceeds the limit of " +
                                  std::to_string(limits.max_pixels) +
                                  " pixels (possible decompression bomb)");
  }
  return Status::Ok();
}

Status CheckEncoderInput(const Image& image) {
  if (image.channels < 1 || image.channels > 4) {
    return InvalidArgumentError("image must have 1..4 channels, has " +
                                std::to_string(image.channels));
  }
  if (image.width <= 0 || image.height <= 0) {
    return InvalidArgumentError("image has no pixels (" + std::to_string(image.width) + "x" +
                                std::to_string(image.height) + ")");
  }
  if (image.pixels.size() != image.stride_bytes() * static_cast<size_t>(image.height)) {
    return InvalidArgumentError("image buffer holds " + std::to_string(image.pixels.size()) +
                                " bytes, expected width * height * channels");
  }
  return Status::Ok();
}

namespace {

// Rejects empty, oversized and non-decodable input before any format library sees it.
Result<ImageCodec> DecodableCodec(std::span<const uint8_t> bytes, uint64_t max_input_bytes) {
  if (bytes.empty()) return InvalidArgumentError("empty image data");
  if (bytes.size() > max_input_bytes) {
    return ResourceExhaustedError("encoded image of " + std::to_string(bytes.size()) +
                                  " bytes exceeds the limit of " + std::to_string(max_input_bytes) +
                                  " bytes");
  }
  const ImageCodec codec = SniffCodec(bytes);
  switch (codec) {
    case ImageCodec::kJpeg:
    case ImageCodec::kPng:
    case ImageCodec::kWebp:
    case ImageCodec::kPpm:
    case ImageCodec::kGif:
    case ImageCodec::kTiff:
      return codec;
    case ImageCodec::kUnknown:
      return UnsupportedError(
          "unrecognised image format (no JPEG, PNG, WebP, GIF, TIFF or PPM signature)");
    case ImageCodec::kPdf:
      return UnsupportedError(
          "a PDF document is not an image (docfeed pack renders the pages of files named "
          "*.pdf in an image folder)");
    case ImageCodec::kPfm:
      return UnsupportedError(
          "a float PFM holds stored model output (pack --preprocess pix2struct --stored-form "
          "patches), not an 8-bit image");
    default:
      return UnsupportedError(
          std::string(ImageCodecName(codec)) +
          " images are not supported (only JPEG, PNG, WebP, GIF, TIFF and PPM)");
  }
}

// Only TIFF has pages; the other formats accept frame 0 alone.
Status CheckSinglePage(ImageCodec codec, int32_t frame) {
  if (codec == ImageCodec::kTiff || frame == 0) return Status::Ok();
  return InvalidArgumentError(std::string(ImageCodecName(codec)) + " images have one page; page " +
                              std::to_string(frame) + " does not exist");
}

}  // namespace

Result<ImageInfo> ProbeImage(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  DOCFEED_ASSIGN_OR_RETURN(ImageCodec codec, DecodableCodec(bytes, DecodeLimits{}.max_input_bytes));
  DOCFEED_RETURN_IF_ERROR(CheckSinglePage(codec, options.frame));
  Result<ImageInfo> info = codec == ImageCodec::kJpeg   ? ProbeJpeg(bytes)
                           : codec == ImageCodec::kPng  ? ProbePng(bytes)
                           : codec == ImageCodec::kPpm  ? ProbePpm(bytes)
                           : codec == ImageCodec::kGif  ? ProbeGif(bytes)
                           : codec == ImageCodec::kTiff ? ProbeTiff(bytes, options.frame)
                                                        : ProbeWebp(bytes);
  if (info.ok() && (info->width <= 0 || info->height <= 0)) {
    return CorruptionError("image has zero size");
  }
  return info;
}

Result<Image> DecodeImage(std::span<const uint8_t> bytes, const DecodeLimits& limits,
                          DecodeReport* report) {
  return DecodeImage(bytes, limits, DecodeOptions{}, report);
}

Result<Image> DecodeImage(std::span<const uint8_t> bytes, const DecodeLimits& limits,
                          const DecodeOptions& options, DecodeReport* report) {
  if (report != nullptr) *report = DecodeReport{};
  DOCFEED_ASSIGN_OR_RETURN(ImageCodec codec, DecodableCodec(bytes, limits.max_input_bytes));
  DOCFEED_RETURN_IF_ERROR(CheckSinglePage(codec, options.frame));
  switch (codec) {
    case ImageCodec::kTiff:
      return DecodeTiff(bytes, limits, options.frame);
    case ImageCodec::kJpeg:
      return DecodeJpeg(bytes, limits, report);
    case ImageCodec::kGif:
      return DecodeGif(bytes, limits);
    case ImageCodec::kPng:
      return DecodePng(bytes, limits);
    case ImageCodec::kPpm:
      return DecodePpm(bytes, limits);
    default:
      return DecodeWebp(bytes, limits);
  }
}

Result<DecodedGeometry> ValidateImage(std::span<const uint8_t> bytes, const DecodeLimits& limits,
                                      DecodeReport* report) {
  if (report != nullptr) *report = DecodeReport{};
  DOCFEED_ASSIGN_OR_RETURN(ImageCodec codec, DecodableCodec(bytes, limits.max_input_bytes));
  if (codec == ImageCodec::kJpeg) return ValidateJpeg(bytes, limits, report);
  if (codec == ImageCodec::kPng) return ValidatePng(bytes, limits);
  DOCFEED_ASSIGN_OR_RETURN(Image image, DecodeImage(bytes, limits, report));
  return DecodedGeometry{.width = image.width, .height = image.height, .channels = image.channels};
}

Result<DecodedGeometry> ValidateImageStructure(std::span<const uint8_t> bytes,
                                               const DecodeLimits& limits, DecodeReport* report) {
  if (report != nullptr) *report = DecodeReport{};
  DOCFEED_ASSIGN_OR_RETURN(ImageCodec codec, DecodableCodec(bytes, limits.max_input_bytes));
  if (codec == ImageCodec::kJpeg) return ValidateJpegStructure(bytes, limits, report);
  if (codec == ImageCodec::kPng) return ValidatePngStructure(bytes, limits);
  return ValidateImage(bytes, limits, report);
}

}  // namespace docfeed::internal
