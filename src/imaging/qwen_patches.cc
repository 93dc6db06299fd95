// Highway dispatch of QwenPatchifySimd (qwen_patches.h).
#include "imaging/qwen_patches.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "imaging/qwen_patches.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// foreach_target.h must precede highway.h.
#include <hwy/aligned_allocator.h>
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

// A merged block is assembled here (the defaults need 18,816 bytes in float32).
constexpr size_t kStageBytes = 64 * 1024;
constexpr size_t kStreamAlign = 64;

// At most 8 lanes: a 14-pixel patch row must hold one vector.
using FloatTag = hn::CappedTag<float, 8>;

struct Geometry {
  int32_t p, m, frames;
  size_t plane;      // p * p values: one channel of one frame
  size_t patch_dim;  // 3 * frames * plane
};

// One patch's rows into `st` (channel, frame, row, column), from the page's pixel (x0, y0).
template <typename T, bool kCompute>
void Patch(const ImageView& page, int32_t x0, int32_t y0, const Geometry& g,
           const NormalizeTable& t, T* st) {
  const FloatTag df;
  const hn::RebindToSigned<FloatTag> di;
  const hn::Rebind<uint8_t, FloatTag> d8;
  const auto n = static_cast<int32_t>(hn::Lanes(df));
  const int32_t ch = page.channels;
  for (int32_t y = 0; y < g.p; ++y) {
    const uint8_t* row = page.data + static_cast<ptrdiff_t>(y0 + y) * page.stride_bytes +
                         static_cast<ptrdiff_t>(x0) * ch;
    T* at = st + static_cast<size_t>(y) * static_cast<size_t>(g.p);
    // The last vector starts at p - n and rewrites values the one before wrote (the same ones).
    for (int32_t xs = 0;; xs += n) {
      if (xs > g.p - n) xs = g.p - n;
      hn::Vec<decltype(d8)> v[3];
      if (ch == 3) {
        hn::LoadInterleaved3(d8, row + 3 * static_cast<ptrdiff_t>(xs), v[0], v[1], v[2]);
      } else {
        v[0] = v[1] = v[2] = hn::LoadU(d8, row + xs);  // gray: every channel reads it
      }
      for (int c = 0; c < 3; ++c) {
        const auto values = Entries<kCompute>(df, hn::PromoteTo(di, v[c]), t, c);
        T* channel = at + static_cast<size_t>(c * g.frames) * g.plane + xs;
        for (int32_t f = 0; f < g.frames; ++f) {
          StoreAs<T, false>(df, values, channel + static_cast<size_t>(f) * g.plane);
        }
      }
      if (xs == g.p - n) break;
    }
  }
}

// The block's bytes to `dst`: streaming stores when it starts on a 64-byte boundary.
void CopyOut(const uint8_t* stage, size_t bytes, uint8_t* dst) {
  const hn::ScalableTag<uint8_t> d8;
  const size_t n = hn::Lanes(d8);
  if (reinterpret_cast<uintptr_t>(dst) % kStreamAlign != 0 || bytes % n != 0 || n < 16) {
    std::memcpy(dst, stage, bytes);
    return;
  }
  for (size_t i = 0; i < bytes; i += n) hn::Stream(hn::Load(d8, stage + i), d8, dst + i);
}

template <typename T, bool kCompute>
void Blocks(const ImageView& page, const Geometry& g, const NormalizeTable& t, T* out, T* stage) {
  const int32_t merged = g.p * g.m;
  const size_t block = static_cast<size_t>(g.m * g.m) * g.patch_dim;
  for (int32_t by = 0; by < page.height; by += merged) {
    for (int32_t bx = 0; bx < page.width; bx += merged) {
      T* st = stage;
      for (int32_t mh = 0; mh < g.m; ++mh) {
        for (int32_t mw = 0; mw < g.m; ++mw, st += g.patch_dim) {
          Patch<T, kCompute>(page, bx + mw * g.p, by + mh * g.p, g, t, st);
        }
      }
      CopyOut(reinterpret_cast<const uint8_t*>(stage), block * sizeof(T),
              reinterpret_cast<uint8_t*>(out));
      out += block;
    }
  }
  hwy::FlushStream();
}

template <typename T>
bool Run(const ImageView& page, const Geometry& g, const NormalizeTable& t, void* out) {
  const size_t block_bytes = static_cast<size_t>(g.m * g.m) * g.patch_dim * sizeof(T);
  if (g.p < static_cast<int32_t>(hn::Lanes(FloatTag())) || block_bytes > kStageBytes) {
    return false;
  }
  HWY_ALIGN uint8_t stage[kStageBytes];
  T* st = reinterpret_cast<T*>(stage);
  T* dst = static_cast<T*>(out);
  t.affine.exact ? Blocks<T, true>(page, g, t, dst, st) : Blocks<T, false>(page, g, t, dst, st);
  return true;
}

}  // namespace

bool QwenPatchifyImpl(const ImageView& page, int32_t patch_size, int32_t merge_size, int32_t frames,
                      const NormalizeTable& t, DType dtype, void* out) {
  const auto plane = static_cast<size_t>(patch_size) * static_cast<size_t>(patch_size);
  const Geometry g{patch_size, merge_size, frames, plane, 3 * static_cast<size_t>(frames) * plane};
  if (dtype == DType::kFloat32) return Run<float>(page, g, t, out);
  if (dtype == DType::kBfloat16) return Run<uint16_t>(page, g, t, out);
  return false;
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace docfeed::internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace docfeed::internal {

HWY_EXPORT(QwenPatchifyImpl);

bool QwenPatchifySimd(const ImageView& page, int32_t patch_size, int32_t merge_size,
                      int32_t temporal_patch_size, const NormalizeTable& table, DType dtype,
                      void* out) {
  return HWY_DYNAMIC_DISPATCH(QwenPatchifyImpl)(page, patch_size, merge_size, temporal_patch_size,
                                                table, dtype, out);
}

}  // namespace docfeed::internal
#endif  // HWY_ONCE
