// Images whose pixel storage comes from, and goes back to, the thread's recycled byte vectors
// (base/recycled_bytes.h): the full-size page and the copies the presets make of it, tens of
// megabytes each for a 600 dpi scan, reused page after page instead of mapped, faulted in,
// zero-filled and unmapped each time.
#ifndef DOCFEED_IMAGING_RECYCLED_IMAGE_H_
#define DOCFEED_IMAGING_RECYCLED_IMAGE_H_

#include <cstddef>
#include <cstdint>
#include <utility>

#include "base/recycled_bytes.h"
#include "docfeed/image.h"

namespace docfeed::internal {

// A width x height image of `channels` whose bytes are unspecified (an earlier page's, or
// zeros): only for callers that write every byte before anything reads one.
inline Image ImageToOverwrite(int32_t width, int32_t height, int32_t channels) {
  Image image{.width = width, .height = height, .channels = channels, .pixels = {}};
  image.pixels = TakeBytes(image.stride_bytes() * static_cast<size_t>(height));
  return image;
}

// Gives `image`'s pixel storage back for this thread's next page; `image` is left empty (0x0).
// Only once nothing views its pixels any more.
inline void RecyclePixels(Image& image) {
  RecycleBytes(std::move(image.pixels));
  image.width = image.height = image.channels = 0;
}

}  // namespace docfeed::internal

#endif  // DOCFEED_IMAGING_RECYCLED_IMAGE_H_
