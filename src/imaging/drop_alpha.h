// The SIMD copy behind ToDonutInput's RGBA -> RGB (transformers 4.x's convert("RGB"), which
// drops alpha). Internal to docfeed_imaging.
#ifndef DOCFEED_IMAGING_DROP_ALPHA_H_
#define DOCFEED_IMAGING_DROP_ALPHA_H_

#include <cstddef>
#include <cstdint>

namespace docfeed::internal {

// Writes the first three samples of each of `pixels` four-sample pixels of `rgba` to `rgb`
// (3 * pixels bytes). REQUIRES: the buffers do not overlap.
void DropAlphaRgba(const uint8_t* rgba, size_t pixels, uint8_t* rgb);

}  // namespace docfeed::internal

#endif  // DOCFEED_IMAGING_DROP_ALPHA_H_
