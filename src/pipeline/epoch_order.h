// The order samples are served in: one global permutation of sample ids per epoch, cut into
// steps of world_size x batch_size positions, each rank taking its own batch_size of every step.
//
// Everything is a pure function of (num_samples, seed, epoch, shuffle) and the cut parameters,
// computed with integer arithmetic only, so the order is the same on every machine and for every
// thread count. Positions are global: after `k` steps every rank has consumed k x world_size x
// batch_size positions of the epoch, so a resume position saved by any rank is valid for all, and
// also for a different world size (the remaining positions are simply re-divided).
//
//   step k, rank r, slot j  ->  position  start + (k * world_size + r) * batch_size + j
//   position p              ->  sample    permutation[p mod num_samples]
//
// `p >= num_samples` only happens with Remainder::kWrap, which fills the last step by wrapping to
// the start of the permutation (as torch's DistributedSampler pads), so every rank gets the same
// number of full batches.
//
// Thread safety: immutable after construction; share freely.
#ifndef DOCFEED_PIPELINE_EPOCH_ORDER_H_
#define DOCFEED_PIPELINE_EPOCH_ORDER_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "docfeed/loader.h"
#include "docfeed/status.h"

namespace docfeed::internal {

// What happens to the last positions of an epoch that do not fill a whole step.
using docfeed::Remainder;  // docfeed/loader.h

using docfeed::ParseRemainder;  // docfeed/loader.h
using docfeed::RemainderName;

struct EpochOrderOptions {
  uint64_t num_samples = 0;
  uint64_t seed = 0;
  uint64_t epoch = 0;
  bool shuffle = true;
  uint32_t batch_size = 1;
  uint32_t rank = 0;
  uint32_t world_size = 1;
  Remainder remainder = Remainder::kDrop;
  uint64_t start = 0;  // global position to resume from, 0..num_samples
};

inline constexpr uint64_t kMaxSamples = uint64_t{1} << 32;

// The permutation of 0..n-1 for (seed, epoch): Fisher-Yates (Durstenfeld) driven by the same
// seeded xoshiro256** as the padding (imaging/donut.h PadRng) on a stream no sample can own,
// with Lemire's unbiased bounded draws. Identity when !shuffle. REQUIRES: n <= kMaxSamples.
std::vector<uint32_t> EpochPermutation(uint64_t n, uint64_t seed, uint64_t epoch, bool shuffle);

class EpochOrder {
 public:
  // Errors: InvalidArgument for batch_size 0, world_size 0, rank >= world_size, start past the
  // end, kPartial with world_size > 1, or num_samples above kMaxSamples.
  static Result<EpochOrder> Create(const EpochOrderOptions& options);

  const EpochOrderOptions& options() const { return options_; }
  // Batches this rank gets between `start` and the end of the epoch.
  uint64_t num_batches() const { return num_batches_; }
  // Samples in batch k: batch_size, except the last one under kPartial.
  // REQUIRES: k < num_batches().
  uint32_t BatchSize(uint64_t k) const;
  // The global position of slot j of batch k (may exceed num_samples under kWrap).
  // REQUIRES: k < num_batches(), j < BatchSize(k).
  uint64_t Position(uint64_t k, uint32_t j) const;
  // The sample at a global position (taken modulo num_samples). REQUIRES: num_samples > 0.
  uint64_t SampleAt(uint64_t position) const;
  // The resume position once batch k has been consumed by every rank: the start of step k + 1,
  // or num_samples after the last batch (the epoch is over, also under kDrop: the tail that
  // did not fill a step is dropped for good, not served by a resume with smaller steps).
  uint64_t PositionAfter(uint64_t k) const;

 private:
  EpochOrderOptions options_;
  uint64_t num_batches_ = 0;
  uint32_t last_batch_size_ = 0;
  std::vector<uint32_t> permutation_;  // empty when !shuffle (identity)
};

}  // namespace docfeed::internal

#endif  // DOCFEED_PIPELINE_EPOCH_ORDER_H_
