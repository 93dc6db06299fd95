#include "pipeline/epoch_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace docfeed::internal {
namespace {

EpochOrderOptions Opts(uint64_t n, uint32_t batch, uint32_t rank = 0, uint32_t world = 1,
                       Remainder rem = Remainder::kDrop, uint64_t start = 0) {
  EpochOrderOptions o;
  o.num_samples = n;
  o.seed = 7;
  o.epoch = 3;
  o.batch_size = batch;
  o.rank = rank;
  o.world_size = world;
  o.remainder = rem;
  o.start = start;
  return o;
}

// Every batch of one rank as sample ids, in order.
std::vector<std::vector<uint64_t>> Batches(const EpochOrderOptions& o) {
  Result<EpochOrder> order = EpochOrder::Create(o);
  EXPECT_TRUE(order.ok()) << order.status().ToString();
  std::vector<std::vector<uint64_t>> out;
  for (uint64_t k = 0; k < order->num_batches(); ++k) {
    std::vector<uint64_t> batch;
    for (uint32_t j = 0; j < order->BatchSize(k); ++j) {
      batch.push_back(order->SampleAt(order->Position(k, j)));
    }
    out.push_back(batch);
  }
  return out;
}

TEST(EpochPermutation, IsAPermutationAndDependsOnSeedAndEpoch) {
  for (uint64_t n : {0u, 1u, 2u, 3u, 10u, 1000u, 4097u}) {
    std::vector<uint32_t> p = EpochPermutation(n, 1, 0, true);
    std::vector<uint32_t> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i) << "n=" << n;
  }
  const auto a = EpochPermutation(1000, 1, 0, true);
  EXPECT_EQ(a, EpochPermutation(1000, 1, 0, true));  // same seed, same order
  EXPECT_NE(a, EpochPermutation(1000, 1, 1, true));  // another epoch
  EXPECT_NE(a, EpochPermutation(1000, 2, 0, true));  // another seed
  std::vector<uint32_t> identity(1000);
  for (uint32_t i = 0; i < 1000; ++i) identity[i] = i;
  EXPECT_NE(a, identity);
  EXPECT_EQ(EpochPermutation(1000, 1, 0, false), identity);
}

// Fisher-Yates with unbiased draws: over many seeds, each of the 6 orders of 3 items and each
// (position, item) pair appears about equally often.
TEST(EpochPermutation, IsUniformOnSmallSets) {
  std::map<std::vector<uint32_t>, int> counts;
  const int trials = 60000;
  for (int s = 0; s < trials; ++s) ++counts[EpochPermutation(3, static_cast<uint64_t>(s), 0, true)];
  ASSERT_EQ(counts.size(), 6u);
  for (const auto& [perm, count] : counts) {
    EXPECT_NEAR(count, trials / 6, trials / 6 * 0.05) << perm[0] << perm[1] << perm[2];
  }
}

TEST(EpochOrder, ShuffleFalseIsStorageOrder) {
  EpochOrderOptions o = Opts(10, 4, 0, 1, Remainder::kPartial);
  o.shuffle = false;
  const auto batches = Batches(o);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0], (std::vector<uint64_t>{0, 1, 2, 3}));
  EXPECT_EQ(batches[2], (std::vector<uint64_t>{8, 9}));
}

// Across ranks and remainder policies: disjoint, covering, equal batch counts.
TEST(EpochOrder, RanksAreDisjointCoverTheEpochAndHaveEqualCounts) {
  for (uint64_t n : {1u, 7u, 64u, 100u, 1001u}) {
    for (uint32_t world : {1u, 2u, 3u, 8u}) {
      for (uint32_t batch : {1u, 4u, 8u}) {
        for (Remainder rem : {Remainder::kDrop, Remainder::kWrap}) {
          std::multiset<uint64_t> seen;
          std::set<size_t> counts;
          for (uint32_t r = 0; r < world; ++r) {
            const auto batches = Batches(Opts(n, batch, r, world, rem));
            counts.insert(batches.size());
            for (const auto& b : batches) {
              ASSERT_EQ(b.size(), batch);
              seen.insert(b.begin(), b.end());
            }
          }
          ASSERT_EQ(counts.size(), 1u) << "unequal batch counts";
          const uint64_t step = uint64_t{world} * batch;
          if (rem == Remainder::kDrop) {
            ASSERT_EQ(seen.size(), n / step * step);
            for (uint64_t id : seen) ASSERT_EQ(seen.count(id), 1u) << "sample twice";
          } else {
            // Every sample at least once; only the wrapped tail repeats samples.
            std::set<uint64_t> distinct(seen.begin(), seen.end());
            ASSERT_EQ(distinct.size(), n) << "n=" << n << " world=" << world;
            ASSERT_EQ(seen.size(), (n + step - 1) / step * step);
          }
        }
      }
    }
  }
}

// The global order does not depend on the world size: concatenating the ranks' batches step by
// step gives the same sequence as one rank with the same batch size.
TEST(EpochOrder, GlobalOrderIsIndependentOfWorldSize) {
  const uint64_t n = 96;
  const auto single = Batches(Opts(n, 4));
  std::vector<uint64_t> flat_single;
  for (const auto& b : single) flat_single.insert(flat_single.end(), b.begin(), b.end());
  for (uint32_t world : {2u, 3u, 4u}) {
    std::vector<std::vector<std::vector<uint64_t>>> per_rank;
    for (uint32_t r = 0; r < world; ++r) per_rank.push_back(Batches(Opts(n, 4, r, world)));
    std::vector<uint64_t> flat;
    for (size_t k = 0; k < per_rank[0].size(); ++k) {
      for (uint32_t r = 0; r < world; ++r) {
        flat.insert(flat.end(), per_rank[r][k].begin(), per_rank[r][k].end());
      }
    }
    ASSERT_EQ(flat, flat_single) << "world " << world;
  }
}

// Resuming at the position after any batch gives exactly the remaining batches, also when the
// world size changes in between: the union of what was consumed before and after the resume is
// the epoch, each sample once.
TEST(EpochOrder, ResumeAtEveryPositionAcrossWorldSizes) {
  const uint64_t n = 53;
  const uint32_t batch = 3;
  const auto full = Batches(Opts(n, batch, 0, 1, Remainder::kPartial));
  Result<EpochOrder> whole = EpochOrder::Create(Opts(n, batch, 0, 1, Remainder::kPartial));
  ASSERT_TRUE(whole.ok());
  for (uint64_t k = 0; k < whole->num_batches(); ++k) {
    const uint64_t pos = whole->PositionAfter(k);
    const auto rest = Batches(Opts(n, batch, 0, 1, Remainder::kPartial, pos));
    ASSERT_EQ(rest.size(), full.size() - k - 1);
    for (size_t i = 0; i < rest.size(); ++i) ASSERT_EQ(rest[i], full[k + 1 + i]);
  }
  // Two ranks for some steps, then three.
  for (uint64_t steps = 0; steps <= 8; ++steps) {
    std::multiset<uint64_t> seen;
    uint64_t pos = 0;
    for (uint32_t r = 0; r < 2; ++r) {
      Result<EpochOrder> o = EpochOrder::Create(Opts(n, batch, r, 2));
      ASSERT_TRUE(o.ok());
      for (uint64_t k = 0; k < steps; ++k) {
        for (uint32_t j = 0; j < batch; ++j) seen.insert(o->SampleAt(o->Position(k, j)));
      }
      if (steps > 0) pos = o->PositionAfter(steps - 1);
    }
    for (uint32_t r = 0; r < 3; ++r) {
      for (const auto& b : Batches(Opts(n, batch, r, 3, Remainder::kWrap, pos))) {
        seen.insert(b.begin(), b.end());
      }
    }
    std::set<uint64_t> distinct(seen.begin(), seen.end());
    if (steps == 8) {
      // The two ranks finished the epoch (8 steps of 6, kDrop): its tail of 5 is dropped for
      // good, the resumed run has nothing left to serve.
      ASSERT_EQ(pos, n);
      ASSERT_EQ(seen.size(), 48u);
      ASSERT_EQ(distinct.size(), 48u);
      continue;
    }
    ASSERT_EQ(distinct.size(), n) << "after " << steps << " steps";
    // Before the wrap, nothing repeats: the tail wraps at most one step of 9 positions.
    ASSERT_LE(seen.size(), n + 8);
  }
}

TEST(EpochOrder, ResumeAtTheEndGivesNothing) {
  const auto rest = Batches(Opts(10, 4, 0, 1, Remainder::kPartial, 10));
  EXPECT_TRUE(rest.empty());
}

TEST(EpochOrder, PartialLastBatch) {
  Result<EpochOrder> o = EpochOrder::Create(Opts(10, 4, 0, 1, Remainder::kPartial));
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->num_batches(), 3u);
  EXPECT_EQ(o->BatchSize(2), 2u);
  EXPECT_EQ(o->PositionAfter(2), 10u);
}

TEST(EpochOrder, RefusesBadOptions) {
  EXPECT_FALSE(EpochOrder::Create(Opts(10, 0)).ok());
  EXPECT_FALSE(EpochOrder::Create(Opts(10, 2, 2, 2)).ok());
  EXPECT_FALSE(EpochOrder::Create(Opts(10, 2, 0, 0)).ok());
  EXPECT_FALSE(EpochOrder::Create(Opts(10, 2, 0, 1, Remainder::kDrop, 11)).ok());
  Result<EpochOrder> partial = EpochOrder::Create(Opts(10, 2, 0, 2, Remainder::kPartial));
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.status().message().find("unequal"), std::string::npos);
}

TEST(EpochOrder, HandlesAMillionSamples) {
  // One permutation of 10^6 ids (~4 MB), as the loader builds at each epoch start.
  Result<EpochOrder> o = EpochOrder::Create(Opts(1'000'000, 8));
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->num_batches(), 125'000u);
}

}  // namespace
}  // namespace docfeed::internal
