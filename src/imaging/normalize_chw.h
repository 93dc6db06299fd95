// The SIMD writer behind Normalize's and NormalizePadded's hot cases: a 3-channel uint8 image to
// CHW float32 or bfloat16 through the per-channel table (normalize.h). Internal to
// docfeed_imaging.
//
// Bit for bit the table's values: each output is computed by the table's checked arithmetic
// (NormalizeAffine::exact) or gathered from it, never approximated. The 22 MB output of a
// 1553x1200 page is written with non-temporal stores where the three planes' rows share one
// 64-byte alignment, so it does not evict the caches or cost a read per line.
#ifndef DOCFEED_IMAGING_NORMALIZE_CHW_H_
#define DOCFEED_IMAGING_NORMALIZE_CHW_H_

#include <cstddef>

#include "imaging/normalize.h"
#include "kernels/resize.h"

namespace docfeed::internal {

// Writes plane c of `out` (3 x height x width elements of `dtype`) as the table's entry of the
// image's channel c. `dtype` is kFloat32 or kBfloat16.
// REQUIRES: image.channels == 3, a valid view, out aligned for dtype and not overlapping it.
void NormalizeChw(const ImageView& image, const NormalizeTable& table, DType dtype, void* out);

// The same into a window of larger planes: pixel (x, y) of channel c goes to element
// c * plane_stride + y * row_stride + x of `out` (strides in elements). Does not touch others.
// REQUIRES: as above; row_stride >= image.width; the planes do not overlap.
void NormalizeChwStrided(const ImageView& image, const NormalizeTable& table, DType dtype,
                         void* out, size_t plane_stride, size_t row_stride);

}  // namespace docfeed::internal

#endif  // DOCFEED_IMAGING_NORMALIZE_CHW_H_
