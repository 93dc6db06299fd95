// Coefficients exactly as Pillow's src/libImaging/Resample.c computes them (precompute_coeffs
// and normalize_coeffs_8bpc, Pillow >= 4.0; see docs/pillow-resample.md sections 1.2-1.3).
// Every expression keeps Pillow's operand order and types: this file is compiled with
// -ffp-contract=off so that no multiply-add is fused, which would change the last bit of a
// weight and, rarely, a rounded coefficient.
#include "kernels/resample_coeffs.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace docfeed::internal {
namespace {

constexpr double kPi = 3.14159265358979323846;  // M_PI

double BoxKernel(double x) { return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0; }

double BilinearKernel(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double HammingKernel(double x) {
  if (x < 0.0) x = -x;
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x = x * kPi;
  // 0.54f and 0.46f are float literals in Pillow; the sum is evaluated in double.
  return std::sin(x) / x * (static_cast<double>(0.54f) + static_cast<double>(0.46f) * std::cos(x));
}

// Keys cubic with a = -0.5, written in Pillow's evaluation order.
double BicubicKernel(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double Sinc(double x) {
  if (x == 0.0) return 1.0;
  x = x * kPi;
  return std::sin(x) / x;
}

double LanczosKernel(double x) {
  if (-3.0 <= x && x < 3.0) return Sinc(x) * Sinc(x / 3);
  return 0.0;
}

using KernelFn = double (*)(double);

KernelFn KernelOf(ResampleFilter filter) {
  switch (filter) {
    case ResampleFilter::kBox:
      return BoxKernel;
    case ResampleFilter::kBilinear:
      return BilinearKernel;
    case ResampleFilter::kHamming:
      return HammingKernel;
    case ResampleFilter::kBicubic:
      return BicubicKernel;
    case ResampleFilter::kLanczos:
      return LanczosKernel;
    case ResampleFilter::kNearest:
      break;
  }
  return nullptr;
}

// Round half away from zero into `bits`-bit fixed point (normalize_coeffs_8bpc; torch rounds
// its int16 weights the same way).
int32_t ToFixedPoint(double w, int32_t bits = kPrecisionBits) {
  const double one = static_cast<double>(1 << bits);
  return w < 0 ? static_cast<int32_t>(-0.5 + w * one) : static_cast<int32_t>(0.5 + w * one);
}

// Computes the weights of output index `o` into `k` (length ksize) and returns {first, taps}.
void ComputeOne(KernelFn kernel, int32_t in_size, float in0, double scale, double support,
                double inv_filterscale, int32_t o, double* k, int32_t ksize, int32_t* bounds) {
  const double center = in0 + (o + 0.5) * scale;
  int32_t first = static_cast<int32_t>(center - support + 0.5);
  if (first < 0) first = 0;
  int32_t last = static_cast<int32_t>(center + support + 0.5);
  if (last > in_size) last = in_size;
  const int32_t taps = last - first;
  double sum = 0.0;
  for (int32_t t = 0; t < taps; ++t) {
    const double w = kernel((t + first - center + 0.5) * inv_filterscale);
    k[t] = w;
    sum += w;
  }
  for (int32_t t = 0; t < taps; ++t) {
    if (sum != 0.0) k[t] /= sum;
  }
  for (int32_t t = taps < 0 ? 0 : taps; t < ksize; ++t) k[t] = 0;
  bounds[0] = first;
  bounds[1] = taps;
}

}  // namespace

int32_t TorchWeightsPrecision(double max_weight) {
  int32_t p = 0;
  for (; p < kPrecisionBits; ++p) {
    const auto next = static_cast<int32_t>(0.5 + max_weight * static_cast<double>(1 << (p + 1)));
    if (next >= (1 << 15)) break;
  }
  return p;
}

double FilterSupport(ResampleFilter filter) {
  switch (filter) {
    case ResampleFilter::kNearest:
      return 0.0;
    case ResampleFilter::kBox:
      return 0.5;
    case ResampleFilter::kBilinear:
    case ResampleFilter::kHamming:
      return 1.0;
    case ResampleFilter::kBicubic:
      return 2.0;
    case ResampleFilter::kLanczos:
      return 3.0;
  }
  return 0.0;
}

namespace {

Status ComputeCoeffsUncached(int32_t in_size, float in0, float in1, int32_t out_size,
                             ResampleFilter filter, CoeffTable* table,
                             ResampleArithmetic arithmetic) {
  const KernelFn kernel = KernelOf(filter);
  if (kernel == nullptr || out_size < 1) {
    return InvalidArgumentError("ComputeCoeffs: filter has no kernel or out_size < 1");
  }
  // The float subtraction happens before the conversion to double, as in Pillow.
  const double scale = static_cast<double>(in1 - in0) / out_size;
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = FilterSupport(filter) * filterscale;
  const double ksize_d = std::ceil(support) * 2 + 1;
  if (ksize_d * out_size > static_cast<double>(std::numeric_limits<int32_t>::max() / 8)) {
    return ResourceExhaustedError("ComputeCoeffs: coefficient table too large for out_size " +
                                  std::to_string(out_size));
  }
  const auto ksize = static_cast<int32_t>(ksize_d);
  table->out_size = out_size;
  table->ksize = ksize;
  table->bounds.assign(2 * static_cast<size_t>(out_size), 0);
  table->weights.assign(static_cast<size_t>(out_size) * static_cast<size_t>(ksize), 0);
  std::vector<double> k(static_cast<size_t>(ksize));
  const double inv_filterscale = 1.0 / filterscale;
  if (arithmetic == ResampleArithmetic::kPillow) {
    for (int32_t o = 0; o < out_size; ++o) {
      ComputeOne(kernel, in_size, in0, scale, support, inv_filterscale, o, k.data(), ksize,
                 &table->bounds[2 * static_cast<size_t>(o)]);
      int32_t* fixed = table->weights.data() + static_cast<size_t>(o) * static_cast<size_t>(ksize);
      for (int32_t t = 0; t < ksize; ++t) fixed[t] = ToFixedPoint(k[static_cast<size_t>(t)]);
    }
    return Status::Ok();
  }
  // torch: all weights of the axis first (the precision depends on the largest), then int16 at
  // that precision. Shifting them up to 22 bits keeps torch's rounding exactly: the accumulator
  // and the rounding bias are both multiplied by 2^(22 - p).
  std::vector<double> all(static_cast<size_t>(out_size) * static_cast<size_t>(ksize));
  double max_weight = 0.0;
  for (int32_t o = 0; o < out_size; ++o) {
    double* row = all.data() + static_cast<size_t>(o) * static_cast<size_t>(ksize);
    ComputeOne(kernel, in_size, in0, scale, support, inv_filterscale, o, row, ksize,
               &table->bounds[2 * static_cast<size_t>(o)]);
    for (int32_t t = 0; t < ksize; ++t) max_weight = std::max(max_weight, row[t]);
  }
  const int32_t p = TorchWeightsPrecision(max_weight);
  for (size_t i = 0; i < all.size(); ++i) {
    table->weights[i] = ToFixedPoint(all[i], p) * (int32_t{1} << (kPrecisionBits - p));
  }
  return Status::Ok();
}

// The tables a thread computed last, by everything they depend on. Pages of one dataset often
// share their geometry (scans of one size at one resolution), and a LANCZOS table costs two
// glibc sin() calls a tap: 3-5 % of an Idefics3 page, whose three resizes need six tables.
struct CoeffKey {
  int32_t in_size = 0, out_size = 0;
  uint32_t in0 = 0, in1 = 0;  // the box's floats by their bits: the same bits, the same table
  ResampleFilter filter = ResampleFilter::kNearest;
  ResampleArithmetic arithmetic = ResampleArithmetic::kPillow;

  bool operator==(const CoeffKey&) const = default;
};

struct CachedCoeffs {
  CoeffKey key;
  uint64_t last_use = 0;  // 0: empty
  CoeffTable table;
};

constexpr size_t kCachedTables = 8;
// Tables of more weights than this (1 MiB of them) are not kept.
constexpr size_t kMaxCachedWeights = size_t{1} << 18;

}  // namespace

Status ComputeCoeffs(int32_t in_size, float in0, float in1, int32_t out_size, ResampleFilter filter,
                     CoeffTable* table, ResampleArithmetic arithmetic) {
  thread_local std::array<CachedCoeffs, kCachedTables> cache;
  thread_local uint64_t uses = 0;
  ++uses;
  const CoeffKey key{.in_size = in_size,
                     .out_size = out_size,
                     .in0 = std::bit_cast<uint32_t>(in0),
                     .in1 = std::bit_cast<uint32_t>(in1),
                     .filter = filter,
                     .arithmetic = arithmetic};
  CachedCoeffs* oldest = &cache[0];
  for (CachedCoeffs& entry : cache) {
    if (entry.last_use != 0 && entry.key == key) {
      entry.last_use = uses;
      *table = entry.table;
      return Status::Ok();
    }
    if (entry.last_use < oldest->last_use) oldest = &entry;
  }
  DOCFEED_RETURN_IF_ERROR(
      ComputeCoeffsUncached(in_size, in0, in1, out_size, filter, table, arithmetic));
  if (table->weights.size() <= kMaxCachedWeights) {
    oldest->key = key;
    oldest->last_use = uses;
    oldest->table = *table;
  }
  return Status::Ok();
}

}  // namespace docfeed::internal
