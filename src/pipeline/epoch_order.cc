#include "pipeline/epoch_order.h"

#include <numeric>
#include <string>

#include "imaging/donut.h"

// The public parsers of docfeed/loader.h.
namespace docfeed {

Result<Remainder> ParseRemainder(std::string_view name) {
  if (name == "drop") return Remainder::kDrop;
  if (name == "wrap") return Remainder::kWrap;
  if (name == "partial") return Remainder::kPartial;
  return InvalidArgumentError("remainder must be drop, wrap or partial, not \"" +
                              std::string(name) + "\"");
}

std::string_view RemainderName(Remainder remainder) {
  switch (remainder) {
    case Remainder::kDrop:
      return "drop";
    case Remainder::kWrap:
      return "wrap";
    case Remainder::kPartial:
      return "partial";
  }
  return "unknown";
}

}  // namespace docfeed

namespace docfeed::internal {
namespace {

// The permutation's random stream: a "sample index" no sample has (ids are below 2^32), so it
// never coincides with a padding stream of the same (seed, epoch).
constexpr uint64_t kPermutationStream = ~uint64_t{0};

uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

}  // namespace

std::vector<uint32_t> EpochPermutation(uint64_t n, uint64_t seed, uint64_t epoch, bool shuffle) {
  std::vector<uint32_t> perm(n);
  std::iota(perm.begin(), perm.end(), uint32_t{0});
  if (!shuffle || n < 2) return perm;
  PadRng rng = PadRng::ForSample(seed, epoch, kPermutationStream);
  for (uint64_t i = n - 1; i > 0; --i) {
    // i < 2^32, so the draw range 0..i fits the generator's 32-bit bounded draw.
    const uint64_t j = rng.UniformInclusive(static_cast<uint32_t>(i));
    std::swap(perm[i], perm[j]);
  }
  return perm;
}

Result<EpochOrder> EpochOrder::Create(const EpochOrderOptions& options) {
  const EpochOrderOptions& o = options;
  if (o.batch_size == 0) return InvalidArgumentError("batch_size must be at least 1");
  if (o.world_size == 0) return InvalidArgumentError("world_size must be at least 1");
  if (o.rank >= o.world_size) {
    return InvalidArgumentError("rank " + std::to_string(o.rank) + " is not below world_size " +
                                std::to_string(o.world_size));
  }
  if (o.num_samples > kMaxSamples) {
    return InvalidArgumentError(std::to_string(o.num_samples) + " samples: at most 2^32");
  }
  if (o.start > o.num_samples) {
    return InvalidArgumentError("resume position " + std::to_string(o.start) +
                                " is past the end of the epoch (" + std::to_string(o.num_samples) +
                                " samples)");
  }
  if (o.remainder == Remainder::kPartial && o.world_size > 1) {
    return InvalidArgumentError(
        "remainder \"partial\" would give ranks unequal batch counts; use drop or wrap with "
        "world_size > 1");
  }
  EpochOrder order;
  order.options_ = o;
  const uint64_t remaining = o.num_samples - o.start;
  const uint64_t step = uint64_t{o.world_size} * o.batch_size;
  order.last_batch_size_ = o.batch_size;
  switch (o.remainder) {
    case Remainder::kDrop:
      order.num_batches_ = remaining / step;
      break;
    case Remainder::kWrap:
      order.num_batches_ = CeilDiv(remaining, step);
      break;
    case Remainder::kPartial:
      order.num_batches_ = CeilDiv(remaining, o.batch_size);
      if (remaining % o.batch_size != 0) {
        order.last_batch_size_ = static_cast<uint32_t>(remaining % o.batch_size);
      }
      break;
  }
  if (o.shuffle) order.permutation_ = EpochPermutation(o.num_samples, o.seed, o.epoch, true);
  return order;
}

uint32_t EpochOrder::BatchSize(uint64_t k) const {
  return k + 1 == num_batches_ ? last_batch_size_ : options_.batch_size;
}

uint64_t EpochOrder::Position(uint64_t k, uint32_t j) const {
  const EpochOrderOptions& o = options_;
  return o.start + (k * o.world_size + o.rank) * o.batch_size + j;
}

uint64_t EpochOrder::SampleAt(uint64_t position) const {
  const uint64_t p = position % options_.num_samples;
  return permutation_.empty() ? p : permutation_[p];
}

uint64_t EpochOrder::PositionAfter(uint64_t k) const {
  const EpochOrderOptions& o = options_;
  const uint64_t next = o.start + (k + 1) * o.world_size * o.batch_size;
  return next < o.num_samples ? next : o.num_samples;
}

}  // namespace docfeed::internal
