// SentencePiece's precompiled normalization map (`precompiled_charsmap`, a double-array trie of
// rewrite rules plus the replacement strings) applied the way Hugging Face `tokenizers`
// applies its `Precompiled` normalizer, which is not quite how SentencePiece applies it: the text
// is walked by extended grapheme clusters, a cluster shorter than 6 bytes is rewritten whole by
// the shortest rule that matches a prefix of it, and any other cluster code point by code point.
// Followed: tokenizers/src/normalizers/precompiled.rs and the spm_precompiled crate 0.1.4
// (src/lib.rs: DoubleArray::common_prefix_search, Precompiled::transform), both Apache-2.0.
#ifndef DOCFEED_LABELS_PRECOMPILED_H_
#define DOCFEED_LABELS_PRECOMPILED_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/base64.h"
#include "docfeed/status.h"

namespace docfeed::internal {

// Immutable once parsed; Normalize is const and thread-safe.
class PrecompiledCharsmap {
 public:
  // `blob`: u32 little-endian trie size in bytes, the trie's u32 units, then the replacement
  // strings ('\0'-terminated). InvalidArgument when the sizes do not add up.
  static Result<PrecompiledCharsmap> Parse(std::string_view blob);

  // REQUIRES: `text` is valid UTF-8.
  std::string Normalize(std::string_view text) const;

 private:
  // The replacement of the shortest rule matching a prefix of `chunk`, as spm_precompiled's
  // `transform` (results[0] of the common-prefix search); nullopt if none.
  std::optional<std::string_view> Transform(std::string_view chunk) const;
  void AppendCluster(std::string_view cluster, std::string* out) const;

  std::vector<uint32_t> units_;
  std::string replacements_;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_LABELS_PRECOMPILED_H_
