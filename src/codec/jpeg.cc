// JPEG probe, decode and encode over libjpeg-turbo. Every libjpeg call runs inside a JpegStep
// (see internal/jpeg_guard.h); the steps below are captureless lambdas over trivial Args structs.
#include <jerror.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "base/recycled_bytes.h"
#include "codec/codec.h"
#include "codec/internal/exif.h"
#include "codec/internal/formats.h"
#include "codec/internal/jpeg_guard.h"

namespace docfeed::internal {
namespace {

constexpr char kExifPrefix[] = "Exif\0";                       // "Exif\0\0", 6 bytes.
constexpr char kXmpPrefix[] = "http://ns.adobe.com/xap/1.0/";  // followed by '\0', 29 bytes.

Status ReadHeader(JpegDecompressor& decoder) {
  return decoder.Run([](void* p) { jpeg_read_header(static_cast<j_decompress_ptr>(p), TRUE); },
                     decoder.cinfo());
}

bool StartsWith(const jpeg_marker_struct& marker, const char* prefix, size_t size) {
  return marker.data_length >= size && std::memcmp(marker.data, prefix, size) == 0;
}

// Pillow keeps the first APP1 "Exif" segment and the last APP1 XMP packet
// (JpegImagePlugin.APP); orientation then comes from ResolveOrientation.
int32_t OrientationFromMarkers(const jpeg_decompress_struct& cinfo) {
  std::optional<int32_t> exif;
  bool seen_exif = false;
  std::optional<int32_t> xmp;
  for (jpeg_saved_marker_ptr m = cinfo.marker_list; m != nullptr; m = m->next) {
    if (m->marker != JPEG_APP0 + 1) continue;
    if (!seen_exif && StartsWith(*m, kExifPrefix, 6)) {
      seen_exif = true;
      exif = ExifOrientation({m->data + 6, m->data_length - 6});
    } else if (StartsWith(*m, kXmpPrefix, sizeof(kXmpPrefix))) {
      xmp = XmpOrientation({m->data + sizeof(kXmpPrefix), m->data_length - sizeof(kXmpPrefix)});
    }
  }
  return ResolveOrientation(exif, xmp);
}

ImageInfo InfoFromHeader(const jpeg_decompress_struct& cinfo) {
  ImageInfo info;
  info.codec = ImageCodec::kJpeg;
  info.width = static_cast<int32_t>(cinfo.image_width);
  info.height = static_cast<int32_t>(cinfo.image_height);
  info.bit_depth = cinfo.data_precision;
  info.progressive_or_interlaced = cinfo.progressive_mode != 0;
  info.cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  // A CMYK/YCCK JPEG decodes to RGB: Pillow's mode "CMYK" through convert("RGB").
  info.channels = info.cmyk ? 3 : cinfo.num_components;
  info.exif_orientation = OrientationFromMarkers(cinfo);
  return info;
}

// Pillow's CMYK -> RGB for one row: JpegImagePlugin always reads 4-component JPEGs with rawmode
// "CMYK;I" ("assume adobe conventions", whether or not an APP14 Adobe marker is present), which
// inverts libjpeg's CMYK output, then convert("RGB") applies Convert.c's cmyk2rgb:
// nk = 255 - K, out = CLIP8(nk - MULDIV255(C, nk)) with MULDIV255(a, b) = (t = a*b + 128,
// ((t >> 8) + t) >> 8). libjpeg has already turned YCCK into CMYK (out_color_space JCS_CMYK),
// as it does for Pillow.
void CmykRowToRgb(const uint8_t* cmyk, JDIMENSION width, uint8_t* rgb) {
  for (JDIMENSION x = 0; x < width; ++x, cmyk += 4, rgb += 3) {
    const int nk = cmyk[3];  // 255 - (255 - K): K is inverted on load.
    for (int c = 0; c < 3; ++c) {
      const int t = (255 - cmyk[c]) * nk + 128;
      const int v = nk - (((t >> 8) + t) >> 8);
      rgb[c] = static_cast<uint8_t>(v < 0 ? 0 : v);  // v <= nk <= 255 always.
    }
  }
}

// Decodes every scanline into `out`. Progressive files are fully buffered by
// jpeg_start_decompress. jpeg_finish_decompress then reads up to the EOI marker, so a file cut
// anywhere, even just its final EOI, is "truncated" as in Pillow (checked with Pillow 13).
// With `cmyk_row` set (width * 4 bytes), libjpeg writes CMYK rows there and they are converted
// into `out` as Pillow's convert("RGB") does.
struct DecodeArgs {
  j_decompress_ptr cinfo;
  J_COLOR_SPACE out_color_space;
  uint8_t* out;
  size_t stride_bytes;
  uint8_t* cmyk_row;
};

void DecodeStep(void* p) {
  auto* a = static_cast<DecodeArgs*>(p);
  // libjpeg-turbo's defaults are what Pillow uses: JDCT_ISLOW and do_fancy_upsampling = TRUE.
  a->cinfo->out_color_space = a->out_color_space;
  jpeg_start_decompress(a->cinfo);
  while (a->cinfo->output_scanline < a->cinfo->output_height) {
    uint8_t* out_row = a->out + a->cinfo->output_scanline * a->stride_bytes;
    JSAMPROW row = a->cmyk_row != nullptr ? a->cmyk_row : out_row;
    if (jpeg_read_scanlines(a->cinfo, &row, 1) == 1 && a->cmyk_row != nullptr) {
      CmykRowToRgb(a->cmyk_row, a->cinfo->output_width, out_row);
    }
  }
  jpeg_finish_decompress(a->cinfo);
}

// libjpeg sets JCS_CMYK/JCS_YCCK only for 4 components and JCS_GRAYSCALE only for 1, so what is
// left (2 components, or 3 or 4 of an unknown colour space) has no Pillow mode either.
Status CheckDecodable(const jpeg_decompress_struct& cinfo) {
  const int n = cinfo.num_components;
  const J_COLOR_SPACE space = cinfo.jpeg_color_space;
  if (n == 1 || (n == 3 && space != JCS_UNKNOWN) ||
      (n == 4 && (space == JCS_CMYK || space == JCS_YCCK))) {
    return Status::Ok();
  }
  return UnsupportedError("JPEG with " + std::to_string(n) +
                          " components is not supported (only grayscale, YCbCr/RGB and "
                          "CMYK/YCCK)");
}

}  // namespace

Result<ImageInfo> ProbeJpeg(std::span<const uint8_t> bytes) {
  JpegDecompressor decoder;
  DOCFEED_RETURN_IF_ERROR(decoder.Open(bytes.data(), bytes.size()));
  DOCFEED_RETURN_IF_ERROR(ReadHeader(decoder));
  return InfoFromHeader(*decoder.cinfo());
}

namespace {

// libjpeg's output colour space for DecodeImage's channels: CMYK rows are converted by
// CmykRowToRgb.
J_COLOR_SPACE OutColorSpace(const ImageInfo& info) {
  if (info.cmyk) return JCS_CMYK;
  return info.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
}

// Opens `bytes`, reads the header and runs every check DecodeJpeg makes before it allocates
// pixels. REQUIRES: `decoder` is fresh; `bytes` outlives it.
Result<ImageInfo> OpenForDecode(JpegDecompressor& decoder, std::span<const uint8_t> bytes,
                                const DecodeLimits& limits) {
  DOCFEED_RETURN_IF_ERROR(decoder.Open(bytes.data(), bytes.size()));
  DOCFEED_RETURN_IF_ERROR(ReadHeader(decoder));
  const ImageInfo info = InfoFromHeader(*decoder.cinfo());
  DOCFEED_RETURN_IF_ERROR(CheckDecodable(*decoder.cinfo()));
  DOCFEED_RETURN_IF_ERROR(
      CheckGeometry(static_cast<uint64_t>(info.width), static_cast<uint64_t>(info.height), limits));
  DOCFEED_RETURN_IF_ERROR(CheckJpegDataCanHoldImage(*decoder.cinfo(), bytes.size()));
  return info;
}

void CopyReport(const JpegDecompressor& decoder, DecodeReport* report) {
  if (report == nullptr) return;
  report->warnings = decoder.warnings();
  report->first_warning = decoder.first_warning();
}

// DecodeStep's decompression at DCT scale 1/8 (output_width and output_height are the sides / 8
// rounded up). libjpeg still reads every marker and entropy-decodes every block of every scan
// up to EOI exactly as at full scale, which is where its errors and warnings arise; what 1/8
// leaves out (a DC-only IDCT instead of the 8x8 one, upsampling and colour conversion of 1/64
// of the pixels) cannot fail. ScaleStep fixes the output size, ValidateStep reads each output
// row into the one row `row` (output_width * output_components bytes).
struct ValidateArgs {
  j_decompress_ptr cinfo;
  J_COLOR_SPACE out_color_space;
  uint8_t* row;
};

void ScaleStep(void* p) {
  auto* a = static_cast<ValidateArgs*>(p);
  a->cinfo->out_color_space = a->out_color_space;
  a->cinfo->scale_num = 1;
  a->cinfo->scale_denom = 8;
  jpeg_calc_output_dimensions(a->cinfo);
}

void ValidateStep(void* p) {
  auto* a = static_cast<ValidateArgs*>(p);
  jpeg_start_decompress(a->cinfo);
  while (a->cinfo->output_scanline < a->cinfo->output_height) {
    JSAMPROW row = a->row;
    jpeg_read_scanlines(a->cinfo, &row, 1);
  }
  jpeg_finish_decompress(a->cinfo);
}

}  // namespace

Result<Image> DecodeJpeg(std::span<const uint8_t> bytes, const DecodeLimits& limits,
                         DecodeReport* report) {
  JpegDecompressor decoder;
  DOCFEED_ASSIGN_OR_RETURN(const ImageInfo info, OpenForDecode(decoder, bytes, limits));
  Image image{.width = info.width, .height = info.height, .channels = info.channels, .pixels = {}};
  // Every scanline is written (or the decode fails), so a recycled buffer may hold anything.
  image.pixels = TakeBytes(image.stride_bytes() * static_cast<size_t>(image.height));
  std::vector<uint8_t> cmyk_row(info.cmyk ? static_cast<size_t>(info.width) * 4 : 0);
  DecodeArgs args{decoder.cinfo(), OutColorSpace(info), image.pixels.data(), image.stride_bytes(),
                  info.cmyk ? cmyk_row.data() : nullptr};
  DOCFEED_RETURN_IF_ERROR(decoder.Run(DecodeStep, &args));
  CopyReport(decoder, report);
  return image;
}

Result<ImageInfo> OpenJpegHeader(std::span<const uint8_t> bytes, const DecodeLimits& limits,
                                 DecodeReport* report) {
  JpegDecompressor decoder;
  DOCFEED_ASSIGN_OR_RETURN(const ImageInfo info, OpenForDecode(decoder, bytes, limits));
  CopyReport(decoder, report);
  return info;
}

Result<DecodedGeometry> ValidateJpeg(std::span<const uint8_t> bytes, const DecodeLimits& limits,
                                     DecodeReport* report) {
  JpegDecompressor decoder;
  DOCFEED_ASSIGN_OR_RETURN(const ImageInfo info, OpenForDecode(decoder, bytes, limits));
  ValidateArgs args{decoder.cinfo(), OutColorSpace(info), nullptr};
  DOCFEED_RETURN_IF_ERROR(decoder.Run(ScaleStep, &args));
  std::vector<uint8_t> row(size_t{decoder.cinfo()->output_width} *
                           static_cast<size_t>(decoder.cinfo()->output_components));
  args.row = row.data();
  DOCFEED_RETURN_IF_ERROR(decoder.Run(ValidateStep, &args));
  CopyReport(decoder, report);
  // DecodeJpeg's image has the header's sides and InfoFromHeader's channels.
  return DecodedGeometry{.width = info.width, .height = info.height, .channels = info.channels};
}

namespace {

struct EncodeArgs {
  j_compress_ptr cinfo;
  const uint8_t* pixels;
  size_t stride_bytes;
  JDIMENSION width;
  JDIMENSION height;
  int channels;
  int quality;
};

void EncodeStep(void* p) {
  auto* a = static_cast<EncodeArgs*>(p);
  a->cinfo->image_width = a->width;
  a->cinfo->image_height = a->height;
  a->cinfo->input_components = a->channels;
  a->cinfo->in_color_space = a->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  // jpeg_set_defaults gives YCbCr 4:2:0 for RGB and ISLOW DCT, as Pillow's encoder leaves them;
  // force_baseline = TRUE keeps quantisers <= 255 like Pillow (JpegEncode.c).
  jpeg_set_defaults(a->cinfo);
  jpeg_set_quality(a->cinfo, a->quality, TRUE);
  jpeg_start_compress(a->cinfo, TRUE);
  while (a->cinfo->next_scanline < a->cinfo->image_height) {
    // libjpeg's API is not const-correct; it only reads input rows.
    auto* row = const_cast<JSAMPLE*>(a->pixels + a->cinfo->next_scanline * a->stride_bytes);
    jpeg_write_scanlines(a->cinfo, &row, 1);
  }
  jpeg_finish_compress(a->cinfo);
}

}  // namespace

Result<std::vector<uint8_t>> EncodeJpeg(const Image& image, int quality) {
  DOCFEED_RETURN_IF_ERROR(CheckEncoderInput(image));
  if (image.channels != 1 && image.channels != 3) {
    return InvalidArgumentError("JPEG cannot store " + std::to_string(image.channels) +
                                "-channel images (no alpha); drop or flatten alpha first");
  }
  if (quality < 1 || quality > 100) {
    return InvalidArgumentError("JPEG quality must be 1..100, got " + std::to_string(quality));
  }
  if (image.width > JPEG_MAX_DIMENSION || image.height > JPEG_MAX_DIMENSION) {
    return InvalidArgumentError("JPEG sides are limited to " + std::to_string(JPEG_MAX_DIMENSION) +
                                " pixels");
  }
  JpegCompressor encoder;
  DOCFEED_RETURN_IF_ERROR(encoder.Open());
  EncodeArgs args{encoder.cinfo(),
                  image.pixels.data(),
                  image.stride_bytes(),
                  static_cast<JDIMENSION>(image.width),
                  static_cast<JDIMENSION>(image.height),
                  image.channels,
                  quality};
  DOCFEED_RETURN_IF_ERROR(encoder.Run(EncodeStep, &args));
  const std::span<const uint8_t> out = encoder.output();
  return std::vector<uint8_t>(out.begin(), out.end());
}

}  // namespace docfeed::internal
