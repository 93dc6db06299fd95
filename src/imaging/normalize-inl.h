// Per-target pieces shared by the SIMD normalize writers (normalize_chw.cc, qwen_patches.cc):
// uint8 lanes -> the table's float32 entries, computed by NormalizeAffine's arithmetic or
// gathered from the table, and stored as float32 or bfloat16 bits. Include after
// <hwy/highway.h>, outside any namespace (Highway's -inl.h convention: the guard toggles per
// target).
//
// Bit for bit the table's entries: the arithmetic is the one MakeNormalizeTable checked on all
// 768 entries (NormalizeAffine::exact), in the same IEEE float32 operations; the bfloat16 bits
// are FloatToBfloat16's rounding (to nearest, ties to even; entries are finite, so no NaN case).
#if defined(DOCFEED_IMAGING_NORMALIZE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef DOCFEED_IMAGING_NORMALIZE_INL_H_
#undef DOCFEED_IMAGING_NORMALIZE_INL_H_
#else
#define DOCFEED_IMAGING_NORMALIZE_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "imaging/normalize.h"

HWY_BEFORE_NAMESPACE();
namespace docfeed::internal {
namespace HWY_NAMESPACE {
namespace normalize_inl {

namespace hn = hwy::HWY_NAMESPACE;

// a / b, rounded once. With hardware FMA: one Newton correction of a * (1 / b), which
// NormalizeAffine::exact guarantees equal to the division for every entry; else the division.
template <class D>
hn::Vec<D> Divide(D d, hn::Vec<D> a, float b, float reciprocal) {
#if HWY_NATIVE_FMA
  const hn::Vec<D> r = hn::Set(d, reciprocal);
  const hn::Vec<D> q = hn::Mul(a, r);
  const hn::Vec<D> e = hn::NegMulAdd(q, hn::Set(d, b), a);
  return hn::MulAdd(e, r, q);
#else
  static_cast<void>(reciprocal);
  return hn::Div(a, hn::Set(d, b));
#endif
}

// Channel c's entries of the uint8 values `v` (promoted to int32 lanes of `df`'s width).
template <class DF, class VI>
hn::Vec<DF> Compute(DF df, VI v, const NormalizeAffine& a, int c) {
  const hn::Vec<DF> x = Divide(df, hn::ConvertTo(df, v), a.divisor[c], a.divisor_reciprocal[c]);
  const hn::Vec<DF> centered = hn::Sub(x, hn::Set(df, a.mean[c]));
  return Divide(df, centered, a.std[c], a.std_reciprocal[c]);
}

// Channel c's entries: computed when the table's arithmetic is exact, else gathered.
template <bool kCompute, class DF, class VI>
hn::Vec<DF> Entries(DF df, VI v, const NormalizeTable& t, int c) {
  if constexpr (kCompute) {
    return Compute(df, v, t.affine, c);
  } else {
    return hn::GatherIndex(df, t.f32[c].data(), v);
  }
}

// Stores float32 entries as T: float, or uint16_t bfloat16 bits (FloatToBfloat16's rounding).
template <typename T, bool kStream, class DF>
void StoreAs(DF df, hn::Vec<DF> f, T* out) {
  if constexpr (sizeof(T) == sizeof(float)) {
    kStream ? hn::Stream(f, df, out) : hn::StoreU(f, df, out);
  } else {
    const hn::RebindToUnsigned<DF> du;
    const hn::RebindToSigned<DF> di;
    const hn::Rebind<uint16_t, DF> d16;
    const auto bits = hn::BitCast(du, f);
    const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
    const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(hn::Set(du, 0x7FFFu), lsb)));
    // 0..0xFFFF in int32 lanes: the saturating demotion is exact.
    const auto half = hn::DemoteTo(d16, hn::BitCast(di, rounded));
    kStream ? hn::Stream(half, d16, out) : hn::StoreU(half, d16, out);
  }
}

}  // namespace normalize_inl
// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace docfeed::internal
HWY_AFTER_NAMESPACE();

#endif  // DOCFEED_IMAGING_NORMALIZE_INL_H_
