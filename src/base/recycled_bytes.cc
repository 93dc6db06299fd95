#include "base/recycled_bytes.h"

#include <array>
#include <utility>

namespace docfeed::internal {
namespace {

using Slots = std::array<std::vector<uint8_t>, kRecycledSlots>;

Slots& ThreadSlots() {
  thread_local Slots slots;
  return slots;
}

}  // namespace

std::vector<uint8_t> TakeBytes(size_t size) {
  std::vector<uint8_t>* best = nullptr;
  if (size >= kMinRecycledBytes) {
    for (std::vector<uint8_t>& slot : ThreadSlots()) {
      if (slot.capacity() >= size && (best == nullptr || slot.capacity() < best->capacity())) {
        best = &slot;
      }
    }
  }
  if (best == nullptr) return std::vector<uint8_t>(size);
  std::vector<uint8_t> out = std::move(*best);
  best->clear();  // a moved-from vector is valid but unspecified; make it plainly empty
  best->shrink_to_fit();
  out.resize(size);  // shrinking writes nothing; growing within capacity zeroes the new tail
  return out;
}

void RecycleBytes(std::vector<uint8_t>&& bytes) {
  std::vector<uint8_t> kept = std::move(bytes);
  bytes.clear();
  const size_t capacity = kept.capacity();
  if (capacity < kMinRecycledBytes || capacity > kMaxRecycledBytes) return;  // freed here
  std::vector<uint8_t>* smallest = nullptr;
  for (std::vector<uint8_t>& slot : ThreadSlots()) {
    if (smallest == nullptr || slot.capacity() < smallest->capacity()) smallest = &slot;
  }
  if (smallest->capacity() < capacity) std::swap(*smallest, kept);  // the smaller one is freed
}

size_t RecycledBytesHeld() {
  size_t held = 0;
  for (const std::vector<uint8_t>& slot : ThreadSlots()) held += slot.capacity();
  return held;
}

}  // namespace docfeed::internal
