// The model step of a tokenizer.json pipeline: one pre-token to ids (Unigram or BPE).
#ifndef DOCFEED_LABELS_SUBWORD_MODEL_H_
#define DOCFEED_LABELS_SUBWORD_MODEL_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "docfeed/status.h"

namespace docfeed::internal {

// Immutable once built; every method is const and thread-safe.
class SubwordModel {
 public:
  virtual ~SubwordModel() = default;
  // Appends the ids of `piece` (one pre-token, valid UTF-8).
  virtual Status Encode(std::string_view piece, std::vector<int64_t>* ids) const = 0;
  virtual std::optional<int64_t> PieceToId(std::string_view piece) const = 0;
  virtual size_t size() const = 0;  // the model's vocabulary size
};

}  // namespace docfeed::internal

#endif  // DOCFEED_LABELS_SUBWORD_MODEL_H_
