// The SIMD scan behind Nougat's crop_margin (nougat.h): the range of a row's Pillow luma values.
// Internal to docfeed_imaging.
#ifndef DOCFEED_IMAGING_LUMA_RANGE_H_
#define DOCFEED_IMAGING_LUMA_RANGE_H_

#include <cstddef>
#include <cstdint>

namespace docfeed::internal {

// Narrows [*lo, *hi] to include the Pillow luma (PillowLuma, nougat.h: ITU-R 601-2 in 16-bit
// fixed point, rounded, as convert("L")) of each of `pixels` RGB pixels at `rgb`. Exactly the
// scalar formula's values, a vector of pixels at a time.
void ExtendLumaRangeRgb(const uint8_t* rgb, size_t pixels, uint8_t* lo, uint8_t* hi);

}  // namespace docfeed::internal

#endif  // DOCFEED_IMAGING_LUMA_RANGE_H_
