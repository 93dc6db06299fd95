// Highway dispatch of NormalizeChwFloat32 (normalize_chw.h).
//
// Per row: 16 pixels at a time are deinterleaved (LoadInterleaved3), widened to int32 indices and
// looked up with one gather per channel into its table (1 KiB, L1-resident). Rows whose three
// output planes are equally aligned use streaming stores after a scalar head that reaches a
// 64-byte boundary; otherwise plain unaligned stores. Heads and tails are scalar table reads.
#include "imaging/normalize_chw.h"

#include <cstddef>
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "imaging/normalize_chw.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// foreach_target.h must precede highway.h.
#include <hwy/cache_control.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace docfeed::internal {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

constexpr size_t kStreamAlign = 64;

void ScalarPixels(const uint8_t* src, int32_t begin, int32_t end, const float* const tables[3],
                  float* const dst[3]) {
  for (int32_t x = begin; x < end; ++x) {
    const uint8_t* px = src + 3 * static_cast<ptrdiff_t>(x);
    dst[0][x] = tables[0][px[0]];
    dst[1][x] = tables[1][px[1]];
    dst[2][x] = tables[2][px[2]];
  }
}

// Pixels [begin, end) with end - begin a multiple of the lane count.
template <bool kStream>
void VectorPixels(const uint8_t* src, int32_t begin, int32_t end, const float* const tables[3],
                  float* const dst[3]) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const auto n = static_cast<int32_t>(hn::Lanes(df));
  for (int32_t x = begin; x < end; x += n) {
    hn::Vec<decltype(d8)> r, g, b;
    hn::LoadInterleaved3(d8, src + 3 * static_cast<ptrdiff_t>(x), r, g, b);
    const auto vr = hn::GatherIndex(df, tables[0], hn::PromoteTo(di, r));
    const auto vg = hn::GatherIndex(df, tables[1], hn::PromoteTo(di, g));
    const auto vb = hn::GatherIndex(df, tables[2], hn::PromoteTo(di, b));
    if constexpr (kStream) {
      hn::Stream(vr, df, dst[0] + x);
      hn::Stream(vg, df, dst[1] + x);
      hn::Stream(vb, df, dst[2] + x);
    } else {
      hn::StoreU(vr, df, dst[0] + x);
      hn::StoreU(vg, df, dst[1] + x);
      hn::StoreU(vb, df, dst[2] + x);
    }
  }
}

void Row(const uint8_t* src, int32_t width, const float* const tables[3], float* const dst[3],
         bool may_stream) {
  const auto n = static_cast<int32_t>(hn::Lanes(hn::ScalableTag<float>()));
  const auto addr = [](const float* p) { return reinterpret_cast<uintptr_t>(p); };
  const size_t mis = addr(dst[0]) % kStreamAlign;
  const bool stream = may_stream && n * sizeof(float) == kStreamAlign &&
                      addr(dst[0]) % sizeof(float) == 0 && addr(dst[1]) % kStreamAlign == mis &&
                      addr(dst[2]) % kStreamAlign == mis;
  int32_t head = 0;
  if (stream && mis != 0) head = static_cast<int32_t>((kStreamAlign - mis) / sizeof(float));
  if (head > width) head = width;
  ScalarPixels(src, 0, head, tables, dst);
  const int32_t body_end = head + (width - head) / n * n;
  if (stream) {
    VectorPixels<true>(src, head, body_end, tables, dst);
  } else {
    VectorPixels<false>(src, head, body_end, tables, dst);
  }
  ScalarPixels(src, body_end, width, tables, dst);
}

}  // namespace

void NormalizeChwFloat32Impl(const ImageView& image, const float* const tables[3], float* out,
                             size_t plane, size_t row_stride, bool may_stream) {
  for (int32_t y = 0; y < image.height; ++y) {
    const size_t offset = static_cast<size_t>(y) * row_stride;
    float* const dst[3] = {out + offset, out + plane + offset, out + 2 * plane + offset};
    Row(image.data + y * image.stride_bytes, image.width, tables, dst, may_stream);
  }
  hwy::FlushStream();
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace docfeed::internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace docfeed::internal {

HWY_EXPORT(NormalizeChwFloat32Impl);

void NormalizeChwFloat32(const ImageView& image, const float* const tables[3], float* out) {
  const auto width = static_cast<size_t>(image.width);
  HWY_DYNAMIC_DISPATCH(NormalizeChwFloat32Impl)
  (image, tables, out, width * static_cast<size_t>(image.height), width, /*may_stream=*/true);
}

void NormalizeChwFloat32Strided(const ImageView& image, const float* const tables[3], float* out,
                                size_t plane_stride, size_t row_stride, Stores stores) {
  HWY_DYNAMIC_DISPATCH(NormalizeChwFloat32Impl)
  (image, tables, out, plane_stride, row_stride, stores == Stores::kStreamWhereAligned);
}

}  // namespace docfeed::internal
#endif  // HWY_ONCE
