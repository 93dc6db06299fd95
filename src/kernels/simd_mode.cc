#include "kernels/simd_mode.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace docfeed::internal {
namespace {

// -1: no override; otherwise a SimdMode value.
std::atomic<int> g_override{-1};

SimdMode ModeFromEnvironment() {
  // getenv is read once, before any thread could call setenv on our behalf.
  const char* value = std::getenv("DOCFEED_SIMD");  // NOLINT(concurrency-mt-unsafe)
  return (value != nullptr && std::strcmp(value, "scalar") == 0) ? SimdMode::kScalar
                                                                 : SimdMode::kAuto;
}

}  // namespace

SimdMode CurrentSimdMode() {
  const int override_mode = g_override.load(std::memory_order_relaxed);
  if (override_mode >= 0) return static_cast<SimdMode>(override_mode);
  static const SimdMode kFromEnvironment = ModeFromEnvironment();
  return kFromEnvironment;
}

void SetSimdModeOverride(SimdMode mode) {
  g_override.store(static_cast<int>(mode), std::memory_order_relaxed);
}

void ClearSimdModeOverride() { g_override.store(-1, std::memory_order_relaxed); }

bool CpuHasAvx2Fma() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool supported = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return supported;
#else
  return false;
#endif
}

bool CpuHasAvx512Vbmi() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool supported =
      CpuHasAvx2Fma() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi");
  return supported;
#else
  return false;
#endif
}

}  // namespace docfeed::internal
