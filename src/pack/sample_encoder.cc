#include "pack/sample_encoder.h"

#include <utility>

#include "base/check.h"
#include "imaging/donut.h"

namespace docfeed::internal {
namespace {

Result<StoredCodec> ToStoredCodec(ImageCodec codec) {
  switch (codec) {
    case ImageCodec::kJpeg:
      return StoredCodec::kJpeg;
    case ImageCodec::kPng:
      return StoredCodec::kPng;
    case ImageCodec::kWebp:
      return StoredCodec::kWebp;
    case ImageCodec::kPpm:
      return StoredCodec::kPpm;
    case ImageCodec::kTiff:
      return StoredCodec::kTiff;
    default:
      return UnsupportedError(
          std::string(ImageCodecName(codec)) +
          " images are not supported (docfeed stores JPEG, PNG, WebP, TIFF and PPM)");
  }
}

// Drops the alpha channel: LA -> L, RGBA -> RGB.
Image DropAlpha(const Image& image) {
  if (image.channels != 2 && image.channels != 4) return image;
  Image out;
  out.width = image.width;
  out.height = image.height;
  out.channels = image.channels - 1;
  size_t pixels = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
  out.pixels.resize(pixels * static_cast<size_t>(out.channels));
  const uint8_t* src = image.pixels.data();
  uint8_t* dst = out.pixels.data();
  for (size_t i = 0; i < pixels; ++i) {
    for (int c = 0; c < out.channels; ++c) *dst++ = src[c];
    src += image.channels;
  }
  return out;
}

Result<std::vector<uint8_t>> Reencode(const Image& image, const EncodeOptions& options,
                                      StoredCodec* codec) {
  switch (options.codec) {
    case CodecChoice::kPng:
      *codec = StoredCodec::kPng;
      return EncodePng(image, options.png_level);
    case CodecChoice::kWebp:
      *codec = StoredCodec::kWebp;
      return EncodeWebpLossless(image);
    case CodecChoice::kJpeg:
      *codec = StoredCodec::kJpeg;
      return EncodeJpeg(DropAlpha(image), options.jpeg_quality);
    case CodecChoice::kKeep:
      break;
  }
  return InternalError("Reencode called for codec keep");
}

// The preset's deterministic part, exactly as the loader's on-the-fly path runs it (the same
// Preset::Prepare), with the orientation the codec probed.
Result<EncodedImage> Preprocess(std::span<const uint8_t> source, const ImageInfo& info,
                                const EncodeOptions& options) {
  std::shared_ptr<const Preset> preset = options.preset;
  if (preset == nullptr) {
    DOCFEED_ASSIGN_OR_RETURN(preset, PresetForStored(options.preprocess));
  }
  PrepareRequest request;
  request.orientation = info.exif_orientation;
  request.limits = options.limits;
  DecodeReport report;
  request.report = &report;
  Image resized;
  DOCFEED_RETURN_IF_ERROR(preset->Prepare(source, request, &resized));
  EncodedImage out;
  out.decode_report = std::move(report);
  if (options.preprocess.patches_form()) {
    // The preset's final output (Pix2Struct's real patch rows), made from Prepare's page by the
    // loader's own Finish, in float32 (preset.h EncodeStoredOutput).
    DOCFEED_ASSIGN_OR_RETURN(Preset::StoredOutput stored,
                             preset->EncodeStoredOutput(ViewOf(resized)));
    out.bytes = std::move(stored.bytes);
    out.codec = StoredCodec::kPfm;
    out.width = static_cast<uint32_t>(stored.width);
    out.height = static_cast<uint32_t>(stored.height);
    out.channels = 1;
    out.orientation = 1;
    return out;
  }
  DOCFEED_ASSIGN_OR_RETURN(out.bytes, EncodePpm(ViewOf(resized)));
  out.codec = StoredCodec::kPpm;
  out.width = static_cast<uint32_t>(resized.width);
  out.height = static_cast<uint32_t>(resized.height);
  out.channels = static_cast<uint8_t>(resized.channels);
  out.orientation = 1;
  return out;
}

// An image stored as it is must still be loadable: the loader's default preset (Donut at its
// default size) resizes it after EXIF orientation, which swaps the sides for orientations 5..8.
// Refusing it here names the file at pack time instead of failing the training run later.
Status CheckDefaultPresetCanResize(int32_t decoded_width, int32_t decoded_height, int orientation) {
  const bool swapped = orientation >= 5 && orientation <= 8;
  const int32_t width = swapped ? decoded_height : decoded_width;
  const int32_t height = swapped ? decoded_width : decoded_height;
  const Result<DonutGeometry> g = CheckDonutResizable(width, height, DonutConfig{});
  if (g.ok()) return Status::Ok();
  return Status(g.status().code(),
                "the loader's default Donut preset cannot process this " + std::to_string(width) +
                    "x" + std::to_string(height) + " image (" + std::string(g.status().message()) +
                    "); pack it with --preprocess at a size that fits, or leave it out");
}

// `--codec keep` of anything but a GIF: the source bytes are stored, so no pixels are needed.
// With ValidationMode::kStructure, ValidateImageStructure checks a JPEG's or PNG's container and
// checksums instead (same header checks and geometry; src/pack/README.md lists what it cannot
// see). Otherwise ValidateImage succeeds and fails exactly as DecodeImage does, with the same
// warnings and the same decoded geometry, at a fraction of the cost for JPEG and PNG (codec.h), so
// what is refused and what is recorded are what a full decode would give.
Result<EncodedImage> KeepSource(std::vector<uint8_t> source, const ImageInfo& info,
                                const EncodeOptions& options) {
  DOCFEED_CHECK(options.validation != ValidationMode::kAuto);  // resolved by Pack and PackFrom
  DecodeReport report;
  DOCFEED_ASSIGN_OR_RETURN(const DecodedGeometry decoded,
                           options.validation == ValidationMode::kStructure
                               ? ValidateImageStructure(source, options.limits, &report)
                               : ValidateImage(source, options.limits, &report));
  DOCFEED_RETURN_IF_ERROR(
      CheckDefaultPresetCanResize(decoded.width, decoded.height, info.exif_orientation));
  DOCFEED_ASSIGN_OR_RETURN(const StoredCodec source_codec, ToStoredCodec(info.codec));
  EncodedImage out;
  out.decode_report = std::move(report);
  out.bytes = std::move(source);
  out.codec = source_codec;
  out.width = static_cast<uint32_t>(decoded.width);
  out.height = static_cast<uint32_t>(decoded.height);
  out.channels = static_cast<uint8_t>(decoded.channels);
  out.orientation = static_cast<uint8_t>(info.exif_orientation);
  return out;
}

}  // namespace

Result<CodecChoice> ParseCodecChoice(std::string_view name) {
  if (name == "keep") return CodecChoice::kKeep;
  if (name == "png") return CodecChoice::kPng;
  if (name == "webp") return CodecChoice::kWebp;
  if (name == "jpeg" || name == "jpg") return CodecChoice::kJpeg;
  return InvalidArgumentError("unknown codec \"" + std::string(name) +
                              "\" (expected keep, png, webp or jpeg)");
}

Result<ValidationMode> ParseValidationMode(std::string_view name) {
  if (name == "full") return ValidationMode::kFull;
  if (name == "structure") return ValidationMode::kStructure;
  if (name == "auto") return ValidationMode::kAuto;
  return InvalidArgumentError("unknown validation \"" + std::string(name) +
                              "\" (expected auto, full or structure)");
}

std::string_view CodecChoiceName(CodecChoice choice) {
  switch (choice) {
    case CodecChoice::kKeep:
      return "keep";
    case CodecChoice::kPng:
      return "png";
    case CodecChoice::kWebp:
      return "webp";
    case CodecChoice::kJpeg:
      return "jpeg";
  }
  return "?";
}

Result<EncodedImage> EncodeSample(std::vector<uint8_t> source, const EncodeOptions& options) {
  DOCFEED_ASSIGN_OR_RETURN(ImageInfo info, ProbeImage(source));
  if (options.preprocess.preprocessed()) {
    // Prepare decodes every byte too (a corrupt file fails the same way as in DecodeImage).
    DOCFEED_ASSIGN_OR_RETURN(EncodedImage out, Preprocess(source, info, options));
    if (options.keep_original) out.original = std::move(source);
    return out;
  }
  // Every byte a trainer will later decode is validated: by ValidateImage when the source is
  // stored, by the full decode whose pixels are re-encoded otherwise.
  if (options.codec == CodecChoice::kKeep && info.codec != ImageCodec::kGif) {
    return KeepSource(std::move(source), info, options);
  }
  DecodeReport report;
  DOCFEED_ASSIGN_OR_RETURN(Image image, DecodeImage(source, options.limits, &report));
  DOCFEED_RETURN_IF_ERROR(
      CheckDefaultPresetCanResize(image.width, image.height, info.exif_orientation));
  EncodedImage out;
  out.decode_report = std::move(report);
  if (info.exif_orientation != 1) image = ApplyOrientation(image, info.exif_orientation);
  EncodeOptions reencode = options;
  if (reencode.codec == CodecChoice::kKeep) reencode.codec = CodecChoice::kPng;  // a GIF
  DOCFEED_ASSIGN_OR_RETURN(out.bytes, Reencode(image, reencode, &out.codec));
  // Geometry of what was stored, as a reader will see it (WebP may drop an opaque alpha).
  DOCFEED_ASSIGN_OR_RETURN(ImageInfo stored, ProbeImage(out.bytes));
  out.width = static_cast<uint32_t>(stored.width);
  out.height = static_cast<uint32_t>(stored.height);
  out.channels = static_cast<uint8_t>(stored.channels);
  out.orientation = 1;
  return out;
}

}  // namespace docfeed::internal
