// Resampling coefficient tables: Pillow's precompute_coeffs() + normalize_coeffs_8bpc().
//
// One table serves one axis of one resize. For each output index it holds the first source
// index, the number of taps and the 22-bit fixed-point weights that the horizontal and vertical
// passes (resample.h) multiply with. Computing the weights in the same double-precision order as
// Pillow's Resample.c is what makes the output bit-identical; see README.md.
#ifndef DOCFEED_KERNELS_RESAMPLE_COEFFS_H_
#define DOCFEED_KERNELS_RESAMPLE_COEFFS_H_

#include <cstdint>
#include <vector>

#include "docfeed/status.h"
#include "kernels/resize.h"

namespace docfeed::internal {

// Fixed-point precision of 8-bit resampling: 32 - 8 - 2 bits (Pillow's PRECISION_BITS).
inline constexpr int kPrecisionBits = 22;
// Added to every accumulator so that the final `>> kPrecisionBits` rounds half up.
inline constexpr int32_t kRoundingBias = int32_t{1} << (kPrecisionBits - 1);

// Weights for one axis. Output index o reads source indices
// [first(o), first(o) + taps(o)) with weights weights(o)[0 .. taps(o)).
struct CoeffTable {
  int32_t out_size = 0;
  int32_t ksize = 0;             // Row length of `weights`: ceil(support) * 2 + 1.
  std::vector<int32_t> bounds;   // 2 * out_size: first source index, number of taps.
  std::vector<int32_t> weights;  // out_size * ksize fixed-point weights; unused slots are 0.

  int32_t first(int32_t o) const { return bounds[2 * static_cast<size_t>(o)]; }
  int32_t taps(int32_t o) const { return bounds[2 * static_cast<size_t>(o) + 1]; }
  const int32_t* row(int32_t o) const {
    return weights.data() + static_cast<size_t>(o) * static_cast<size_t>(ksize);
  }
};

// Base support of a filter (Pillow's `struct filter` support; NEAREST has none).
double FilterSupport(ResampleFilter filter);

// Fills `table` for resampling source range [in0, in1) of an axis with `in_size` pixels onto
// `out_size` pixels. in0/in1 are float32 because Pillow parses the box as C floats.
// REQUIRES: filter != kNearest, out_size >= 1, 0 <= in0 < in1 <= in_size.
// Errors: ResourceExhausted if the table would not fit in int32 indexing.
// With kTorchUint8 (resize.h) the weights are torch's int16 ones, shifted up to kPrecisionBits.
Status ComputeCoeffs(int32_t in_size, float in0, float in1, int32_t out_size, ResampleFilter filter,
                     CoeffTable* table,
                     ResampleArithmetic arithmetic = ResampleArithmetic::kPillow);

// torch's weights_precision for an axis whose largest normalized weight is `max_weight`: the
// largest p < 22 with int(0.5 + max_weight * 2^(p + 1)) < 2^15 stopping the search
// (_compute_index_ranges_int16_weights).
int32_t TorchWeightsPrecision(double max_weight);

}  // namespace docfeed::internal

#endif  // DOCFEED_KERNELS_RESAMPLE_COEFFS_H_
