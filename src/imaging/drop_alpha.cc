// Highway dispatch of DropAlphaRgba (drop_alpha.h): a vector of pixels is deinterleaved into its
// four planes and the first three interleaved again; the last pixels one at a time.
#include "imaging/drop_alpha.h"

#include <cstddef>
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "imaging/drop_alpha.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// foreach_target.h must precede highway.h.
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace docfeed::internal {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

void DropAlphaRgbaImpl(const uint8_t* rgba, size_t pixels, uint8_t* rgb) {
  const hn::ScalableTag<uint8_t> d;
  const size_t n = hn::Lanes(d);
  size_t i = 0;
  for (; i + n <= pixels; i += n) {
    hn::Vec<decltype(d)> r, g, b, a;
    hn::LoadInterleaved4(d, rgba + 4 * i, r, g, b, a);
    hn::StoreInterleaved3(r, g, b, d, rgb + 3 * i);
  }
  for (; i < pixels; ++i) {
    rgb[3 * i] = rgba[4 * i];
    rgb[3 * i + 1] = rgba[4 * i + 1];
    rgb[3 * i + 2] = rgba[4 * i + 2];
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace docfeed::internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace docfeed::internal {

HWY_EXPORT(DropAlphaRgbaImpl);

void DropAlphaRgba(const uint8_t* rgba, size_t pixels, uint8_t* rgb) {
  HWY_DYNAMIC_DISPATCH(DropAlphaRgbaImpl)(rgba, pixels, rgb);
}

}  // namespace docfeed::internal
#endif  // HWY_ONCE
