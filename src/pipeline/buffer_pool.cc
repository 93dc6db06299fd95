#include "pipeline/buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "base/check.h"

namespace docfeed::internal {
namespace {
constexpr int64_t kLabelPad = -100;
}  // namespace

Result<std::unique_ptr<BufferPool>> BufferPool::Create(
    size_t count, uint32_t batch_size, size_t sample_pixel_bytes, uint32_t label_capacity,
    BufferAllocator allocator, size_t token_columns, uint32_t token_capacity) {
  std::unique_ptr<BufferPool> pool(new BufferPool());
  pool->batch_size_ = batch_size;
  pool->sample_pixel_bytes_ = sample_pixel_bytes;
  pool->label_capacity_ = label_capacity;
  pool->token_columns_ = token_columns;
  pool->token_capacity_ = token_capacity;
  pool->allocator_ = std::move(allocator);
  pool->buffers_.resize(count);
  const size_t batch_bytes = pool->batch_pixel_bytes();
  for (size_t i = 0; i < count; ++i) {
    Buffer& b = pool->buffers_[i];
    if (pool->allocator_.allocate) {
      b.pixels = pool->allocator_.allocate(batch_bytes);
    } else {
      // aligned_alloc wants a size that is a multiple of the alignment.
      b.pixels = std::aligned_alloc(64, (batch_bytes + 63) / 64 * 64);
    }
    if (b.pixels == nullptr) {
      return ResourceExhaustedError("cannot allocate batch buffer " + std::to_string(i) + " (" +
                                    std::to_string(batch_bytes) + " bytes)");
    }
    const size_t bs = batch_size;
    b.staged_labels.resize(bs * label_capacity);
    b.label_lengths.resize(bs);
    b.labels.resize(bs * label_capacity);
    b.staged_tokens.resize(bs * token_columns * token_capacity);
    b.token_lengths.resize(bs * token_columns);
    b.tokens.resize(bs * token_columns * token_capacity);
    b.sample_ids.resize(bs);
    b.pad_offsets.resize(2 * bs);
    b.content_sizes.resize(2 * bs);
    b.skipped.resize(bs);
    b.placements.resize(bs);
    b.spills.resize(bs);
    b.packed_offsets.resize(bs + 1);
  }
  return pool;
}

BufferPool::~BufferPool() {
  for (Buffer& b : buffers_) {
    if (b.pixels == nullptr) continue;
    if (allocator_.release) {
      allocator_.release(b.pixels, batch_pixel_bytes());
    } else {
      std::free(b.pixels);
    }
  }
}

SlotView BufferPool::Slot(int index, uint32_t j) {
  return SlotAt(index, j, sample_pixel_bytes_ * j, sample_pixel_bytes_);
}

SlotView BufferPool::SlotAt(int index, uint32_t j, size_t offset_bytes, size_t capacity_bytes) {
  DOCFEED_CHECK(offset_bytes + capacity_bytes <= batch_pixel_bytes());
  Buffer& b = buffer(index);
  const size_t slot = j;
  b.placements[slot] = {offset_bytes, capacity_bytes, 0, false};
  return {static_cast<uint8_t*>(b.pixels) + offset_bytes,
          capacity_bytes,
          &b.placements[slot],
          &b.spills[slot],
          &b.sample_ids[slot],
          &b.pad_offsets[2 * slot],
          &b.content_sizes[2 * slot],
          b.staged_labels.data() + slot * label_capacity_,
          &b.label_lengths[slot],
          b.staged_tokens.data() + slot * token_columns_ * token_capacity_,
          b.token_lengths.data() + slot * token_columns_,
          &b.skipped[slot]};
}

void BufferPool::CompactLabels(int index, uint32_t size, uint32_t fixed_length) {
  Buffer& m = buffer(index);
  uint32_t length = fixed_length;
  if (length == 0) {
    for (uint32_t j = 0; j < size; ++j) length = std::max(length, m.label_lengths[j]);
  }
  m.label_length = length;
  for (uint32_t j = 0; j < size; ++j) {
    const int64_t* src = m.staged_labels.data() + size_t{j} * label_capacity_;
    int64_t* dst = m.labels.data() + size_t{j} * length;
    std::copy_n(src, m.label_lengths[j], dst);
    std::fill(dst + m.label_lengths[j], dst + length, kLabelPad);
  }
}

void BufferPool::CompactTokens(int index, uint32_t size, const std::vector<int64_t>& pads) {
  DOCFEED_CHECK(pads.size() == token_columns_);
  Buffer& m = buffer(index);
  const size_t columns = token_columns_;
  uint32_t length = 0;
  for (size_t i = 0; i < size_t{size} * columns; ++i) length = std::max(length, m.token_lengths[i]);
  m.token_length = length;
  const size_t block = size_t{batch_size_} * token_capacity_;  // a column's dense block
  for (size_t k = 0; k < columns; ++k) {
    for (uint32_t j = 0; j < size; ++j) {
      const int64_t* src = m.staged_tokens.data() + (j * columns + k) * token_capacity_;
      int64_t* dst = m.tokens.data() + k * block + size_t{j} * length;
      const uint32_t n = m.token_lengths[j * columns + k];
      std::copy_n(src, n, dst);
      std::fill(dst + n, dst + length, pads[k]);
    }
  }
}

size_t BufferPool::PackPixels(int index, uint32_t size, bool pad) {
  Buffer& m = buffer(index);
  auto* base = static_cast<uint8_t*>(m.pixels);
  // Where each output goes: right after the previous one, or with `pad` at j * the largest.
  size_t largest = 0;
  for (uint32_t j = 0; j < size; ++j) {
    const SlotPixels& s = m.placements[j];
    DOCFEED_CHECK(s.bytes <= sample_pixel_bytes_ && (s.spilled || s.bytes <= s.capacity));
    largest = std::max(largest, s.bytes);
  }
  std::vector<size_t>& to = m.packed_offsets;
  to[0] = 0;
  bool in_place = true;
  for (uint32_t j = 0; j < size; ++j) {
    const SlotPixels& s = m.placements[j];
    to[j + 1] = to[j] + (pad ? largest : s.bytes);
    in_place = in_place && !s.spilled && s.offset == to[j];
  }
  m.pixel_bytes = to[size];
  // The padding after each output (what earlier batches left there), zeroed once every output
  // is at its destination.
  auto zero_padding = [&] {
    if (!pad) return;
    for (uint32_t j = 0; j < size; ++j) {
      std::memset(base + to[j] + m.placements[j].bytes, 0,
                  to[j + 1] - to[j] - m.placements[j].bytes);
    }
  };
  if (in_place) {
    zero_padding();
    return 0;
  }
  // Regions are in slot order and each in-place output lies within its own, so an output moving
  // up (to > offset) lands below the next slot's destination and an output moving down lands
  // above the previous slot's region: moving the upward ones last slot first, then the downward
  // ones first slot first, never overwrites an output not yet moved. Spilled outputs are copied
  // last, into destinations no other output occupies any more.
  size_t moved = 0;
  auto move = [&](uint32_t j) {
    const SlotPixels& s = m.placements[j];
    std::memmove(base + to[j], base + s.offset, s.bytes);
    moved += s.bytes;
  };
  for (uint32_t j = size; j-- > 0;) {
    if (!m.placements[j].spilled && to[j] > m.placements[j].offset) move(j);
  }
  for (uint32_t j = 0; j < size; ++j) {
    if (!m.placements[j].spilled && to[j] < m.placements[j].offset) move(j);
  }
  for (uint32_t j = 0; j < size; ++j) {
    const SlotPixels& s = m.placements[j];
    if (!s.spilled) continue;
    std::memcpy(base + to[j], m.spills[j].data(), s.bytes);
    moved += s.bytes;
  }
  zero_padding();
  return moved;
}

}  // namespace docfeed::internal
