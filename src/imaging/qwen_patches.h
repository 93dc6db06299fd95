// The SIMD writer behind QwenPatchify's float32 and bfloat16 cases (qwen_vl.h). Internal to
// docfeed_imaging.
//
// Each merged block of patches (merge_size^2 patches, 18.8 KB in float32 with the defaults) is
// assembled in an aligned stack buffer, a vector of pixels at a time (the last vector of a patch
// row overlaps the one before it, so a 14-pixel row needs no scalar tail), each value written
// once per temporal frame; the block is then copied to the output with streaming stores where
// the output is 64-byte aligned (a page's output is written once and read by someone else), so
// the 23.7 MB of a float32 page cost no read per cache line. Values are the table's entries bit
// for bit (normalize-inl.h).
#ifndef DOCFEED_IMAGING_QWEN_PATCHES_H_
#define DOCFEED_IMAGING_QWEN_PATCHES_H_

#include <cstdint>

#include "imaging/normalize.h"
#include "kernels/resize.h"

namespace docfeed::internal {

// Writes what QwenPatchify writes for `page` in `dtype` (kFloat32 or kBfloat16) and returns
// true, or returns false having written nothing when this writer does not take the geometry
// (a patch row narrower than a vector, a merged block larger than its buffer).
// REQUIRES: the page and `out` as QwenPatchify checks them (1 or 3 channels, sides multiples of
// patch_size * merge_size, out aligned for dtype and large enough).
bool QwenPatchifySimd(const ImageView& page, int32_t patch_size, int32_t merge_size,
                      int32_t temporal_patch_size, const NormalizeTable& table, DType dtype,
                      void* out);

}  // namespace docfeed::internal

#endif  // DOCFEED_IMAGING_QWEN_PATCHES_H_
