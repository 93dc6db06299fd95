// Parts of a pack (`docfeed pack SRC --part I/N`): which contiguous slice of the source's listing
// part I of N holds, and the record (docs/format.md section 16) that lets `merge` check that N
// parts come from the same source with the same settings. A slice depends only on the listing's
// length and N, and the listing only on SRC (metadata.jsonl order, or sorted relative paths), so
// any machine packs the same slice for the same SRC and N.
#ifndef DOCFEED_PACK_PART_H_
#define DOCFEED_PACK_PART_H_

#include <cstdint>
#include <string>

#include "base/env.h"
#include "docfeed/pack.h"
#include "docfeed/status.h"
#include "format/manifest.h"
#include "pack/image_folder.h"

namespace docfeed::internal {

struct PackOptions;

// Which part of a split pack a run writes; count 0 means the whole source.
struct PackPart {
  uint32_t index = 0;  // 0-based, < count
  uint32_t count = 0;

  bool is_part() const { return count > 0; }
};

// The most parts a pack may be split into.
inline constexpr uint32_t kMaxParts = 1'000'000;

// Parses "I/N" (0 <= I < N <= kMaxParts); InvalidArgument naming the text otherwise.
Result<PackPart> ParsePackPart(const std::string& text);

// The slice [first, end) of `total` listed samples that part `part` holds: floor(I * total / N)
// up to floor((I + 1) * total / N). Consecutive parts tile [0, total).
// REQUIRES: part.is_part(), part.index < part.count.
struct PartSlice {
  uint64_t first = 0;
  uint64_t end = 0;
};
PartSlice SliceOf(uint64_t total, const PackPart& part);

// XXH3-64 over what the listing says about each sample, in order: its stored name, document page,
// metadata line, dataset row, whether it is a bad row, and its column values (with the column
// names and types); nothing that depends on where the source lies on disk.
uint64_t ListingHash(const ImageFolder& listing);

// The part record a run of `options` writes for a source whose listing is `listing`.
// REQUIRES: options.part.is_part().
PartInfo MakePartInfo(const PackOptions& options, const ImageFolder& listing);

// A rerun of a part whose output exists: OK with the kept part's summary (already_complete, the
// counts from its manifest) when `output` holds the part `want` describes and verifies.
// AlreadyExists naming the field when it holds something else (another part, source or
// settings, or no docfeed dataset); Corruption when it is this part but fails verification.
// Either error says to pass --overwrite. REQUIRES: the caller holds `output`'s lock.
Result<docfeed::PackSummary> KeepCompletePart(Env* env, const std::string& output,
                                              const PartInfo& want);

// The field of two part records that differs ("index", "count", "source", "settings.KEY"...),
// with both values; "" when they are equal.
std::string PartDifference(const PartInfo& a, const PartInfo& b);

}  // namespace docfeed::internal

#endif  // DOCFEED_PACK_PART_H_
