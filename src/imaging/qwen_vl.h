// The Qwen2-VL / Qwen2.5-VL image preset: Qwen2VLImageProcessor's geometry and its patch layout
// (docs/qwen-vl-preprocessing.md).
//
// The processor (4.57.6's Qwen2VLImageProcessor and 5.23.0's Qwen2VLImageProcessorPil) turns one
// PIL image into rows of pixel_values:
//   convert to RGB -> smart_resize (QwenSmartResize) -> PIL resize BICUBIC (no reducing gap)
//   -> rescale -> normalize (normalize.h's exact table) -> QwenPatchify
// and reports image_grid_thw = (1, h / patch_size, w / patch_size). Everything before the
// rescale is deterministic and can run once at pack time; the resized page is the "prepared"
// stage. A gray page stays one channel through the resize (Pillow resamples each band alone with
// the same integers, as donut.h explains) and is replicated by QwenPatchify.
//
// Thread safety: all functions are reentrant.
#ifndef DOCFEED_IMAGING_QWEN_VL_H_
#define DOCFEED_IMAGING_QWEN_VL_H_

#include <cstddef>
#include <cstdint>

#include "docfeed/preprocess.h"
#include "docfeed/status.h"
#include "imaging/donut.h"
#include "imaging/normalize.h"
#include "kernels/resize.h"

namespace docfeed::internal {

using docfeed::QwenVLConfig;

// Errors: InvalidArgument naming the field: patch_size, temporal_patch_size or merge_size
// outside 1..1024, min_pixels < 1, max_pixels < min_pixels or above 2^40, a std that is zero or
// not finite, hf_version not 4 or 5.
Status ValidateQwenVLConfig(const QwenVLConfig& config);

// The normalization table of `config` (normalize.h): float32(float64(v) * rescale_factor), then
// (x - float32(mean)) / float32(std) in float32, as the processor's rescale and normalize do.
Result<NormalizeTable> MakeQwenVLTable(const QwenVLConfig& config);

// The processor's smart_resize(height, width, factor = patch_size * merge_size, min_pixels,
// max_pixels), with Python's arithmetic: round() ties to even, true division in double, floor
// and ceil of doubles. Resizes only when do_resize.
// Errors: InvalidArgument when the aspect ratio is above 200 (the processor's ValueError, with
// its wording) or when a side would be smaller than one merged patch (a page so small that the
// rounding leaves nothing; the processor would give an empty tensor).
struct QwenGeometry {
  int32_t height = 0, width = 0;  // the resized page
};
Result<QwenGeometry> QwenSmartResize(int64_t height, int64_t width, const QwenVLConfig& config);

// Patches of a page of height x width (multiples of patch_size * merge_size): (h / p) * (w / p).
int64_t QwenPatchCount(int32_t height, int32_t width, const QwenVLConfig& config);
// Values in one patch row: 3 * temporal_patch_size * patch_size^2 (1176 with the defaults).
int64_t QwenPatchDim(const QwenVLConfig& config);
// An upper bound of QwenPatchCount over every page QwenSmartResize accepts (aspect ratio up to
// 200), from the worst cases of its three branches (see qwen_vl.cc).
int64_t QwenMaxPatches(const QwenVLConfig& config);

// Writes what the processor's patch flattening gives for the resized `page` (1 or 3 channels, a
// multiple of patch_size * merge_size on each side): QwenPatchCount rows of QwenPatchDim values,
// row r = the patch at (merge block, position within the block) in row-major order of blocks,
// each row laid out channel, frame (temporal_patch_size identical copies), patch row, patch
// column; every value is table[c][v] in `dtype` (kUint8: v itself).
// REQUIRES: `out` holds QwenPatchCount * QwenPatchDim * DTypeSize(dtype) bytes, aligned for dtype.
// Errors: InvalidArgument for a bad view or a size that is not a multiple of the merged patch.
Status QwenPatchify(const ImageView& page, const QwenVLConfig& config, const NormalizeTable& table,
                    DType dtype, void* out);

}  // namespace docfeed::internal

#endif  // DOCFEED_IMAGING_QWEN_VL_H_
