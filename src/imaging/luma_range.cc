// Highway dispatch of ExtendLumaRangeRgb (luma_range.h): a vector of pixels is deinterleaved,
// widened to 32-bit lanes, weighted and summed as PillowLuma does (every product and sum fits:
// 255 * 65536 < 2^32), and folded into running minimum and maximum vectors; the last pixels one
// at a time.
#include "imaging/luma_range.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "imaging/luma_range.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// foreach_target.h must precede highway.h.
#include <hwy/highway.h>

#include "imaging/nougat.h"

HWY_BEFORE_NAMESPACE();
namespace docfeed::internal {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

void ExtendLumaRangeRgbImpl(const uint8_t* rgb, size_t pixels, uint8_t* lo, uint8_t* hi) {
  const hn::ScalableTag<uint32_t> d32;
  const hn::Rebind<uint8_t, decltype(d32)> d8;
  const size_t n = hn::Lanes(d32);
  const auto kr = hn::Set(d32, 19595u), kg = hn::Set(d32, 38470u), kb = hn::Set(d32, 7471u);
  const auto half = hn::Set(d32, 0x8000u);
  auto vlo = hn::Set(d32, *lo), vhi = hn::Set(d32, *hi);
  size_t i = 0;
  for (; i + n <= pixels; i += n) {
    hn::Vec<decltype(d8)> r, g, b;
    hn::LoadInterleaved3(d8, rgb + 3 * i, r, g, b);
    const auto sum =
        hn::Add(hn::Add(hn::Mul(hn::PromoteTo(d32, r), kr), hn::Mul(hn::PromoteTo(d32, g), kg)),
                hn::Add(hn::Mul(hn::PromoteTo(d32, b), kb), half));
    const auto luma = hn::ShiftRight<16>(sum);
    vlo = hn::Min(vlo, luma);
    vhi = hn::Max(vhi, luma);
  }
  auto low = static_cast<uint8_t>(hn::GetLane(hn::MinOfLanes(d32, vlo)));
  auto high = static_cast<uint8_t>(hn::GetLane(hn::MaxOfLanes(d32, vhi)));
  for (; i < pixels; ++i) {
    const uint8_t luma = PillowLuma(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
    low = std::min(low, luma);
    high = std::max(high, luma);
  }
  *lo = low;
  *hi = high;
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace docfeed::internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace docfeed::internal {

HWY_EXPORT(ExtendLumaRangeRgbImpl);

void ExtendLumaRangeRgb(const uint8_t* rgb, size_t pixels, uint8_t* lo, uint8_t* hi) {
  HWY_DYNAMIC_DISPATCH(ExtendLumaRangeRgbImpl)(rgb, pixels, lo, hi);
}

}  // namespace docfeed::internal
#endif  // HWY_ONCE
