// The SIMD writer behind Normalize's hot case: a 3-channel uint8 image to CHW float32 through the
// per-channel 256-entry tables (normalize.h). Internal to docfeed_imaging.
//
// Bit for bit the table's values: each output is a gathered table entry, never recomputed. The
// 22 MB output of a 1553x1200 page is written with non-temporal stores where the three planes'
// rows share one 64-byte alignment, so it does not evict the caches or cost a read per line.
#ifndef DOCFEED_IMAGING_NORMALIZE_CHW_H_
#define DOCFEED_IMAGING_NORMALIZE_CHW_H_

#include "kernels/resize.h"

namespace docfeed::internal {

// Writes plane c of `out` (3 x height x width floats) as tables[c][image pixel channel c].
// REQUIRES: image.channels == 3, a valid view, out not overlapping it, tables of 256 entries.
void NormalizeChwFloat32(const ImageView& image, const float* const tables[3], float* out);

// How the writer stores: streaming (non-temporal) stores where the three planes are equally
// aligned, for output that is read much later (a batch), or always through the cache, for a
// scratch buffer read back at once.
enum class Stores { kStreamWhereAligned, kCached };

// The same into a window of larger planes: pixel (x, y) of channel c goes to
// out[c * plane_stride + y * row_stride + x] (strides in floats). Does not touch other elements.
// REQUIRES: as above; row_stride >= image.width; the planes do not overlap.
void NormalizeChwFloat32Strided(const ImageView& image, const float* const tables[3], float* out,
                                size_t plane_stride, size_t row_stride,
                                Stores stores = Stores::kStreamWhereAligned);

}  // namespace docfeed::internal

#endif  // DOCFEED_IMAGING_NORMALIZE_CHW_H_
