// The loader's batch buffers: `count` buffers allocated once, each holding one batch's pixels
// (through the caller's BufferAllocator, e.g. page-locked memory, or aligned_alloc) and its small
// per-sample arrays (sample ids, pad offsets, content sizes, labels).
//
// Ownership protocol (no lock here): the pool's layout never changes after Create(). Which
// buffer is free, being filled or held is the Scheduler's business (scheduler.h): a worker writes
// slot j of buffer b only while it holds the claim on (b, j); the consumer reads buffer b only
// while it holds the Batch of b. So no two threads ever touch one slot at once.
#ifndef DOCFEED_PIPELINE_BUFFER_POOL_H_
#define DOCFEED_PIPELINE_BUFFER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "docfeed/loader.h"
#include "docfeed/status.h"

namespace docfeed::internal {

using docfeed::BufferAllocator;

// A sample that failed to load and was replaced (on_error = skip), noted by the worker in the
// slot it filled; the consumer counts it when the batch is handed out.
struct SkippedSample {
  uint64_t id = 0;
  std::string error;
};

// Where a variable-size preset's output for one slot went. The loader writes each page at its
// final offset in the batch (the offsets are the predicted sizes of the slots before it, from the
// index), so a batch whose pages all came out as predicted is packed as written; PackPixels
// moves only what a replacement or a missed prediction displaced.
struct SlotPixels {
  size_t offset = 0;     // the slot's region in the buffer's pixels, set before the load
  size_t capacity = 0;   // bytes the region holds: the predicted output
  size_t bytes = 0;      // bytes the load wrote
  bool spilled = false;  // larger than the region: written to the slot's spill buffer instead
};

// Where one sample of a batch goes: what SampleReader::Load writes.
struct SlotView {
  void* pixels = nullptr;           // pixel_capacity bytes
  size_t pixel_capacity = 0;        // fixed-size presets: Preset::SampleBytes
  SlotPixels* placement = nullptr;  // variable-size presets: bytes and spilled, set by the load
  std::vector<uint8_t>* spill = nullptr;  // for an output larger than pixel_capacity
  int64_t* sample_id = nullptr;           // 1
  int32_t* pad_offset = nullptr;          // 2: top, left
  int32_t* content_size = nullptr;        // 2: height, width
  int64_t* labels = nullptr;              // label_capacity entries (staged, unpadded)
  uint32_t* label_length = nullptr;
  int64_t* tokens = nullptr;          // token column k's row at k * token_capacity (staged)
  uint32_t* token_lengths = nullptr;  // one per token column
  std::vector<SkippedSample>* skipped = nullptr;  // the samples this slot replaced
};

class BufferPool {
 public:
  struct Buffer {
    void* pixels = nullptr;
    std::vector<int64_t> staged_labels;   // batch_size rows of label_capacity, filled per slot
    std::vector<uint32_t> label_lengths;  // per slot
    std::vector<int64_t> labels;          // the batch's rows compacted to its label length
    uint32_t label_length = 0;
    // Token columns: per slot, the columns' rows token_capacity apart; per slot and column,
    // the row's length; compacted, column k's size x token_length block at k * batch_size *
    // token_capacity.
    std::vector<int64_t> staged_tokens;
    std::vector<uint32_t> token_lengths;
    std::vector<int64_t> tokens;
    uint32_t token_length = 0;
    std::vector<int64_t> sample_ids;
    std::vector<int32_t> pad_offsets;
    std::vector<int32_t> content_sizes;
    std::vector<std::vector<SkippedSample>> skipped;  // per slot
    // Variable-size presets, per slot: where its output is, and the buffer it spills to (empty
    // until a slot's output first exceeds its region; kept for reuse).
    std::vector<SlotPixels> placements;
    std::vector<std::vector<uint8_t>> spills;
    std::vector<size_t> packed_offsets;  // PackPixels' destinations, size + 1 entries
    // Bytes of the batch's pixels once complete: size x sample_pixel_bytes, or for a
    // variable-size preset the slots' outputs packed together (PackPixels).
    size_t pixel_bytes = 0;
  };

  // Errors: ResourceExhausted when a pixel buffer cannot be allocated.
  static Result<std::unique_ptr<BufferPool>> Create(
      size_t count, uint32_t batch_size, size_t sample_pixel_bytes, uint32_t label_capacity,
      BufferAllocator allocator, size_t token_columns = 0, uint32_t token_capacity = 0);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  size_t size() const { return buffers_.size(); }
  size_t sample_pixel_bytes() const { return sample_pixel_bytes_; }
  size_t batch_pixel_bytes() const { return sample_pixel_bytes_ * batch_size_; }
  uint32_t label_capacity() const { return label_capacity_; }
  Buffer& buffer(int index) { return buffers_[static_cast<size_t>(index)]; }

  // Slot j of buffer `index` at j * sample_pixel_bytes (fixed-size presets).
  SlotView Slot(int index, uint32_t j);
  // Slot j of a variable-size preset's batch: its output goes to `offset_bytes` (the predicted
  // sizes of the slots before it), and holds `capacity_bytes` (its own predicted size).
  // REQUIRES: offset_bytes + capacity_bytes <= batch_pixel_bytes().
  SlotView SlotAt(int index, uint32_t j, size_t offset_bytes, size_t capacity_bytes);

  // Turns the staged label rows (label_capacity apart) of the first `size` slots into a dense
  // size x L block padded with -100, L being the longest row (fixed_length 0) or fixed_length.
  void CompactLabels(int index, uint32_t size, uint32_t fixed_length);
  // Turns the staged token rows of the first `size` slots into one dense size x L block per
  // token column, L being the longest row over all columns and slots, row ends padded with
  // pads[k]. REQUIRES: pads.size() == token_columns().
  void CompactTokens(int index, uint32_t size, const std::vector<int64_t>& pads);
  size_t token_columns() const { return token_columns_; }
  uint32_t token_capacity() const { return token_capacity_; }
  // Packs the outputs of the first `size` slots (written through SlotAt) so that they follow
  // each other from the buffer's start in slot order, and records the total as the buffer's
  // pixel_bytes. With `pad`, each output instead starts at j times the largest output and the
  // rest of its region is zeroed (pixel_bytes = size x the largest). Moves nothing when every
  // slot wrote exactly at its destination (the common case); else moves the displaced outputs
  // (in an order that never overwrites one not yet moved) and copies the spilled ones in.
  // Returns the bytes moved or copied.
  // REQUIRES: every slot's placement is set; regions in slot order, each output within its
  // region unless spilled, and at most sample_pixel_bytes().
  size_t PackPixels(int index, uint32_t size, bool pad = false);

 private:
  BufferPool() = default;
  std::vector<Buffer> buffers_;
  uint32_t batch_size_ = 0;
  size_t sample_pixel_bytes_ = 0;
  uint32_t label_capacity_ = 0;
  size_t token_columns_ = 0;
  uint32_t token_capacity_ = 0;
  BufferAllocator allocator_;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_PIPELINE_BUFFER_POOL_H_
