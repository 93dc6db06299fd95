// The 64-bit checksum docfeed stores per sample: XXH3-64 (xxHash 0.8, seed 0).
// Chosen for speed (tens of GB/s) and a stable, documented output (see docs/format.md).
#ifndef DOCFEED_BASE_HASH_H_
#define DOCFEED_BASE_HASH_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace docfeed::internal {

uint64_t Hash64(std::span<const uint8_t> bytes);

// Incremental XXH3-64 over several pieces; equal to Hash64 of their concatenation.
class Hasher64 {
 public:
  Hasher64();
  ~Hasher64();
  Hasher64(const Hasher64&) = delete;
  Hasher64& operator=(const Hasher64&) = delete;

  void Update(std::span<const uint8_t> bytes);
  void Update(std::string_view text);
  uint64_t Digest() const;

 private:
  void* state_;  // XXH3_state_t*, kept opaque so xxhash.h stays out of this header.
};

}  // namespace docfeed::internal

#endif  // DOCFEED_BASE_HASH_H_
