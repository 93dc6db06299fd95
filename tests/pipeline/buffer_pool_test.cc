// BufferPool's variable-size layout (issue 19): slots written at their final offsets (the
// predicted sizes of the slots before them) need no packing; outputs that came out smaller than
// predicted (a replacement) or spilled because larger are packed in slot order, whatever the mix.
#include "pipeline/buffer_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

namespace docfeed::internal {
namespace {

constexpr uint32_t kBatch = 6;
constexpr size_t kSlotBytes = 16;

std::unique_ptr<BufferPool> MakePool() {
  Result<std::unique_ptr<BufferPool>> pool = BufferPool::Create(1, kBatch, kSlotBytes, 0, {});
  EXPECT_TRUE(pool.ok());
  return pool.ok() ? std::move(*pool) : nullptr;
}

// Writes slot j's output (`bytes` bytes of value j + 1) as SampleReader::Load does: into its
// region when it fits, else into its spill buffer. The regions are those LoaderCore::SlotFor
// gives: the predicted sizes one after the other, or with `padded` each the largest predicted
// size. Returns the bytes expected in the packed batch (padded: each output followed by zeros up
// to the largest actual size).
std::vector<uint8_t> Fill(BufferPool& pool, const std::vector<size_t>& predicted,
                          const std::vector<size_t>& actual, bool padded = false) {
  const size_t region = *std::max_element(predicted.begin(), predicted.end());
  const size_t largest = *std::max_element(actual.begin(), actual.end());
  std::vector<uint8_t> want;
  size_t offset = 0;
  for (uint32_t j = 0; j < predicted.size(); ++j) {
    const size_t capacity = padded ? region : predicted[j];
    const SlotView slot = pool.SlotAt(0, j, offset, capacity);
    offset += capacity;
    void* out = slot.pixels;
    if (actual[j] > slot.pixel_capacity) {
      slot.spill->resize(actual[j]);
      out = slot.spill->data();
    }
    std::memset(out, static_cast<int>(j + 1), actual[j]);
    slot.placement->bytes = actual[j];
    slot.placement->spilled = out != slot.pixels;
    want.insert(want.end(), actual[j], static_cast<uint8_t>(j + 1));
    if (padded) want.insert(want.end(), largest - actual[j], 0);
  }
  return want;
}

std::vector<uint8_t> Packed(BufferPool& pool) {
  const auto* p = static_cast<const uint8_t*>(pool.buffer(0).pixels);
  return {p, p + pool.buffer(0).pixel_bytes};
}

TEST(BufferPoolPack, PagesAsPredictedAreAlreadyPacked) {
  std::unique_ptr<BufferPool> pool = MakePool();
  ASSERT_NE(pool, nullptr);
  const std::vector<size_t> sizes = {4, 16, 1, 7, 16, 9};
  const std::vector<uint8_t> want = Fill(*pool, sizes, sizes);
  EXPECT_EQ(pool->PackPixels(0, kBatch), 0u);  // nothing moved
  EXPECT_EQ(Packed(*pool), want);
}

// A replacement smaller than the page it replaced leaves a gap: the later pages move down.
TEST(BufferPoolPack, ASmallerReplacementMovesTheLaterPagesDown) {
  std::unique_ptr<BufferPool> pool = MakePool();
  ASSERT_NE(pool, nullptr);
  const std::vector<uint8_t> want = Fill(*pool, {8, 8, 8, 8, 8, 8}, {8, 3, 8, 8, 8, 8});
  EXPECT_EQ(pool->PackPixels(0, kBatch), 4u * 8);
  EXPECT_EQ(Packed(*pool), want);
}

// A replacement larger than its region is written to the slot's spill buffer and copied in; the
// later pages move up to make room.
TEST(BufferPoolPack, ALargerReplacementIsSpilledAndCopiedIn) {
  std::unique_ptr<BufferPool> pool = MakePool();
  ASSERT_NE(pool, nullptr);
  const std::vector<uint8_t> want = Fill(*pool, {2, 4, 6, 3, 5, 1}, {2, 16, 6, 3, 5, 1});
  EXPECT_TRUE(pool->buffer(0).placements[1].spilled);
  EXPECT_EQ(pool->PackPixels(0, kBatch), 16u + 6 + 3 + 5 + 1);
  EXPECT_EQ(Packed(*pool), want);
}

// A partial or full batch's predicted and actual output sizes: a third of the outputs come out at
// another size than predicted (smaller, or larger: spilled), the rest as predicted.
void RandomSizes(std::mt19937& rng, std::vector<size_t>* predicted, std::vector<size_t>* actual) {
  const auto size = static_cast<uint32_t>(1 + rng() % kBatch);
  predicted->resize(size);
  actual->resize(size);
  for (uint32_t j = 0; j < size; ++j) {
    (*predicted)[j] = 1 + rng() % kSlotBytes;
    (*actual)[j] = rng() % 3 == 1 ? 1 + rng() % kSlotBytes : (*predicted)[j];
  }
}

// Any mix of exact, smaller and spilled outputs, and a partial batch.
TEST(BufferPoolPack, AnyMixPacksInSlotOrder) {
  std::unique_ptr<BufferPool> pool = MakePool();
  ASSERT_NE(pool, nullptr);
  std::mt19937 rng(19);
  std::vector<size_t> predicted, actual;
  for (int iter = 0; iter < 500; ++iter) {
    RandomSizes(rng, &predicted, &actual);
    const auto size = static_cast<uint32_t>(predicted.size());
    const std::vector<uint8_t> want = Fill(*pool, predicted, actual);
    pool->PackPixels(0, size);
    ASSERT_EQ(Packed(*pool), want) << "iteration " << iter;
  }
}

// A batch that pads (Preset::pads_batch, Idefics3): slot j's region at j times the largest
// predicted output, as LoaderCore::SlotFor gives it; after PackPixels(pad) output j starts at j
// times the largest actual output and the rest of its region is zero, whatever the buffer held
// before (stale bytes of earlier batches), with any mix of exact, smaller and spilled outputs.
TEST(BufferPoolPack, PaddedBatchesPutEachOutputAtItsStrideAndZeroTheRest) {
  std::unique_ptr<BufferPool> pool = MakePool();
  ASSERT_NE(pool, nullptr);
  std::mt19937 rng(23);
  std::vector<size_t> predicted, actual;
  for (int iter = 0; iter < 500; ++iter) {
    RandomSizes(rng, &predicted, &actual);
    const auto size = static_cast<uint32_t>(predicted.size());
    std::memset(pool->buffer(0).pixels, 0xEE, kBatch * kSlotBytes);  // an earlier batch's bytes
    const std::vector<uint8_t> want = Fill(*pool, predicted, actual, /*padded=*/true);
    const size_t moved = pool->PackPixels(0, size, /*pad=*/true);
    ASSERT_EQ(Packed(*pool), want) << "iteration " << iter;
    if (predicted == actual) {
      EXPECT_EQ(moved, 0u);
    }
  }
}

}  // namespace
}  // namespace docfeed::internal
