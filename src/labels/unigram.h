// The Unigram model of Hugging Face `tokenizers` (tokenizer.json "model": {"type": "Unigram"}):
// the best-scoring segmentation of a pre-tokenized piece (Viterbi), ties kept by the first
// candidate found (shorter pieces first at one start, earlier starts first), a code point with
// no single-character piece scored as unknown (lowest score - 10), runs of unknowns fused into one
// token, then each token's id (unk_id, or its UTF-8 bytes as <0xNN> pieces with byte_fallback).
// Followed: tokenizers/src/models/unigram/model.rs (Unigram::from, encode_optimized, tokenize),
// v0.22.2 and v0.23, Apache-2.0.
#ifndef DOCFEED_LABELS_UNIGRAM_H_
#define DOCFEED_LABELS_UNIGRAM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "docfeed/status.h"
#include "labels/subword_model.h"

namespace docfeed::internal {

// Immutable once built; Encode is const and thread-safe.
class UnigramModel final : public SubwordModel {
 public:
  // `pieces` in id order; InvalidArgument if empty or unk_id is out of range.
  static Result<UnigramModel> Create(std::vector<std::pair<std::string, double>> pieces,
                                     std::optional<int64_t> unk_id, bool byte_fallback);

  // Appends the ids of `piece` (one pre-token). InvalidArgument when a code point has no piece
  // and the model has no unk_id (tokenizers' MissingUnkId).
  Status Encode(std::string_view piece, std::vector<int64_t>* ids) const override;

  std::optional<int64_t> PieceToId(std::string_view piece) const override;
  const std::string& IdToPiece(int64_t id) const { return pieces_[static_cast<size_t>(id)].first; }
  size_t size() const override { return pieces_.size(); }
  std::optional<int64_t> unk_id() const { return unk_id_; }
  bool byte_fallback() const { return byte_fallback_; }

 private:
  UnigramModel() = default;
  // Ends (exclusive, in bytes) of the pieces starting at `begin`, shortest first, with their ids.
  void PrefixMatches(std::string_view text, size_t begin,
                     std::vector<std::pair<size_t, int64_t>>* out) const;
  void AppendTokenIds(std::string_view token, std::vector<int64_t>* ids) const;

  std::vector<std::pair<std::string, double>> pieces_;
  std::unordered_map<std::string, int64_t> ids_;  // a repeated piece maps to its last id
  // The pieces as a byte trie: (node << 8 | byte) -> child node; node 0 is the root.
  std::unordered_map<uint64_t, uint32_t> trie_;
  std::vector<int64_t> node_piece_;  // piece id ending at a node, or -1
  double min_score_ = 0;
  std::optional<int64_t> unk_id_;
  bool byte_fallback_ = false;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_LABELS_UNIGRAM_H_
