#include "base/hash.h"

#include <xxhash.h>

#include "base/check.h"

namespace docfeed::internal {

uint64_t Hash64(std::span<const uint8_t> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

Hasher64::Hasher64() : state_(XXH3_createState()) {
  DOCFEED_CHECK(state_ != nullptr);
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}

Hasher64::~Hasher64() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void Hasher64::Update(std::span<const uint8_t> bytes) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), bytes.data(), bytes.size());
}

void Hasher64::Update(std::string_view text) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), text.data(), text.size());
}

uint64_t Hasher64::Digest() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

}  // namespace docfeed::internal
