// CompositeRowOnWhite (pdf_document.h): a rendered row merged with white paper.
//
// Poppler's Splash::compositeBackground (poppler 22.12, splash/Splash.cc) merges each channel c
// under alpha a with the paper's 255 as div255((255 - a) * 255 + a * c), where div255(x) is
// (x + (x >> 8) + 0x80) >> 8. Most of a page is paper (a = 0, giving 255) or opaque drawing
// (a = 255, giving c) in long stretches; the row is scanned eight alphas at a time, each stretch
// of them becomes one fill or one copy, and only the eight-pixel runs that mix them take the
// formula, eight channels at a time in 16-bit lanes: v = (255 - a) * 255 + a * c <= 65025 and
// v + (v >> 8) + 0x80 <= 65407, so nothing overflows and the result (at most 255) narrows
// exactly.
//
// The lanes are the compiler's generic vectors (GCC and Clang `vector_size`): SSE2 on any x86-64,
// NEON on Arm, no runtime dispatch. Highway, which the resize kernels use, was tried here first
// and gave the same speed, but linking libhwy.so 1.0.3 costs every process about 5 ms of CPU at
// start (its static initializer measures the timer), a cost the PDF renderer had not had.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "pdf/pdf_document.h"

namespace docfeed::internal {
namespace {

constexpr size_t kRun = 8;  // alphas tested at once; also the lanes of one vector

using U8x8 = uint8_t __attribute__((vector_size(8)));
using U16x8 = uint16_t __attribute__((vector_size(16)));

inline uint8_t OnWhite(uint32_t a, uint32_t c) {
  const uint32_t v = (255 - a) * 255 + a * c;
  return static_cast<uint8_t>((v + (v >> 8) + 0x80) >> 8);
}

inline uint64_t LoadAlphaRun(const uint8_t* alpha) {
  uint64_t run;
  std::memcpy(&run, alpha, sizeof(run));
  return run;
}

// The first x >= from, stepping by kRun within width, whose kRun alphas are not all `value` (one
// byte repeated): where a stretch of paper (0) or of opaque drawing (~0) ends.
inline size_t EndOfUniformRun(const uint8_t* alpha, size_t from, size_t width, uint64_t value) {
  size_t x = from;
  while (x + kRun <= width && LoadAlphaRun(alpha + x) == value) x += kRun;
  return x;
}

// The formula for the kRun pixels (3 * kRun bytes, three vectors) of a mixed run.
void MixedRun(const uint8_t* alpha, const uint8_t* rgb, uint8_t* out) {
  uint8_t alpha3[3 * kRun];  // each pixel's alpha for each of its channels
  for (size_t i = 0; i < kRun; ++i)
    alpha3[3 * i] = alpha3[3 * i + 1] = alpha3[3 * i + 2] = alpha[i];
  for (size_t j = 0; j < 3 * kRun; j += kRun) {
    U8x8 a8;
    U8x8 c8;
    std::memcpy(&a8, alpha3 + j, sizeof(a8));
    std::memcpy(&c8, rgb + j, sizeof(c8));
    const U16x8 a = __builtin_convertvector(a8, U16x8);
    const U16x8 c = __builtin_convertvector(c8, U16x8);
    const U16x8 v = (255 - a) * 255 + a * c;
    const U8x8 merged = __builtin_convertvector((v + (v >> 8) + 0x80) >> 8, U8x8);
    std::memcpy(out + j, &merged, sizeof(merged));
  }
}

}  // namespace

void CompositeRowOnWhite(const uint8_t* rgb, const uint8_t* alpha, size_t width, uint8_t* out) {
  size_t x = 0;
  while (x < width) {
    size_t end = EndOfUniformRun(alpha, x, width, 0);
    if (end > x) {
      std::memset(out + 3 * x, 255, 3 * (end - x));
      x = end;
      continue;
    }
    end = EndOfUniformRun(alpha, x, width, ~uint64_t{0});
    if (end > x) {
      std::memcpy(out + 3 * x, rgb + 3 * x, 3 * (end - x));
      x = end;
      continue;
    }
    if (x + kRun <= width) {
      MixedRun(alpha + x, rgb + 3 * x, out + 3 * x);
      x += kRun;
      continue;
    }
    for (; x < width; ++x) {  // the row's last width % kRun pixels
      for (size_t k = 0; k < 3; ++k) out[3 * x + k] = OnWhite(alpha[x], rgb[3 * x + k]);
    }
  }
}

}  // namespace docfeed::internal
