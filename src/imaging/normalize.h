// The Donut preset's last step: rescale + normalize + layout, through an exact 256-entry table.
//
// DonutImageProcessor (transformers 4.x) rescales and normalizes the padded uint8 image with
//   rescaled   = float32(float64(v) * rescale_factor)          (image_transforms.rescale)
//   normalized = float32(float32(rescaled - float32(mean)) / float32(std))   (.normalize)
// Each output depends on one uint8 value and its channel, so a 3 x 256 table built with those
// exact operations gives the processor's float32 bit for bit (padding 0 -> -1.0, 255 -> 1.0 with
// the 0.5/0.5 defaults). float16 and bfloat16 outputs are that float32 rounded to nearest-even,
// as torch's .to(float16/bfloat16) and numpy's astype(float16) do.
//
// The RGB -> CHW float32 case (pixel_values) runs a Highway writer (normalize_chw.h) that gathers
// the same table entries; DOCFEED_SIMD=scalar selects the plain table loop.
//
// Thread safety: a NormalizeTable is immutable after MakeNormalizeTable; share it freely.
#ifndef DOCFEED_IMAGING_NORMALIZE_H_
#define DOCFEED_IMAGING_NORMALIZE_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "docfeed/status.h"
#include "imaging/donut.h"
#include "kernels/resize.h"

namespace docfeed::internal {

// The element types and layouts of docfeed/image.h.
using docfeed::DType;
using docfeed::DTypeSize;
using docfeed::OutputLayout;

// IEEE binary16 / bfloat16 bits of `value`, rounded to nearest, ties to even; overflow gives
// infinity and NaN stays NaN.
uint16_t FloatToHalf(float value);
uint16_t FloatToBfloat16(float value);

// The output for every (channel, uint8 value) in each dtype.
struct NormalizeTable {
  std::array<std::array<float, 256>, 3> f32;
  std::array<std::array<uint16_t, 256>, 3> f16;
  std::array<std::array<uint16_t, 256>, 3> bf16;
};

// Builds the table for `config`'s do_rescale, rescale_factor, do_normalize, mean and std (with
// neither flag set the table holds float32(v)).
// Errors: InvalidArgument for a config ValidateDonutConfig refuses.
Result<NormalizeTable> MakeNormalizeTable(const DonutConfig& config);

// Writes `image` (1 or 3 channels; 1 is replicated to RGB) as 3 x height x width (CHW) or
// height x width x 3 (HWC) elements of `dtype` into `out`, densely packed.
// REQUIRES: out holds image.width * image.height * 3 * DTypeSize(dtype) bytes, suitably aligned
// for the dtype, and does not overlap the image.
// Errors: InvalidArgument for a bad view (null, empty, channels not 1 or 3, short stride) or a
// null `out`.
Status Normalize(const ImageView& image, const NormalizeTable& table, OutputLayout layout,
                 DType dtype, void* out);

// Padding and normalization in one pass, for loaders: writes exactly what DonutPad(resized,
// offsets, canvas of height x width x 3) followed by Normalize(canvas, table, layout, dtype, out)
// writes, without the intermediate canvas. Padding pixels are the value 0 of every channel
// (table entry 0, e.g. -1.0 with the default mean/std); a 1-channel `resized` is replicated to
// RGB. DType::kUint8 writes the padded pixels themselves (HWC: the "padded" stage; CHW: planes).
// Every element of `out` is written. The CHW float32 case runs the SIMD writer over bands of
// padded rows (DOCFEED_SIMD=scalar: the plain loop; same bits).
// REQUIRES: out holds height * width * 3 * DTypeSize(dtype) bytes, aligned for the dtype, and
// does not overlap `resized`.
// Errors: InvalidArgument for a bad view (null, empty, channels not 1 or 3, short stride), a
// null `out`, height or width < 1, or `resized` not fitting in the canvas at `offsets` (as
// DonutPad).
Status NormalizePadded(const ImageView& resized, PadOffsets offsets, int32_t height, int32_t width,
                       const NormalizeTable& table, OutputLayout layout, DType dtype, void* out);

}  // namespace docfeed::internal

#endif  // DOCFEED_IMAGING_NORMALIZE_H_
