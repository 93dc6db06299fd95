// DecodeAndResizeForDonut (jpeg_scaled.h): JpegBandDecoder (jpeg_stream.h) decodes bands of rows
// into a small buffer and each band runs through the shortest-edge resize and the thumbnail
// (MakeResizeStream, kernels/resize.h) while it is still in cache. The full-size image, which is
// 26 MB for an A4 page at 300 dpi, is never written to memory, zero-filled or read back.
#include <memory>
#include <utility>

#include "imaging/jpeg_scaled.h"
#include "imaging/jpeg_stream.h"
#include "imaging/recycled_image.h"

namespace docfeed::internal {
namespace {

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
  if (!config.do_resize) return false;
  JpegBandDecoder decoder;
  DOCFEED_ASSIGN_OR_RETURN(const bool open, decoder.Open(bytes, limits));
  if (!open) return false;
  const int32_t width = decoder.width();
  const int32_t height = decoder.height();
  DOCFEED_ASSIGN_OR_RETURN(const DonutGeometry g, ComputeDonutGeometry(width, height, config));
  if (g.rotate) return false;
  ScaledSource shape;
  shape.full_width = width;
  shape.full_height = height;
  // torch's arithmetic has no box: the torchvision backend never scales the decode.
  shape.scale_denom = mode == DonutDecodeMode::kFast && config.backend != DonutBackend::kTorchvision
                          ? ChooseJpegScaleDenom(width, height, g.resized_width, g.resized_height)
                          : 1;
  DOCFEED_ASSIGN_OR_RETURN(const bool scaled, decoder.SetScale(shape.scale_denom));
  if (!scaled) return false;
  Streams streams;
  DOCFEED_ASSIGN_OR_RETURN(const bool ok,
                           MakeStreams(decoder.output_width(), decoder.output_height(),
                                       decoder.channels(), shape, g, config, out, &streams));
  if (!ok) return false;
  DOCFEED_RETURN_IF_ERROR(decoder.DecodeInto(*streams.first, report));
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
