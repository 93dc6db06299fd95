// Elastic resume at the level of the epoch order: a run of W ranks saves a state, a run of W'
// ranks resumes it (and saves again, and so on). Exhaustive over small epochs: every sequence of
// world sizes 1..4 (2 -> 1 -> 4 -> 3 and the rest), every cut point of every segment, both
// elastic modes (same per-rank batch, same global batch) and every remainder, checking which
// samples the ranks served in the epoch against the rule of src/pipeline/README.md ("Elastic
// resume"): each sample exactly once, except the tail that the *last* segment's step does not
// fill (kDrop: dropped; kWrap: completed from the start of the permutation).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "docfeed/loader.h"
#include "pipeline/epoch_order.h"

namespace docfeed::internal {
namespace {

constexpr uint64_t kSeed = 9;
constexpr uint64_t kEpoch = 4;

struct Shape {
  uint32_t world = 1;
  uint32_t batch = 1;
  Remainder remainder = Remainder::kDrop;
};

std::string Describe(const std::vector<Shape>& shapes, const std::vector<uint64_t>& starts) {
  std::string s;
  for (size_t i = 0; i < shapes.size(); ++i) {
    s += (i ? " -> " : "") + std::to_string(shapes[i].world) + "x" +
         std::to_string(shapes[i].batch) + " " + std::string(RemainderName(shapes[i].remainder));
    if (i < starts.size()) s += " @" + std::to_string(starts[i]);
  }
  return s;
}

// One segment of the run: every rank's order from `start`. Checks that the ranks agree on the
// batch count and on the resume position after each step.
std::vector<EpochOrder> Segment(uint64_t n, const Shape& shape, uint64_t start) {
  std::vector<EpochOrder> ranks;
  for (uint32_t r = 0; r < shape.world; ++r) {
    EpochOrderOptions o;
    o.num_samples = n;
    o.seed = kSeed;
    o.epoch = kEpoch;
    o.batch_size = shape.batch;
    o.rank = r;
    o.world_size = shape.world;
    o.remainder = shape.remainder;
    o.start = start;
    Result<EpochOrder> order = EpochOrder::Create(o);
    EXPECT_TRUE(order.ok()) << order.status().ToString();
    ranks.push_back(*std::move(order));
    EXPECT_EQ(ranks.back().num_batches(), ranks.front().num_batches()) << "rank " << r;
  }
  const uint64_t step = uint64_t{shape.world} * shape.batch;
  for (uint64_t k = 0; k < ranks.front().num_batches(); ++k) {
    const uint64_t after = ranks.front().PositionAfter(k);
    for (const EpochOrder& r : ranks) EXPECT_EQ(r.PositionAfter(k), after);
    const bool last = k + 1 == ranks.front().num_batches();
    EXPECT_EQ(after, last ? n : start + (k + 1) * step);
  }
  return ranks;
}

// Adds (delta +1) or removes (-1) step k of every rank of a segment to `served`.
void Serve(const std::vector<EpochOrder>& ranks, uint64_t k, int delta, std::vector<int>* served) {
  for (const EpochOrder& r : ranks) {
    for (uint32_t j = 0; j < r.BatchSize(k); ++j) {
      (*served)[r.SampleAt(r.Position(k, j))] += delta;
    }
  }
}

// What the epoch must have served when its last segment, of shape `last`, started at
// `last_start`: each sample once, minus kDrop's unfilled tail, plus kWrap's completion.
std::vector<int> Expected(uint64_t n, const Shape& last, uint64_t last_start) {
  const std::vector<uint32_t> perm = EpochPermutation(n, kSeed, kEpoch, true);
  std::vector<int> want(n, 1);
  const uint64_t step = uint64_t{last.world} * last.batch;
  const uint64_t tail = (n - last_start) % step;
  if (last.remainder == Remainder::kDrop) {
    for (uint64_t p = n - tail; p < n; ++p) want[perm[p]] = 0;
  } else if (last.remainder == Remainder::kWrap && tail != 0) {
    for (uint64_t p = 0; p < step - tail; ++p) ++want[perm[p % n]];
  }
  return want;
}

// Runs every way of cutting the epoch into segments of `shapes` (each but the last takes 0..all
// of its steps, then the next resumes from the state after them) and checks each against
// Expected() for the segment that ended the epoch: the first that served its last batch (the
// state after it is the end of the epoch, so the later ones serve nothing), else the last.
// Returns the number of runs checked.
uint64_t CheckEverySplit(uint64_t n, const std::vector<Shape>& shapes) {
  std::vector<int> served(n, 0);
  std::vector<uint64_t> starts;
  std::vector<bool> ended;  // per segment: it served its last batch
  uint64_t runs = 0;
  std::function<void(size_t, uint64_t)> run = [&](size_t i, uint64_t start) {
    starts.push_back(start);
    const std::vector<EpochOrder> ranks = Segment(n, shapes[i], start);
    const uint64_t batches = ranks.front().num_batches();
    if (i + 1 == shapes.size()) {
      for (uint64_t k = 0; k < batches; ++k) Serve(ranks, k, +1, &served);
      ++runs;
      size_t ender = i;
      for (size_t j = 0; j < i; ++j) {
        if (ended[j]) {
          ender = j;
          break;
        }
      }
      const std::vector<int> want = Expected(n, shapes[ender], starts[ender]);
      if (served != want) {
        ADD_FAILURE() << "n=" << n << ": " << Describe(shapes, starts);
        for (uint64_t id = 0; id < n; ++id) {
          if (served[id] != want[id]) {
            ADD_FAILURE() << "sample " << id << " served " << served[id] << "x, want " << want[id];
          }
        }
      }
      for (uint64_t k = 0; k < batches; ++k) Serve(ranks, k, -1, &served);
    } else {
      // Save after s steps (s = 0: before the first batch), resume with the next shape.
      for (uint64_t s = 0; s <= batches && !testing::Test::HasFailure(); ++s) {
        ended.push_back(s == batches && batches > 0);
        run(i + 1, s == 0 ? start : ranks.front().PositionAfter(s - 1));
        ended.pop_back();
        if (s < batches) Serve(ranks, s, +1, &served);
      }
      for (uint64_t k = 0; k < batches; ++k) Serve(ranks, k, -1, &served);
    }
    starts.pop_back();
  };
  run(0, 0);
  return runs;
}

// Every sequence of 2 to 4 world sizes from 1..4 without a repeat in a row (2 -> 1 -> 4 -> 3,
// 1 -> 2 -> 1, ...).
std::vector<std::vector<uint32_t>> WorldSequences() {
  std::vector<std::vector<uint32_t>> out;
  std::function<void(std::vector<uint32_t>)> grow = [&](std::vector<uint32_t> seq) {
    if (seq.size() >= 2) out.push_back(seq);
    if (seq.size() == 4) return;
    for (uint32_t w = 1; w <= 4; ++w) {
      if (!seq.empty() && seq.back() == w) continue;
      seq.push_back(w);
      grow(seq);
      seq.pop_back();
    }
  };
  grow({});
  return out;
}

// The remainder of each segment: all drop, all wrap, or DataLoader's drop_last=False as the
// Python front maps it (partial on one rank, wrap on several).
enum class Tail { kDrop, kWrap, kNoDropLast };

Remainder RemainderFor(Tail tail, uint32_t world) {
  switch (tail) {
    case Tail::kDrop:
      return Remainder::kDrop;
    case Tail::kWrap:
      return Remainder::kWrap;
    case Tail::kNoDropLast:
      break;
  }
  return world == 1 ? Remainder::kPartial : Remainder::kWrap;
}

// Same per-rank batch (2 or 3) on every segment: the step changes with the world size.
TEST(ElasticResume, SamePerRankBatchEverySplitOfEveryWorldSequence) {
  const uint64_t n = 23;
  uint64_t runs = 0;
  for (const std::vector<uint32_t>& worlds : WorldSequences()) {
    for (uint32_t batch : {2u, 3u}) {
      for (Tail tail : {Tail::kDrop, Tail::kWrap, Tail::kNoDropLast}) {
        std::vector<Shape> shapes;
        for (uint32_t w : worlds) shapes.push_back({w, batch, RemainderFor(tail, w)});
        runs += CheckEverySplit(n, shapes);
        ASSERT_FALSE(HasFailure());
      }
    }
  }
  EXPECT_GT(runs, 40000u);  // the exhaustive part did run (41784 runs)
}

// Same global batch on every segment: the per-rank batch is the global batch over the world
// size, the global batch the least common multiple of the sequence's world sizes (12 for
// 2 -> 1 -> 4 -> 3), or twice it.
TEST(ElasticResume, SameGlobalBatchEverySplitOfEveryWorldSequence) {
  const uint64_t n = 23;
  uint64_t runs = 0;
  for (const std::vector<uint32_t>& worlds : WorldSequences()) {
    uint32_t lcm = 1;
    for (uint32_t w : worlds) lcm = std::lcm(lcm, w);
    for (uint32_t global : {lcm, 2 * lcm}) {
      if (global > n) continue;
      for (Tail tail : {Tail::kDrop, Tail::kWrap, Tail::kNoDropLast}) {
        std::vector<Shape> shapes;
        for (uint32_t w : worlds) shapes.push_back({w, global / w, RemainderFor(tail, w)});
        runs += CheckEverySplit(n, shapes);
        ASSERT_FALSE(HasFailure());
      }
    }
  }
  EXPECT_GT(runs, 10000u);
}

// Resuming at every position 0..n, not only at step boundaries, with every shape: the ranks
// together serve exactly positions position.. of the order (to the end of the epoch, kDrop's
// tail excepted, kWrap's completion added), in equal batch counts.
TEST(ElasticResume, EveryStartPositionEveryShape) {
  for (uint64_t n : {1u, 2u, 5u, 23u}) {
    for (uint64_t start = 0; start <= n; ++start) {
      for (uint32_t world = 1; world <= 4; ++world) {
        for (uint32_t batch = 1; batch <= 4; ++batch) {
          for (Tail tail : {Tail::kDrop, Tail::kWrap, Tail::kNoDropLast}) {
            const Shape shape{world, batch, RemainderFor(tail, world)};
            std::vector<int> served(n, 0);
            const std::vector<EpochOrder> ranks = Segment(n, shape, start);
            for (uint64_t k = 0; k < ranks.front().num_batches(); ++k) {
              Serve(ranks, k, +1, &served);
            }
            std::vector<int> want = Expected(n, shape, start);
            // Positions before `start` are not served by this segment.
            const std::vector<uint32_t> perm = EpochPermutation(n, kSeed, kEpoch, true);
            for (uint64_t p = 0; p < start; ++p) --want[perm[p]];
            ASSERT_EQ(served, want) << "n=" << n << " start=" << start << " " << world << "x"
                                    << batch << " " << RemainderName(shape.remainder);
          }
        }
      }
    }
  }
}

// The tail of a kDrop epoch is dropped for good: the state after the last batch is the end of
// the epoch, so a resume with smaller steps (which could fill them) serves nothing more.
TEST(ElasticResume, AFinishedDropEpochStaysFinished) {
  const uint64_t n = 23;
  std::vector<EpochOrder> two = Segment(n, {2, 3, Remainder::kDrop}, 0);  // 3 steps of 6
  ASSERT_EQ(two.front().num_batches(), 3u);
  const uint64_t end = two.front().PositionAfter(2);
  EXPECT_EQ(end, n);  // not 18: positions 18..22 are dropped, not pending
  for (uint32_t world = 1; world <= 4; ++world) {
    EXPECT_EQ(Segment(n, {world, 1, Remainder::kDrop}, end).front().num_batches(), 0u);
    EXPECT_EQ(Segment(n, {world, 1, Remainder::kWrap}, end).front().num_batches(), 0u);
  }
}

LoaderState Saved(uint32_t world, uint32_t batch) {
  LoaderState s;
  s.world_size = world;
  s.batch_size = batch;
  return s;
}

TEST(ElasticResume, ModeIsResolvedFromTheShapes) {
  using M = ElasticMode;
  EXPECT_EQ(*ResolveElasticMode(Saved(2, 3), 2, 3), M::kSame);
  EXPECT_EQ(*ResolveElasticMode(Saved(2, 3), 1, 6), M::kGlobalBatch);
  EXPECT_EQ(*ResolveElasticMode(Saved(2, 3), 3, 2), M::kGlobalBatch);
  EXPECT_EQ(*ResolveElasticMode(Saved(2, 3), 4, 3), M::kRankBatch);
  EXPECT_EQ(*ResolveElasticMode(Saved(2, 3), 1, 6, M::kGlobalBatch), M::kGlobalBatch);
  EXPECT_EQ(*ResolveElasticMode(Saved(2, 3), 1, 3, M::kRankBatch), M::kRankBatch);
  // The same shape honours every request.
  for (M m : {M::kSame, M::kGlobalBatch, M::kRankBatch}) {
    EXPECT_EQ(*ResolveElasticMode(Saved(2, 3), 2, 3, m), M::kSame);
  }
  // A state without its shape (written by hand) resumes as this loader's own shape.
  EXPECT_EQ(*ResolveElasticMode(LoaderState{}, 4, 5), M::kSame);
}

std::string ErrorOf(const Result<ElasticMode>& r) {
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.ok() ? "" : std::string(r.status().message());
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ElasticResume, CombinationsThatCannotBeHonouredNameTheFields) {
  using M = ElasticMode;
  // Neither kept: both fixes are named.
  std::string e = ErrorOf(ResolveElasticMode(Saved(2, 3), 4, 2));
  EXPECT_TRUE(Has(e, "world_size 2 and batch_size 3")) << e;
  EXPECT_TRUE(Has(e, "world_size 4 and batch_size 2")) << e;
  EXPECT_TRUE(Has(e, "no batch_size keeps the global batch 6 over 4 ranks")) << e;
  EXPECT_TRUE(Has(e, "batch_size 3 keeps the per-rank batch")) << e;
  // A batch size change at the same world size keeps neither.
  e = ErrorOf(ResolveElasticMode(Saved(2, 3), 2, 4));
  EXPECT_TRUE(Has(e, "batch_size 3 keeps the global batch")) << e;
  // The required mode does not hold.
  e = ErrorOf(ResolveElasticMode(Saved(2, 3), 1, 3, M::kGlobalBatch));
  EXPECT_TRUE(Has(e, "elastic \"global_batch\" requires world_size x batch_size to stay 6")) << e;
  EXPECT_TRUE(Has(e, "batch_size 6 keeps the global batch")) << e;
  e = ErrorOf(ResolveElasticMode(Saved(2, 3), 1, 6, M::kRankBatch));
  EXPECT_TRUE(Has(e, "elastic \"rank_batch\" requires batch_size 3")) << e;
  e = ErrorOf(ResolveElasticMode(Saved(2, 3), 1, 6, M::kSame));
  EXPECT_TRUE(Has(e, "requires the same world_size and batch_size")) << e;
  e = ErrorOf(ResolveElasticMode(LoaderState{}, 1, 6, M::kRankBatch));
  EXPECT_TRUE(Has(e, "does not record its world_size and batch_size")) << e;
}

TEST(ElasticResume, ModeNames) {
  for (ElasticMode m : {ElasticMode::kSame, ElasticMode::kGlobalBatch, ElasticMode::kRankBatch}) {
    EXPECT_EQ(*ParseElasticMode(ElasticModeName(m)), m);
  }
  Result<ElasticMode> bad = ParseElasticMode("global");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Has(std::string(bad.status().message()), "same, global_batch or rank_batch"));
}

}  // namespace
}  // namespace docfeed::internal
