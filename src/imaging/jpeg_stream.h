// Band-by-band JPEG decoding for the presets that stream a page through their resizes
// (DecodeAndResizeForDonut in jpeg_scaled.h, the Qwen2-VL preset): libjpeg-turbo decodes a band
// of rows (16 to 128, about 1 MiB) into a small buffer and hands it to a RowSink the caller made
// (a resize stream, kernels/resize.h MakeResizeStream) while the rows are still in cache. The
// full-size page, 26 MB for an A4 page at 300 dpi, is never written to memory, zero-filled or
// read back.
//
// The decoder takes only what it decodes exactly as DecodeImage does (8-bit grayscale or
// YCbCr/RGB, ISLOW IDCT and fancy upsampling, the same warnings); for anything else it says no,
// and the caller takes its whole-image path, whose errors are then the ones reported.
//
// Thread safety: a decoder is used by one thread; distinct decoders share nothing.
#ifndef DOCFEED_IMAGING_JPEG_STREAM_H_
#define DOCFEED_IMAGING_JPEG_STREAM_H_

#include <cstdint>
#include <memory>
#include <span>

#include "codec/codec.h"
#include "docfeed/status.h"
#include "kernels/resize.h"

namespace docfeed::internal {

class JpegDecompressor;  // codec/internal/jpeg_guard.h; kept out of this header with jpeglib.h.

// Use: Open, then SetScale, then DecodeInto, each once and in that order. A false or an error
// from any of them means: take the whole-image path (the decoder is then of no further use).
class JpegBandDecoder {
 public:
  JpegBandDecoder();
  ~JpegBandDecoder();
  JpegBandDecoder(const JpegBandDecoder&) = delete;
  JpegBandDecoder& operator=(const JpegBandDecoder&) = delete;

  // Reads the header of `bytes`, which must outlive the decoder. True for a JPEG that DecodeImage
  // would decode to L or RGB within `limits`: 8-bit, 1 component or 3 of a known colour space
  // (YCbCr or RGB). False for anything else: not a JPEG, over a limit, CMYK/YCCK (which
  // DecodeImage converts as Pillow does), 12-bit. Errors: libjpeg's for a header it refuses.
  Result<bool> Open(std::span<const uint8_t> bytes, const DecodeLimits& limits);

  // The header's size and DecodeImage's channel count (1: L, 3: RGB). REQUIRES: Open gave true.
  int32_t width() const;
  int32_t height() const;
  int32_t channels() const;

  // Decodes at 1/scale_denom (1, 2, 4 or 8): output_width() x output_height() is
  // ceil(width / k) x ceil(height / k), DecodeJpegScaled's pixels. At scale 1 it is also false for
  // sequential Huffman data too short to hold the image, which DecodeImage refuses before it
  // decodes ("image file is truncated") but libjpeg would fill with gray after an early EOI; a
  // DCT-scaled decode goes on there, as DecodeJpegScaled does.
  // Errors: InvalidArgument for another scale_denom; libjpeg's.
  // REQUIRES: Open gave true.
  Result<bool> SetScale(int32_t scale_denom);
  int32_t output_width() const;
  int32_t output_height() const;

  // Pushes all output_height() rows into `sink`, top to bottom, in bands of at most 128, then
  // reads up to the EOI marker, so that a file cut short fails as in DecodeImage. On success
  // `report` (may be null) is DecodeImage's: the warnings libjpeg tolerated.
  // Errors: libjpeg's (JpegFailure, codec/internal/jpeg_guard.h).
  // REQUIRES: SetScale gave true; called once.
  Status DecodeInto(RowSink& sink, DecodeReport* report);

 private:
  std::unique_ptr<JpegDecompressor> decoder_;
  size_t input_bytes_ = 0;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_IMAGING_JPEG_STREAM_H_
