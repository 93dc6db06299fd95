// A small, fully specified pseudo-random generator for the synthetic-document generator.
//
// Every draw is defined here (xoshiro256** seeded through SplitMix64, integer ranges by
// multiply-shift, reals from the top 53 bits), never through <random>'s distributions, whose
// output is implementation-defined. So a (seed, document index) pair gives the same document on
// every standard library and for every thread count.
//
// Thread safety: an Rng is a plain value; give each document its own.
#ifndef DOCFEED_SYNTH_RNG_H_
#define DOCFEED_SYNTH_RNG_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/check.h"
#include "base/random.h"

namespace docfeed::internal {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  // The generator of document `index` of a run with `seed`: independent streams per document,
  // so documents can be rendered in any order on any thread.
  static Rng ForDocument(uint64_t seed, uint64_t index) {
    // index * odd constant is injective, so one seed never gives two documents one stream.
    uint64_t s = seed;
    return Rng(SplitMix64(s) ^ (index * 0xD1B54A32D192ED03ull));
  }

  // xoshiro256** (base/random.h).
  uint64_t Next() { return engine_.Next(); }

  // Uniform integer in [lo, hi]. REQUIRES: lo <= hi.
  int64_t Int(int64_t lo, int64_t hi) {
    DOCFEED_DCHECK(lo <= hi);
    // Lemire's multiply-shift; the bias (< 2^-32 for our ranges) does not matter here.
    const Uint128 span = static_cast<Uint128>(static_cast<uint64_t>(hi - lo)) + 1;
    return lo + static_cast<int64_t>((span * Next()) >> 64);
  }
  int IntIn(int lo, int hi) { return static_cast<int>(Int(lo, hi)); }

  // Uniform real in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  double Real(double lo, double hi) { return lo + (hi - lo) * Unit(); }
  bool Chance(double p) { return Unit() < p; }

  template <typename T>
  const T& Pick(std::span<const T> items) {
    DOCFEED_CHECK(!items.empty());
    return items[static_cast<size_t>(Int(0, static_cast<int64_t>(items.size()) - 1))];
  }

  // Index drawn with the given (non-negative, not all zero) weights.
  size_t Weighted(std::span<const double> weights) {
    double total = 0;
    for (double w : weights) total += w;
    double x = Unit() * total;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (x < weights[i]) return i;
      x -= weights[i];
    }
    return weights.size() - 1;
  }

 private:
  __extension__ typedef unsigned __int128 Uint128;
  Xoshiro256 engine_;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_SYNTH_RNG_H_
