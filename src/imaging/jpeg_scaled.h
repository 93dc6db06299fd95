// Decoding for the Donut preset, with an optional fast mode: libjpeg-turbo's DCT-domain scaling
// (scale_num / scale_denom) decodes a large JPEG at 1/2, 1/4 or 1/8 of its size, skipping most of
// the IDCT, colour conversion and the first resize's work. The exact mode decodes in full, as
// Pillow does. Fast mode is NOT pixel-identical to DonutImageProcessor; src/imaging/README.md
// gives its measured cost.
//
// Thread safety: reentrant; no shared state.
#ifndef DOCFEED_IMAGING_JPEG_SCALED_H_
#define DOCFEED_IMAGING_JPEG_SCALED_H_

#include <cstdint>
#include <span>

#include "codec/codec.h"
#include "docfeed/status.h"
#include "imaging/donut.h"

namespace docfeed::internal {

enum class DonutDecodeMode {
  kExact,  // Full decode: the processor's bytes.
  kFast,   // DCT-scaled JPEG decode when the image is at least twice the resize target.
};

// The largest k in {8, 4, 2} with width >= k * needed_width and height >= k * needed_height,
// else 1.
int32_t ChooseJpegScaleDenom(int32_t width, int32_t height, int32_t needed_width,
                             int32_t needed_height);

// Decodes a baseline or progressive 8-bit JPEG (grayscale or 3-component) at
// scale 1/scale_denom: ceil(width / k) x ceil(height / k) pixels, L or RGB, ISLOW IDCT and fancy
// upsampling as in a full decode. `limits` apply to the full size.
// Errors: InvalidArgument for scale_denom not in {1, 2, 4, 8}; Unsupported for CMYK/YCCK (which
// DecodeImage converts at full size, as DecodeForDonut does); otherwise as DecodeImage for JPEG.
Result<ScaledSource> DecodeJpegScaled(std::span<const uint8_t> bytes, int32_t scale_denom,
                                      const DecodeLimits& limits = {});

// Decodes `bytes` for DonutResizeScaled. kExact (and any non-JPEG or CMYK/YCCK input) decodes in
// full with DecodeImage; kFast scales a JPEG by ChooseJpegScaleDenom against the shortest-edge
// resize target of `config`. Either way the image is then passed through ToDonutInput (L or RGB).
// EXIF orientation is not applied (the processor does not apply it either). `report` (may be
// null) receives DecodeImage's warnings; a DCT-scaled decode reports none.
// Errors: those of DecodeImage / DecodeJpegScaled / ComputeDonutGeometry.
Result<ScaledSource> DecodeForDonut(std::span<const uint8_t> bytes, const DonutConfig& config,
                                    DonutDecodeMode mode, const DecodeLimits& limits = {},
                                    DecodeReport* report = nullptr);

// DecodeJpegScaled into `out`, reusing out->image.pixels when it is large enough (no allocation,
// zero fill or page faults for a buffer that is kept across images). Same results and errors.
Status DecodeJpegScaledInto(std::span<const uint8_t> bytes, int32_t scale_denom,
                            const DecodeLimits& limits, ScaledSource* out);

// The "resized" stage straight from the bytes: DecodeForDonut(bytes, config, mode) followed by
// DonutResizeScaled, identical bytes, written into `out` (whose pixel buffer is reused when it is
// large enough). JPEGs (baseline or progressive, L or RGB) that need no rotation and whose
// thumbnail needs no reduce() step are decoded band by band (jpeg_stream.h
// JpegBandDecoder), and each band goes through both resizes while it is in cache
// (MakeResizeStream): the full-size image is never stored. Everything else, and any error, takes
// the DecodeForDonut + DonutResizeScaled path, so the errors are theirs. `report` (may be null)
// receives the warnings the decode tolerated (codec.h DecodeReport), as DecodeForDonut's.
// REQUIRES: out != nullptr.
Status DecodeAndResizeForDonut(std::span<const uint8_t> bytes, const DonutConfig& config,
                               DonutDecodeMode mode, Image* out, const DecodeLimits& limits = {},
                               DecodeReport* report = nullptr);

}  // namespace docfeed::internal

#endif  // DOCFEED_IMAGING_JPEG_SCALED_H_
