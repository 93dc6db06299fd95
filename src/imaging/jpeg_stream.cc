// JpegBandDecoder (jpeg_stream.h). libjpeg runs only inside JpegDecompressor::Run
// (codec/internal/jpeg_guard.h): the steps are captureless functions over trivially destructible
// structs, and the C++ work (the caller's RowSink, typically resize streams) happens between
// steps, never under a pending longjmp.
#include "imaging/jpeg_stream.h"

#include <algorithm>
#include <string>
#include <vector>

#include "codec/internal/jpeg_guard.h"

namespace docfeed::internal {
namespace {

// Rows per band: a multiple of 16 (an iMCU row of 4:2:0 data), as many as fit in about 1 MiB,
// from 16 to 128. With bands of 16 rows the horizontal pass of a 2481 x 3508 RGB page to
// 840 x 1176 took a third more time than on the whole page (perf), most likely because libjpeg's
// working set displaces the resize's weight tables from L2 between bands; longer bands that still
// fit in L2 reload them less often (Qwen2-VL on sroie/023.jpg, one core: 22.8 ms a page with 16
// rows, 21.5 ms with 128, 21.7 ms unstreamed).
constexpr int32_t kMinBandRows = 16;
constexpr int32_t kMaxBandRows = 128;
constexpr size_t kBandBytes = size_t{1} << 20;

int32_t BandRows(size_t row_bytes) {
  const size_t fit = kBandBytes / std::max<size_t>(row_bytes, 1) / kMinBandRows * kMinBandRows;
  return static_cast<int32_t>(std::clamp<size_t>(fit, kMinBandRows, kMaxBandRows));
}

void HeaderStep(void* p) { jpeg_read_header(static_cast<j_decompress_ptr>(p), TRUE); }

struct ScaleArgs {
  j_decompress_ptr cinfo;
  J_COLOR_SPACE out_color_space;
  unsigned int scale_denom;
};

// Sets the output colour space and scale (libjpeg-turbo's defaults otherwise: ISLOW IDCT, fancy
// upsampling, as DecodeImage and Pillow) and computes the output size.
void ScaleStep(void* p) {
  auto* a = static_cast<ScaleArgs*>(p);
  a->cinfo->out_color_space = a->out_color_space;
  a->cinfo->scale_num = 1;
  a->cinfo->scale_denom = a->scale_denom;
  jpeg_calc_output_dimensions(a->cinfo);
}

void StartStep(void* p) { jpeg_start_decompress(static_cast<j_decompress_ptr>(p)); }

struct BandArgs {
  j_decompress_ptr cinfo;
  JSAMPROW rows[kMaxBandRows];
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

}  // namespace

JpegBandDecoder::JpegBandDecoder() = default;
JpegBandDecoder::~JpegBandDecoder() = default;

Result<bool> JpegBandDecoder::Open(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  if (SniffCodec(bytes) != ImageCodec::kJpeg || bytes.size() > limits.max_input_bytes) {
    return false;
  }
  decoder_ = std::make_unique<JpegDecompressor>();
  input_bytes_ = bytes.size();
  DOCFEED_RETURN_IF_ERROR(decoder_->Open(bytes.data(), bytes.size()));
  DOCFEED_RETURN_IF_ERROR(decoder_->Run(HeaderStep, decoder_->cinfo()));
  const jpeg_decompress_struct& cinfo = *decoder_->cinfo();
  const uint64_t pixels = uint64_t{cinfo.image_width} * cinfo.image_height;
  // DecodeImage's L and RGB (codec/jpeg.cc CheckDecodable and InfoFromHeader): one component, or
  // three of a colour space libjpeg converts to RGB. CMYK/YCCK has four.
  const bool l_or_rgb = cinfo.num_components == 1 ||
                        (cinfo.num_components == 3 && cinfo.jpeg_color_space != JCS_UNKNOWN);
  return pixels != 0 && pixels <= limits.max_pixels && cinfo.data_precision == 8 && l_or_rgb;
}

int32_t JpegBandDecoder::width() const {
  return static_cast<int32_t>(decoder_->cinfo()->image_width);
}
int32_t JpegBandDecoder::height() const {
  return static_cast<int32_t>(decoder_->cinfo()->image_height);
}
int32_t JpegBandDecoder::channels() const { return decoder_->cinfo()->num_components; }

Result<bool> JpegBandDecoder::SetScale(int32_t scale_denom) {
  if (scale_denom != 1 && scale_denom != 2 && scale_denom != 4 && scale_denom != 8) {
    return InvalidArgumentError("JPEG scale_denom must be 1, 2, 4 or 8, got " +
                                std::to_string(scale_denom));
  }
  jpeg_decompress_struct& cinfo = *decoder_->cinfo();
  if (scale_denom == 1 && !CheckJpegDataCanHoldImage(cinfo, input_bytes_).ok()) return false;
  ScaleArgs args{&cinfo, channels() == 1 ? JCS_GRAYSCALE : JCS_RGB,
                 static_cast<unsigned int>(scale_denom)};
  DOCFEED_RETURN_IF_ERROR(decoder_->Run(ScaleStep, &args));
  return true;
}

int32_t JpegBandDecoder::output_width() const {
  return static_cast<int32_t>(decoder_->cinfo()->output_width);
}
int32_t JpegBandDecoder::output_height() const {
  return static_cast<int32_t>(decoder_->cinfo()->output_height);
}

Status JpegBandDecoder::DecodeInto(RowSink& sink, DecodeReport* report) {
  jpeg_decompress_struct& cinfo = *decoder_->cinfo();
  const int32_t rows = output_height();
  const size_t row_bytes = static_cast<size_t>(output_width()) * static_cast<size_t>(channels());
  const int32_t band_rows = std::min(BandRows(row_bytes), rows);
  std::vector<uint8_t> band(row_bytes * static_cast<size_t>(band_rows));
  BandArgs args{};
  args.cinfo = &cinfo;
  for (int32_t r = 0; r < band_rows; ++r) {
    args.rows[r] = band.data() + static_cast<size_t>(r) * row_bytes;
  }
  DOCFEED_RETURN_IF_ERROR(decoder_->Run(StartStep, &cinfo));
  while (cinfo.output_scanline < cinfo.output_height) {
    args.wanted = static_cast<JDIMENSION>(
        std::min<uint32_t>(band_rows, cinfo.output_height - cinfo.output_scanline));
    DOCFEED_RETURN_IF_ERROR(decoder_->Run(BandStep, &args));
    if (args.got == 0) {  // No progress, which libjpeg only allows a suspending source.
      return InternalError("JPEG band decode made no progress");
    }
    sink.PushRows(band.data(), static_cast<ptrdiff_t>(row_bytes), static_cast<int32_t>(args.got));
  }
  DOCFEED_RETURN_IF_ERROR(decoder_->Run(FinishStep, &cinfo));
  if (report != nullptr) {
    *report = DecodeReport{};
    report->warnings = decoder_->warnings();
    report->first_warning = decoder_->first_warning();
  }
  return Status::Ok();
}

}  // namespace docfeed::internal
