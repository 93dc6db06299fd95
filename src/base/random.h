// The one pseudo-random engine docfeed draws from: xoshiro256** (Blackman and Vigna, 2018,
// https://prng.di.unimi.it/xoshiro256starstar.c) seeded through SplitMix64. Everything is integer
// arithmetic defined here, never <random>'s implementation-defined distributions, so a seed gives
// the same stream on every machine and standard library. The shuffles, the random padding
// (imaging/donut.h PadRng) and the synthetic documents (synth/rng.h) are built on it.
//
// Thread safety: a plain value; give each stream its own.
#ifndef DOCFEED_BASE_RANDOM_H_
#define DOCFEED_BASE_RANDOM_H_

#include <array>
#include <cstdint>

namespace docfeed::internal {

// SplitMix64 (Steele, Lea and Flood, 2014): advances `x` and returns a well-mixed 64-bit value.
// Also a good hash for deriving independent seeds.
inline uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Xoshiro256 {
 public:
  // The four state words are successive SplitMix64 outputs from `seed`.
  explicit Xoshiro256(uint64_t seed) {
    for (uint64_t& s : state_) s = SplitMix64(seed);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = Rotl(state_[3], 45);
    return result;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<uint64_t, 4> state_;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_BASE_RANDOM_H_
