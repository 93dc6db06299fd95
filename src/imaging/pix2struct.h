// The Pix2Struct image preset: Pix2StructImageProcessor's per-image standardization, its
// aspect-preserving antialiased bilinear resize and its flattened patches
// (docs/pix2struct-preprocessing.md).
//
// The processor (4.57.6's Pix2StructImageProcessor and 5.23.0's Pix2StructImageProcessorPil)
// turns one RGB page into max_patches rows of 2 + 3 * ph * pw float32 values:
//   numpy: x = float32(pixel); mean = np.mean(x); std = np.std(x) (both over every value, in
//          memory order, HWC); x = (x - mean) / max(std, 1 / sqrt(values))
//   torch: interpolate(x, (rows * ph, cols * pw), bilinear, antialias=True) on float32, then
//          each patch (row-major) as [row + 1, col + 1, values in (y, x, channel) order], and
//          zero rows up to max_patches.
// Nothing before the float arithmetic depends on the model, so the preset's prepared page is
// the decoded RGB page itself; Pix2StructPatches does the rest, reproducing numpy's pairwise
// float32 summation and ATen's float antialiased weights and sums operation for operation.
//
// Thread safety: all functions are reentrant.
#ifndef DOCFEED_IMAGING_PIX2STRUCT_H_
#define DOCFEED_IMAGING_PIX2STRUCT_H_

#include <cstdint>

#include "docfeed/preprocess.h"
#include "docfeed/status.h"
#include "kernels/resize.h"

namespace docfeed::internal {

using docfeed::Pix2StructConfig;

// Errors: InvalidArgument naming the field: max_patches outside 1..65536, a patch side outside
// 1..256, hf_version not 4 or 5.
Status ValidatePix2StructConfig(const Pix2StructConfig& config);

// Values in one output row: 2 + 3 * patch_height * patch_width.
int64_t Pix2StructRowValues(const Pix2StructConfig& config);

// The patch grid the processor resizes a height x width page to (extract_flattened_patches,
// with Python's arithmetic: sqrt (4.x) or ** 0.5 (5.x) in double, floor, clamps).
struct Pix2StructGrid {
  int32_t rows = 0, cols = 0;
};
// Errors: InvalidArgument for an empty page or a side above 2^30.
Result<Pix2StructGrid> ComputePix2StructGrid(int64_t height, int64_t width,
                                             const Pix2StructConfig& config);

// Writes flattened_patches for `page` (1 channel, read as the three equal channels of
// image.convert("RGB"), or 3 channels): max_patches rows of Pix2StructRowValues float32 values.
// REQUIRES: ValidatePix2StructConfig(config) is OK; `out` holds max_patches * row values.
// Errors: InvalidArgument for a bad view or a size ComputePix2StructGrid refuses.
Status Pix2StructPatches(const ImageView& page, const Pix2StructConfig& config, float* out);

// For tests, which compare the paths bit for bit: the per-image standardization statistics of
// `n` HWC values (`gray`: n / 3 gray bytes, each value thrice) through one path, 0 scalar, 1 AVX2,
// 2 AVX-512, whatever the SIMD mode; the mean, the std and the 256-entry table of standardized
// values. False when this build or CPU has no such path.
bool Pix2StructStatisticsForTesting(const uint8_t* pixels, int64_t n, bool gray, int path,
                                    float* mean, float* std_dev, float* table);

// For tests: whether a height x width page (`gray`: one channel) takes the AVX-512 HWC resize
// on a CPU that has it (the page's plan only; the CPU is not asked).
bool Pix2StructHwcPathForTesting(int64_t height, int64_t width, bool gray,
                                 const Pix2StructConfig& config);

}  // namespace docfeed::internal

#endif  // DOCFEED_IMAGING_PIX2STRUCT_H_
