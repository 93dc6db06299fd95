// DecodeAndResizeForDonut (jpeg_scaled.h): libjpeg-turbo decodes 16-row bands into a small
// buffer and each band runs through the shortest-edge resize and the thumbnail
// (MakeResizeStream, kernels/resize.h) while it is still in cache. The full-size image, which is
// 26 MB for an A4 page at 300 dpi, is never written to memory, zero-filled or read back.
//
// libjpeg runs only inside JpegDecompressor::Run (codec/internal/jpeg_guard.h): the steps are
// captureless functions over trivially destructible structs, and the C++ work (the resize
// streams) happens between steps, never under a pending longjmp.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codec/internal/jpeg_guard.h"
#include "imaging/jpeg_scaled.h"
#include "imaging/recycled_image.h"

namespace docfeed::internal {
namespace {

// Rows per jpeg_read_scanlines batch: one iMCU row of 4:2:0 data.
constexpr int32_t kBandRows = 16;

struct StartArgs {
  j_decompress_ptr cinfo;
  J_COLOR_SPACE out_color_space;
  unsigned int scale_denom;
};

void HeaderStep(void* p) { jpeg_read_header(static_cast<j_decompress_ptr>(p), TRUE); }

// Sets the output colour space and scale (libjpeg-turbo's defaults otherwise: ISLOW IDCT, fancy
// upsampling, as DecodeImage and Pillow) and computes the output size.
void ScaleStep(void* p) {
  auto* a = static_cast<StartArgs*>(p);
  a->cinfo->out_color_space = a->out_color_space;
  a->cinfo->scale_num = 1;
  a->cinfo->scale_denom = a->scale_denom;
  jpeg_calc_output_dimensions(a->cinfo);
}

void StartStep(void* p) { jpeg_start_decompress(static_cast<j_decompress_ptr>(p)); }

struct BandArgs {
  j_decompress_ptr cinfo;
  JSAMPROW rows[kBandRows];
  JDIMENSION wanted;
  JDIMENSION got;
};

void BandStep(void* p) {
  auto* a = static_cast<BandArgs*>(p);
  a->got = 0;
  while (a->got < a->wanted && a->cinfo->output_scanline < a->cinfo->output_height) {
    a->got += jpeg_read_scanlines(a->cinfo, a->rows + a->got, a->wanted - a->got);
  }
}

// Reads up to the EOI marker, so that a file cut short fails as in DecodeImage.
void FinishStep(void* p) { jpeg_finish_decompress(static_cast<j_decompress_ptr>(p)); }

// The two resize streams of DonutResizeScaled for a (scaled) source of sw x sh, writing the
// result into `out`. Returns false where a stage is not streamed (the caller falls back).
struct Streams {
  std::unique_ptr<RowSink> thumbnail;
  std::unique_ptr<RowSink> first;
};

Result<bool> MakeStreams(int32_t sw, int32_t sh, int32_t channels, const ScaledSource& shape,
                         const DonutGeometry& g, const DonutConfig& config, Image* out,
                         Streams* s) {
  const bool thumbnail = config.do_thumbnail &&
                         (g.thumb_width != g.resized_width || g.thumb_height != g.resized_height);
  for (const auto& [w, h] :
       {std::pair{g.resized_width, g.resized_height}, std::pair{g.thumb_width, g.thumb_height}}) {
    if (uint64_t{static_cast<uint32_t>(w)} * static_cast<uint32_t>(h) >
        DecodeLimits::kPillowBombPixels) {
      return false;  // DonutResize reports it.
    }
  }
  out->width = thumbnail ? g.thumb_width : g.resized_width;
  out->height = thumbnail ? g.thumb_height : g.resized_height;
  out->channels = channels;
  out->pixels.resize(out->stride_bytes() * static_cast<size_t>(out->height));
  const StreamOutput final_rows{out->pixels.data(), static_cast<ptrdiff_t>(out->stride_bytes()),
                                nullptr};
  const DonutResampling r = ResamplingOf(config);
  StreamOutput first_out = final_rows;
  if (thumbnail) {
    DOCFEED_ASSIGN_OR_RETURN(
        s->thumbnail, MakeResizeStream(g.resized_width, g.resized_height, channels, g.thumb_width,
                                       g.thumb_height, r.thumbnail_filter, nullptr,
                                       r.thumbnail_reducing_gap, final_rows, r.arithmetic));
    if (s->thumbnail == nullptr) return false;
    first_out = StreamOutput{nullptr, 0, s->thumbnail.get()};
  }
  const double k = shape.scale_denom;
  const Box box{0, 0, shape.full_width / k, shape.full_height / k};
  const bool full_box = shape.scale_denom == 1;
  DOCFEED_ASSIGN_OR_RETURN(
      s->first, MakeResizeStream(sw, sh, channels, g.resized_width, g.resized_height,
                                 ResampleFilter::kBilinear, full_box ? nullptr : &box, 0, first_out,
                                 r.arithmetic));
  return s->first != nullptr;
}

// Streams the decode through the resizes. Returns false (or an error) when the caller should
// take the whole-image path instead. `report` (may be null) receives libjpeg's warnings.
Result<bool> StreamJpeg(std::span<const uint8_t> bytes, const DonutConfig& config,
                        DonutDecodeMode mode, const DecodeLimits& limits, Image* out,
                        DecodeReport* report) {
  if (SniffCodec(bytes) != ImageCodec::kJpeg || !config.do_resize ||
      bytes.size() > limits.max_input_bytes) {
    return false;
  }
  JpegDecompressor decoder;
  DOCFEED_RETURN_IF_ERROR(decoder.Open(bytes.data(), bytes.size()));
  DOCFEED_RETURN_IF_ERROR(decoder.Run(HeaderStep, decoder.cinfo()));
  jpeg_decompress_struct& cinfo = *decoder.cinfo();
  const uint64_t pixels = uint64_t{cinfo.image_width} * cinfo.image_height;
  if (pixels == 0 || pixels > limits.max_pixels || cinfo.data_precision != 8 ||
      (cinfo.num_components != 1 && cinfo.num_components != 3) ||
      cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    return false;
  }
  const auto width = static_cast<int32_t>(cinfo.image_width);
  const auto height = static_cast<int32_t>(cinfo.image_height);
  DOCFEED_ASSIGN_OR_RETURN(const DonutGeometry g, ComputeDonutGeometry(width, height, config));
  if (g.rotate) return false;
  ScaledSource shape;
  shape.full_width = width;
  shape.full_height = height;
  // torch's arithmetic has no box: the torchvision backend never scales the decode.
  shape.scale_denom = mode == DonutDecodeMode::kFast && config.backend != DonutBackend::kTorchvision
                          ? ChooseJpegScaleDenom(width, height, g.resized_width, g.resized_height)
                          : 1;
  const int32_t channels = cinfo.num_components;
  StartArgs start{&cinfo, channels == 1 ? JCS_GRAYSCALE : JCS_RGB,
                  static_cast<unsigned int>(shape.scale_denom)};
  DOCFEED_RETURN_IF_ERROR(decoder.Run(ScaleStep, &start));
  const auto sw = static_cast<int32_t>(cinfo.output_width);
  const auto sh = static_cast<int32_t>(cinfo.output_height);
  Streams streams;
  DOCFEED_ASSIGN_OR_RETURN(const bool ok,
                           MakeStreams(sw, sh, channels, shape, g, config, out, &streams));
  if (!ok) return false;
  const size_t row_bytes = static_cast<size_t>(sw) * static_cast<size_t>(channels);
  std::vector<uint8_t> band(row_bytes * static_cast<size_t>(std::min(kBandRows, sh)));
  BandArgs args{};
  args.cinfo = &cinfo;
  for (int32_t r = 0; r < kBandRows; ++r) {
    args.rows[r] = band.data() + static_cast<size_t>(std::min(r, sh - 1)) * row_bytes;
  }
  DOCFEED_RETURN_IF_ERROR(decoder.Run(StartStep, &cinfo));
  while (cinfo.output_scanline < cinfo.output_height) {
    args.wanted = static_cast<JDIMENSION>(
        std::min<uint32_t>(kBandRows, cinfo.output_height - cinfo.output_scanline));
    DOCFEED_RETURN_IF_ERROR(decoder.Run(BandStep, &args));
    if (args.got == 0) return false;  // No progress (should not happen without an error).
    streams.first->PushRows(band.data(), static_cast<ptrdiff_t>(row_bytes),
                            static_cast<int32_t>(args.got));
  }
  DOCFEED_RETURN_IF_ERROR(decoder.Run(FinishStep, &cinfo));
  if (report != nullptr) {
    report->warnings = decoder.warnings();
    report->first_warning = decoder.first_warning();
  }
  return true;
}

}  // namespace

Status DecodeAndResizeForDonut(std::span<const uint8_t> bytes, const DonutConfig& config,
                               DonutDecodeMode mode, Image* out, const DecodeLimits& limits,
                               DecodeReport* report) {
  if (report != nullptr) *report = DecodeReport{};
  const Result<bool> streamed = StreamJpeg(bytes, config, mode, limits, out, report);
  if (streamed.ok() && *streamed) return Status::Ok();
  DOCFEED_ASSIGN_OR_RETURN(ScaledSource source,
                           DecodeForDonut(bytes, config, mode, limits, report));
  DOCFEED_ASSIGN_OR_RETURN(*out, DonutResizeScaled(source, config));
  RecyclePixels(source.image);  // the full-size page, for the thread's next one
  return Status::Ok();
}

}  // namespace docfeed::internal
