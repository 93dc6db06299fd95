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

Result<ElasticMode> ParseElasticMode(std::string_view name) {
  if (name == "same") return ElasticMode::kSame;
  if (name == "global_batch") return ElasticMode::kGlobalBatch;
  if (name == "rank_batch") return ElasticMode::kRankBatch;
  return InvalidArgumentError("elastic must be same, global_batch or rank_batch, not \"" +
                              std::string(name) + "\"");
}

std::string_view ElasticModeName(ElasticMode mode) {
  switch (mode) {
    case ElasticMode::kSame:
      return "same";
    case ElasticMode::kGlobalBatch:
      return "global_batch";
    case ElasticMode::kRankBatch:
      return "rank_batch";
  }
  return "unknown";
}

Result<ElasticMode> ResolveElasticMode(const LoaderState& saved, uint32_t world_size,
                                       uint32_t batch_size, std::optional<ElasticMode> required) {
  const uint64_t w = saved.world_size;
  const uint64_t b = saved.batch_size;
  if (w == 0 || b == 0) {
    if (required && *required != ElasticMode::kSame) {
      return InvalidArgumentError(
          "the saved loader state does not record its world_size and batch_size, so elastic \"" +
          std::string(ElasticModeName(*required)) + "\" cannot be checked");
    }
    return ElasticMode::kSame;
  }
  if (w == world_size && b == batch_size) return ElasticMode::kSame;
  const uint64_t global = w * b;
  const bool keeps_global = global == uint64_t{world_size} * batch_size;
  const bool keeps_rank = b == batch_size;
  if (!required) {
    if (keeps_global) return ElasticMode::kGlobalBatch;
    if (keeps_rank) return ElasticMode::kRankBatch;
  } else if ((*required == ElasticMode::kGlobalBatch && keeps_global) ||
             (*required == ElasticMode::kRankBatch && keeps_rank)) {
    return *required;
  }
  const std::string shapes = "the saved loader state was taken with world_size " +
                             std::to_string(w) + " and batch_size " + std::to_string(b) +
                             " (global batch " + std::to_string(global) +
                             "); this loader has world_size " + std::to_string(world_size) +
                             " and batch_size " + std::to_string(batch_size) + " (global batch " +
                             std::to_string(uint64_t{world_size} * batch_size) + ")";
  const std::string global_fix =
      global % world_size == 0
          ? "batch_size " + std::to_string(global / world_size) + " keeps the global batch"
          : "no batch_size keeps the global batch " + std::to_string(global) + " over " +
                std::to_string(world_size) + " ranks";
  const std::string rank_fix = "batch_size " + std::to_string(b) + " keeps the per-rank batch";
  if (!required) {
    return InvalidArgumentError(shapes +
                                ": an elastic resume keeps either the global batch "
                                "(world_size x batch_size) or the per-rank batch_size; " +
                                global_fix + ", " + rank_fix);
  }
  switch (*required) {
    case ElasticMode::kSame:
      return InvalidArgumentError(shapes +
                                  ": elastic \"same\" requires the same world_size and batch_size");
    case ElasticMode::kGlobalBatch:
      return InvalidArgumentError(
          shapes + ": elastic \"global_batch\" requires world_size x batch_size to stay " +
          std::to_string(global) + "; " + global_fix);
    case ElasticMode::kRankBatch:
      break;
  }
  return InvalidArgumentError(shapes + ": elastic \"rank_batch\" requires batch_size " +
                              std::to_string(b) + "; " + rank_fix);
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
  // After the last batch the epoch is over, whatever the remainder: under kDrop the positions
  // that did not fill a step are dropped for good, so a resume by another world size (whose
  // steps they might fill) does not serve them.
  if (k + 1 >= num_batches_) return o.num_samples;
  const uint64_t next = o.start + (k + 1) * o.world_size * o.batch_size;
  return next < o.num_samples ? next : o.num_samples;
}

}  // namespace docfeed::internal
