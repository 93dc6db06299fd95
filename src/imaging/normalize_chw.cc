// Highway dispatch of NormalizeChw (normalize_chw.h).
//
// Per row: a vector of pixels at a time is deinterleaved (LoadInterleaved3), widened to int32 and
// turned into each channel's entries (normalize-inl.h: the table's arithmetic when it is exact,
// else one gather per channel into its 1 KiB table). Rows whose three output planes are equally
// aligned use streaming stores after a scalar head that reaches a 64-byte boundary; otherwise
// plain unaligned stores. Heads and tails are scalar table reads.
#include "imaging/normalize_chw.h"

#include <cstddef>
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "imaging/normalize_chw.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// foreach_target.h must precede highway.h.
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "imaging/normalize-inl.h"

HWY_BEFORE_NAMESPACE();
namespace docfeed::internal {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using normalize_inl::Entries;
using normalize_inl::StoreAs;

constexpr size_t kStreamAlign = 64;

// The table's entries as T: float32, or bfloat16 bits.
template <typename T>
const T* TableOf(const NormalizeTable& t, int c) {
  if constexpr (sizeof(T) == sizeof(float)) {
    return t.f32[c].data();
  } else {
    return t.bf16[c].data();
  }
}

template <typename T>
void ScalarPixels(const uint8_t* src, int32_t begin, int32_t end, const NormalizeTable& t,
                  T* const dst[3]) {
  const T* const tables[3] = {TableOf<T>(t, 0), TableOf<T>(t, 1), TableOf<T>(t, 2)};
  for (int32_t x = begin; x < end; ++x) {
    const uint8_t* px = src + 3 * static_cast<ptrdiff_t>(x);
    dst[0][x] = tables[0][px[0]];
    dst[1][x] = tables[1][px[1]];
    dst[2][x] = tables[2][px[2]];
  }
}

// Pixels [begin, end) with end - begin a multiple of the lane count.
template <typename T, bool kCompute, bool kStream>
void VectorPixels(const uint8_t* src, int32_t begin, int32_t end, const NormalizeTable& t,
                  T* const dst[3]) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const auto n = static_cast<int32_t>(hn::Lanes(df));
  for (int32_t x = begin; x < end; x += n) {
    hn::Vec<decltype(d8)> r, g, b;
    hn::LoadInterleaved3(d8, src + 3 * static_cast<ptrdiff_t>(x), r, g, b);
    StoreAs<T, kStream>(df, Entries<kCompute>(df, hn::PromoteTo(di, r), t, 0), dst[0] + x);
    StoreAs<T, kStream>(df, Entries<kCompute>(df, hn::PromoteTo(di, g), t, 1), dst[1] + x);
    StoreAs<T, kStream>(df, Entries<kCompute>(df, hn::PromoteTo(di, b), t, 2), dst[2] + x);
  }
}

template <typename T, bool kCompute>
void Row(const uint8_t* src, int32_t width, const NormalizeTable& t, T* const dst[3]) {
  const auto n = static_cast<int32_t>(hn::Lanes(hn::ScalableTag<float>()));
  const auto addr = [](const T* p) { return reinterpret_cast<uintptr_t>(p); };
  const size_t mis = addr(dst[0]) % kStreamAlign;
  // Whole vectors fill whole 64-byte lines from an aligned start; a partial vector's Stream
  // would store 16 bytes.
  const size_t vector_bytes = n * sizeof(T);
  const bool stream = vector_bytes >= 16 && kStreamAlign % vector_bytes == 0 &&
                      addr(dst[0]) % sizeof(T) == 0 && addr(dst[1]) % kStreamAlign == mis &&
                      addr(dst[2]) % kStreamAlign == mis;
  int32_t head = 0;
  if (stream && mis != 0) head = static_cast<int32_t>((kStreamAlign - mis) / sizeof(T));
  if (head > width) head = width;
  ScalarPixels(src, 0, head, t, dst);
  const int32_t body_end = head + (width - head) / n * n;
  if (stream) {
    VectorPixels<T, kCompute, true>(src, head, body_end, t, dst);
  } else {
    VectorPixels<T, kCompute, false>(src, head, body_end, t, dst);
  }
  ScalarPixels(src, body_end, width, t, dst);
}

template <typename T, bool kCompute>
void Rows(const ImageView& image, const NormalizeTable& t, T* out, size_t plane,
          size_t row_stride) {
  for (int32_t y = 0; y < image.height; ++y) {
    const size_t offset = static_cast<size_t>(y) * row_stride;
    T* const dst[3] = {out + offset, out + plane + offset, out + 2 * plane + offset};
    Row<T, kCompute>(image.data + y * image.stride_bytes, image.width, t, dst);
  }
  hwy::FlushStream();
}

}  // namespace

void NormalizeChwImpl(const ImageView& image, const NormalizeTable& t, DType dtype, void* out,
                      size_t plane, size_t row_stride) {
  if (dtype == DType::kFloat32) {
    auto* f = static_cast<float*>(out);
    t.affine.exact ? Rows<float, true>(image, t, f, plane, row_stride)
                   : Rows<float, false>(image, t, f, plane, row_stride);
  } else {
    auto* h = static_cast<uint16_t*>(out);
    t.affine.exact ? Rows<uint16_t, true>(image, t, h, plane, row_stride)
                   : Rows<uint16_t, false>(image, t, h, plane, row_stride);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace docfeed::internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace docfeed::internal {

HWY_EXPORT(NormalizeChwImpl);

void NormalizeChw(const ImageView& image, const NormalizeTable& table, DType dtype, void* out) {
  const auto width = static_cast<size_t>(image.width);
  HWY_DYNAMIC_DISPATCH(NormalizeChwImpl)
  (image, table, dtype, out, width * static_cast<size_t>(image.height), width);
}

void NormalizeChwStrided(const ImageView& image, const NormalizeTable& table, DType dtype,
                         void* out, size_t plane_stride, size_t row_stride) {
  HWY_DYNAMIC_DISPATCH(NormalizeChwImpl)(image, table, dtype, out, plane_stride, row_stride);
}

}  // namespace docfeed::internal
#endif  // HWY_ONCE
