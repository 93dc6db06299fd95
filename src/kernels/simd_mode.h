// SIMD mode switch for the kernels: DOCFEED_SIMD=scalar forces the scalar reference path.
//
// Like libvips' VIPS_NOVECTOR and simdjson's SIMDJSON_FORCE_IMPLEMENTATION: the environment is
// read once, at the first query. Tests and benchmarks may override it in-process.
// Thread safety: all functions may be called from any thread.
#ifndef DOCFEED_KERNELS_SIMD_MODE_H_
#define DOCFEED_KERNELS_SIMD_MODE_H_

namespace docfeed::internal {

enum class SimdMode {
  kAuto,    // Highway dynamic dispatch to the best target this CPU supports.
  kScalar,  // The scalar reference kernels.
};

// The mode in effect: the override if one is set, else kScalar iff the environment variable
// DOCFEED_SIMD equals "scalar" (read once), else kAuto.
SimdMode CurrentSimdMode();

// Overrides the environment for the whole process (benchmarks, tests). ClearSimdModeOverride()
// returns to the environment's choice.
void SetSimdModeOverride(SimdMode mode);
void ClearSimdModeOverride();

// What this CPU and its OS support, for the hand-written x86-64 paths outside Highway's dispatch
// (src/imaging: Pix2Struct's passes, Qwen2-VL's patch writer), whatever the mode; false on other
// architectures. Read once.
bool CpuHasAvx2Fma();
// AVX-512 F, BW, VL and VBMI (every such CPU also has AVX2 and FMA, which this includes).
bool CpuHasAvx512Vbmi();

}  // namespace docfeed::internal

#endif  // DOCFEED_KERNELS_SIMD_MODE_H_
