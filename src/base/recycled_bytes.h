// Per-thread reuse of the large byte vectors a page passes through: its decoded pixels and the
// copies the presets make of them (the RGB form of a gray or RGBA page).
//
// A 600 dpi page is 26-104 MB of pixels, above glibc's largest dynamic mmap threshold (32 MiB),
// so every such vector is a fresh mmap whose pages all fault on first touch (the vector's zero
// fill), and a munmap when freed: 10-16 ms of a 45-75 ms page (AmazonWebServices.png, 2975x3850
// RGB, on one core; docs/benchmarks.md). Smaller ones still pay the zero fill. A thread that
// hands its vectors back here gets them again for the next page: no mapping, no faults, and no
// zero fill when the new size fits the old one.
//
// Invariants
// - Per thread (thread_local); nothing is shared, so no locks.
// - A thread keeps at most kRecycledSlots vectors, each of capacity in [kMinRecycledBytes,
//   kMaxRecycledBytes]; they are freed when the thread exits. Holding them costs no more than
//   the thread's last page needed at its peak.
// - TakeBytes's bytes are unspecified (an earlier page's pixels, or zeros): its callers write
//   every byte before anything reads one. A caller that may not fill the whole vector uses a
//   plain std::vector instead.

#ifndef DOCFEED_BASE_RECYCLED_BYTES_H_
#define DOCFEED_BASE_RECYCLED_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace docfeed::internal {

inline constexpr size_t kRecycledSlots = 2;
inline constexpr size_t kMinRecycledBytes = size_t{1} << 20;
inline constexpr size_t kMaxRecycledBytes = size_t{256} << 20;

// A vector of exactly `size` bytes with unspecified contents: the smallest kept vector whose
// capacity holds `size` (zeros are written only past its previous size), else a new one.
std::vector<uint8_t> TakeBytes(size_t size);

// Keeps `bytes`'s storage for a later TakeBytes on this thread when its capacity is in the
// kept range, replacing the smallest kept vector if the slots are full and it is smaller;
// frees it otherwise. `bytes` is left empty.
void RecycleBytes(std::vector<uint8_t>&& bytes);

// The bytes of the vectors this thread keeps (their capacities), for tests.
size_t RecycledBytesHeld();

}  // namespace docfeed::internal

#endif  // DOCFEED_BASE_RECYCLED_BYTES_H_
