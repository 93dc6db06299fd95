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

}  // namespace docfeed::internal
