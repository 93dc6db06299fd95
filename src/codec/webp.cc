// WebP probe, decode and encode over libwebp (libwebpdemux for animations). Container layout:
// RFC 9649 (WebP Image Format), section 2.4 (RIFF header) and 2.7 (extended format: VP8X, ANIM,
// ANMF, EXIF, XMP chunks).
#include <webp/decode.h>
#include <webp/encode.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "codec/codec.h"
#include "codec/internal/exif.h"
#include "codec/internal/formats.h"
#include "codec/internal/webp_handles.h"

namespace docfeed::internal {
namespace {

uint32_t ReadU32Le(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

// Pillow reads the EXIF and "XMP " chunks through WebPDemux; the first of each counts.
int32_t OrientationFromChunks(std::span<const uint8_t> bytes) {
  std::optional<int32_t> exif, xmp;
  bool seen_exif = false, seen_xmp = false;
  size_t pos = 12;  // After "RIFF" size "WEBP".
  while (bytes.size() >= 8 && pos <= bytes.size() - 8) {
    const uint8_t* fourcc = &bytes[pos];
    const uint32_t size = ReadU32Le(&bytes[pos + 4]);
    if (size > bytes.size() - pos - 8) break;
    const std::span<const uint8_t> payload = bytes.subspan(pos + 8, size);
    if (!seen_exif && std::memcmp(fourcc, "EXIF", 4) == 0) {
      seen_exif = true;
      exif = ExifOrientation(payload);
    } else if (!seen_xmp && std::memcmp(fourcc, "XMP ", 4) == 0) {
      seen_xmp = true;
      xmp = XmpOrientation(payload);
    }
    pos += 8 + size_t{size} + (size & 1);  // Chunks are padded to even sizes.
  }
  return ResolveOrientation(exif, xmp);
}

Status WebpError(VP8StatusCode status, std::string_view what) {
  switch (status) {
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return CorruptionError("WebP image file is truncated (" + std::string(what) + ")");
    case VP8_STATUS_OUT_OF_MEMORY:
      return ResourceExhaustedError("WebP " + std::string(what) + ": out of memory");
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return UnsupportedError("WebP " + std::string(what) + ": unsupported feature");
    default:
      return CorruptionError("corrupt WebP data (" + std::string(what) + ", libwebp status " +
                             std::to_string(static_cast<int>(status)) + ")");
  }
}

}  // namespace

Result<ImageInfo> ProbeWebp(std::span<const uint8_t> bytes) {
  WebPBitstreamFeatures features;
  if (VP8StatusCode s = WebPGetFeatures(bytes.data(), bytes.size(), &features);
      s != VP8_STATUS_OK) {
    return WebpError(s, "header");
  }
  ImageInfo info;
  info.codec = ImageCodec::kWebp;
  info.width = features.width;
  info.height = features.height;
  info.has_alpha = features.has_alpha != 0;
  // Pillow's WebP plugin: mode "RGBA" when the bitstream has alpha, else "RGB" (decoded as RGBX).
  info.channels = info.has_alpha ? 4 : 3;
  info.exif_orientation = OrientationFromChunks(bytes);
  if (features.has_animation != 0) {
    // Pillow's n_frames is the demuxer's frame count (WebPAnimDecoderGetInfo).
    const WebPData data{bytes.data(), bytes.size()};
    WebpDemuxer demuxer(WebPDemux(&data));
    if (demuxer == nullptr) return CorruptionError("corrupt or truncated animated WebP container");
    info.frames = static_cast<int32_t>(
        std::min<uint32_t>(WebPDemuxGetI(demuxer.get(), WEBP_FF_FRAME_COUNT), INT32_MAX));
  }
  return info;
}

namespace {

// Frame 0 of an animation as Pillow 13 shows it: its WebP plugin opens every file through
// WebPAnimDecoder with default options (MODE_RGBA, _webp.c), whose first frame is the canvas
// cleared to transparent black with frame 0 decoded into its rectangle (a key frame: no
// blending); mode RGB (no alpha in VP8X) drops the fourth byte ("RGBX"). The canvas size was
// checked against the limits from VP8X before the decoder allocates it.
Result<Image> DecodeAnimationFrame0(std::span<const uint8_t> bytes, Image image) {
  WebPAnimDecoderOptions options;
  if (WebPAnimDecoderOptionsInit(&options) == 0) return InternalError("libwebp ABI mismatch");
  const WebPData data{bytes.data(), bytes.size()};
  WebpAnimDecoder decoder(WebPAnimDecoderNew(&data, &options));
  if (decoder == nullptr) return CorruptionError("corrupt or truncated animated WebP container");
  WebPAnimInfo anim{};
  if (WebPAnimDecoderGetInfo(decoder.get(), &anim) == 0 ||
      anim.canvas_width != static_cast<uint32_t>(image.width) ||
      anim.canvas_height != static_cast<uint32_t>(image.height)) {
    return CorruptionError("animated WebP: canvas size disagrees with its VP8X header");
  }
  uint8_t* canvas = nullptr;
  int timestamp_ms = 0;
  if (WebPAnimDecoderGetNext(decoder.get(), &canvas, &timestamp_ms) == 0) {
    return CorruptionError("animated WebP: frame 0 is corrupt or truncated");
  }
  const size_t pixels = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
  const auto channels = static_cast<size_t>(image.channels);
  image.pixels.resize(pixels * channels);
  for (size_t i = 0; i < pixels; ++i) {
    std::memcpy(&image.pixels[i * channels], canvas + 4 * i, channels);
  }
  return image;
}

}  // namespace

Result<Image> DecodeWebp(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  WebPDecoderConfig config;
  if (WebPInitDecoderConfig(&config) == 0) return InternalError("libwebp ABI mismatch");
  if (VP8StatusCode s = WebPGetFeatures(bytes.data(), bytes.size(), &config.input);
      s != VP8_STATUS_OK) {
    return WebpError(s, "header");
  }
  DOCFEED_RETURN_IF_ERROR(CheckGeometry(static_cast<uint64_t>(config.input.width),
                                        static_cast<uint64_t>(config.input.height), limits));
  const bool alpha = config.input.has_alpha != 0;
  Image image{.width = config.input.width,
              .height = config.input.height,
              .channels = alpha ? 4 : 3,
              .pixels = {}};
  if (config.input.has_animation != 0) return DecodeAnimationFrame0(bytes, std::move(image));
  image.pixels.resize(image.stride_bytes() * static_cast<size_t>(image.height));
  // Non-premultiplied RGBA with libwebp's default (fancy) upsampling, as Pillow's decoder uses.
  config.output.colorspace = alpha ? MODE_RGBA : MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = image.pixels.data();
  config.output.u.RGBA.stride = static_cast<int>(image.stride_bytes());
  config.output.u.RGBA.size = image.pixels.size();
  const VP8StatusCode status = WebPDecode(bytes.data(), bytes.size(), &config);
  WebPFreeDecBuffer(&config.output);  // Frees nothing for external memory; kept for symmetry.
  if (status != VP8_STATUS_OK) return WebpError(status, "data");
  return image;
}

namespace {

// WebP stores RGB or RGBA only; gray and gray+alpha are widened.
std::vector<uint8_t> ExpandGray(const Image& image) {
  const size_t pixels = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
  const int out_channels = image.channels == 1 ? 3 : 4;
  std::vector<uint8_t> out(pixels * static_cast<size_t>(out_channels));
  for (size_t i = 0; i < pixels; ++i) {
    const uint8_t* in = &image.pixels[i * static_cast<size_t>(image.channels)];
    uint8_t* px = &out[i * static_cast<size_t>(out_channels)];
    px[0] = px[1] = px[2] = in[0];
    if (out_channels == 4) px[3] = in[1];
  }
  return out;
}

}  // namespace

Result<std::vector<uint8_t>> EncodeWebpLossless(const Image& image) {
  DOCFEED_RETURN_IF_ERROR(CheckEncoderInput(image));
  if (image.width > WEBP_MAX_DIMENSION || image.height > WEBP_MAX_DIMENSION) {
    return InvalidArgumentError("WebP sides are limited to " + std::to_string(WEBP_MAX_DIMENSION) +
                                " pixels");
  }
  WebPConfig config;
  if (WebPConfigInit(&config) == 0) return InternalError("libwebp ABI mismatch");
  config.lossless = 1;
  config.exact = 1;  // Keep RGB under alpha 0 so decoding returns the input exactly.
  WebpEncodeTarget target;
  if (!target.ok()) return InternalError("libwebp ABI mismatch");
  target.picture.use_argb = 1;
  target.picture.width = image.width;
  target.picture.height = image.height;
  std::vector<uint8_t> widened;
  const uint8_t* rgb = image.pixels.data();
  if (image.channels <= 2) {
    widened = ExpandGray(image);
    rgb = widened.data();
  }
  const bool alpha = image.channels == 2 || image.channels == 4;
  const int stride = image.width * (alpha ? 4 : 3);
  const int imported = alpha ? WebPPictureImportRGBA(&target.picture, rgb, stride)
                             : WebPPictureImportRGB(&target.picture, rgb, stride);
  if (imported == 0) return ResourceExhaustedError("WebP: cannot allocate picture");
  if (WebPEncode(&config, &target.picture) == 0) {
    return InternalError("WebP encode failed (libwebp error " +
                         std::to_string(static_cast<int>(target.picture.error_code)) + ")");
  }
  return std::vector<uint8_t>(target.writer.mem, target.writer.mem + target.writer.size);
}

}  // namespace docfeed::internal
