// DCT-scaled JPEG decoding (jpeg_scaled.h). libjpeg runs only inside JpegDecompressor::Run, the
// codec's setjmp confinement (codec/internal/jpeg_guard.h): each step is a captureless lambda
// over a struct of pointers and integers.
#include "imaging/jpeg_scaled.h"

#include <string>
#include <utility>

#include "codec/internal/jpeg_guard.h"

namespace docfeed::internal {
namespace {

struct ScaledDecodeArgs {
  j_decompress_ptr cinfo;
  uint8_t* out;
  size_t stride_bytes;
};

void ReadHeaderStep(void* p) { jpeg_read_header(static_cast<j_decompress_ptr>(p), TRUE); }

// Sets the scale and computes the output size without decoding.
struct ScaleArgs {
  j_decompress_ptr cinfo;
  unsigned int scale_denom;
  J_COLOR_SPACE out_color_space;
};

void CalcDimensionsStep(void* p) {
  auto* a = static_cast<ScaleArgs*>(p);
  a->cinfo->scale_num = 1;
  a->cinfo->scale_denom = a->scale_denom;
  a->cinfo->out_color_space = a->out_color_space;
  jpeg_calc_output_dimensions(a->cinfo);
}

void DecodeStep(void* p) {
  auto* a = static_cast<ScaledDecodeArgs*>(p);
  jpeg_start_decompress(a->cinfo);
  while (a->cinfo->output_scanline < a->cinfo->output_height) {
    JSAMPROW row = a->out + a->cinfo->output_scanline * a->stride_bytes;
    jpeg_read_scanlines(a->cinfo, &row, 1);
  }
  jpeg_finish_decompress(a->cinfo);
}

Status CheckJpeg(const jpeg_decompress_struct& cinfo, std::span<const uint8_t> bytes,
                 const DecodeLimits& limits) {
  if (bytes.size() > limits.max_input_bytes) {
    return ResourceExhaustedError("JPEG of " + std::to_string(bytes.size()) +
                                  " bytes exceeds the input limit");
  }
  const uint64_t pixels = uint64_t{cinfo.image_width} * cinfo.image_height;
  if (pixels == 0) return CorruptionError("JPEG has zero width or height");
  if (pixels > limits.max_pixels) {
    return ResourceExhaustedError("JPEG of " + std::to_string(cinfo.image_width) + "x" +
                                  std::to_string(cinfo.image_height) +
                                  " pixels exceeds the pixel limit");
  }
  if (cinfo.num_components != 1 && cinfo.num_components != 3) {
    return UnsupportedError("JPEG with " + std::to_string(cinfo.num_components) +
                            " components is not supported (only grayscale and 3-component)");
  }
  return Status::Ok();
}

}  // namespace

int32_t ChooseJpegScaleDenom(int32_t width, int32_t height, int32_t needed_width,
                             int32_t needed_height) {
  for (int32_t k : {8, 4, 2}) {
    if (width >= int64_t{k} * needed_width && height >= int64_t{k} * needed_height) return k;
  }
  return 1;
}

Result<ScaledSource> DecodeJpegScaled(std::span<const uint8_t> bytes, int32_t scale_denom,
                                      const DecodeLimits& limits) {
  ScaledSource source;
  DOCFEED_RETURN_IF_ERROR(DecodeJpegScaledInto(bytes, scale_denom, limits, &source));
  return source;
}

Status DecodeJpegScaledInto(std::span<const uint8_t> bytes, int32_t scale_denom,
                            const DecodeLimits& limits, ScaledSource* out) {
  if (scale_denom != 1 && scale_denom != 2 && scale_denom != 4 && scale_denom != 8) {
    return InvalidArgumentError("JPEG scale_denom must be 1, 2, 4 or 8, got " +
                                std::to_string(scale_denom));
  }
  if (SniffCodec(bytes) != ImageCodec::kJpeg) return InvalidArgumentError("not a JPEG");
  JpegDecompressor decoder;
  DOCFEED_RETURN_IF_ERROR(decoder.Open(bytes.data(), bytes.size()));
  DOCFEED_RETURN_IF_ERROR(decoder.Run(ReadHeaderStep, decoder.cinfo()));
  jpeg_decompress_struct& cinfo = *decoder.cinfo();
  DOCFEED_RETURN_IF_ERROR(CheckJpeg(cinfo, bytes, limits));
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    return UnsupportedError(
        "CMYK/YCCK JPEG is not DCT-scaled (DecodeImage converts it at full size)");
  }
  const int channels = cinfo.num_components;
  ScaleArgs scale{&cinfo, static_cast<unsigned int>(scale_denom),
                  channels == 1 ? JCS_GRAYSCALE : JCS_RGB};
  DOCFEED_RETURN_IF_ERROR(decoder.Run(CalcDimensionsStep, &scale));
  ScaledSource& source = *out;
  source.full_width = static_cast<int32_t>(cinfo.image_width);
  source.full_height = static_cast<int32_t>(cinfo.image_height);
  source.scale_denom = scale_denom;
  Image& image = source.image;
  image.width = static_cast<int32_t>(cinfo.output_width);
  image.height = static_cast<int32_t>(cinfo.output_height);
  image.channels = channels;
  image.pixels.resize(image.stride_bytes() * static_cast<size_t>(image.height));
  ScaledDecodeArgs args{&cinfo, image.pixels.data(), image.stride_bytes()};
  return decoder.Run(DecodeStep, &args);
}

Result<ScaledSource> DecodeForDonut(std::span<const uint8_t> bytes, const DonutConfig& config,
                                    DonutDecodeMode mode, const DecodeLimits& limits,
                                    DecodeReport* report) {
  int32_t k = 1;
  // torch's arithmetic has no box, so the torchvision backend always decodes at full size.
  if (mode == DonutDecodeMode::kFast && SniffCodec(bytes) == ImageCodec::kJpeg &&
      config.do_resize && config.backend != DonutBackend::kTorchvision) {
    DOCFEED_ASSIGN_OR_RETURN(const ImageInfo info, ProbeImage(bytes));
    DOCFEED_ASSIGN_OR_RETURN(const DonutGeometry g,
                             ComputeDonutGeometry(info.width, info.height, config));
    // The resize target in the image's own orientation.
    const int32_t need_w = g.rotate ? g.resized_height : g.resized_width;
    const int32_t need_h = g.rotate ? g.resized_width : g.resized_height;
    // CMYK/YCCK goes through DecodeImage's Pillow conversion at full size.
    if (!info.cmyk) k = ChooseJpegScaleDenom(info.width, info.height, need_w, need_h);
  }
  ScaledSource source;
  if (k > 1) {
    DOCFEED_ASSIGN_OR_RETURN(source, DecodeJpegScaled(bytes, k, limits));
  } else {
    DOCFEED_ASSIGN_OR_RETURN(source.image, DecodeImage(bytes, limits, report));
    source.full_width = source.image.width;
    source.full_height = source.image.height;
  }
  DOCFEED_ASSIGN_OR_RETURN(source.image, ToDonutInput(std::move(source.image), config,
                                                      DonutTransparencyKey(bytes, config)));
  return source;
}

}  // namespace docfeed::internal
