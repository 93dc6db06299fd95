// The row-streaming resampler behind MakeResizeStream (resize.h). Internal to docfeed_kernels.
//
// A stream holds a ring of "staged" rows: horizontally resampled rows (horizontal-first order)
// or raw source rows cut to the columns the horizontal weights read (vertical-first order, or
// no horizontal pass). Each output row is computed as soon as the ring holds every row its
// vertical weights read, then rows no later output reads are dropped. Every output byte comes
// from the same kernels on the same 8-bit rows as the whole-image passes, hence is identical.
#ifndef DOCFEED_KERNELS_RESAMPLE_STREAM_H_
#define DOCFEED_KERNELS_RESAMPLE_STREAM_H_

#include <cstdint>
#include <memory>

#include "kernels/resample_coeffs.h"
#include "kernels/resize.h"

namespace docfeed::internal {

// What a stream does; resize.cc derives it from Pillow's rules (ImagingResampleInner).
struct StreamPlan {
  int32_t src_width = 0, src_height = 0, channels = 0;
  int32_t out_width = 0, out_height = 0;
  bool has_x = false;  // Horizontal pass over `x` (source columns); else out_width == src_width.
  CoeffTable x;
  bool has_y = false;  // Vertical pass over `y` (source rows); else out_height == src_height.
  CoeffTable y;
  bool vertical_first = false;  // With both passes: the vertical pass runs first.
};

// REQUIRES: a consistent plan (tables of out_width / out_height entries whose taps lie inside
// the source; channels 1..4) and an `out` with dst or next set, as MakeResizeStream states.
std::unique_ptr<RowSink> MakeResampleStream(StreamPlan plan, StreamOutput out);

}  // namespace docfeed::internal

#endif  // DOCFEED_KERNELS_RESAMPLE_STREAM_H_
