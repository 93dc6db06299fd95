// The BPE model of Hugging Face `tokenizers` (tokenizer.json "model": {"type": "BPE"}), which
// transformers 4.x writes for a BPE SentencePiece model such as Donut's: a pre-token is split
// into code points (unknown ones become the unk token, consecutive ones fused with fuse_unk, or
// their <0xNN> bytes with byte_fallback), then adjacent pairs are merged, lowest merge rank
// first and leftmost first among equal ranks, until no listed pair is left.
// Followed: tokenizers/src/models/bpe/model.rs (BpeBuilder::build, merge_word,
// tokenize_with_cache) and word.rs (Word::merge_all, Merge's ordering), v0.22.2, Apache-2.0.
#ifndef DOCFEED_LABELS_BPE_H_
#define DOCFEED_LABELS_BPE_H_

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

struct BpeOptions {
  std::optional<std::string> unk_token;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;  // a pre-token found whole in the vocabulary is not merged
};

class BpeModel final : public SubwordModel {
 public:
  // `merges` in rank order. InvalidArgument naming the token when a merge's parts or result are
  // not in `vocab` (tokenizers' MergeTokenOutOfVocabulary).
  static Result<BpeModel> Create(std::unordered_map<std::string, int64_t> vocab,
                                 const std::vector<std::pair<std::string, std::string>>& merges,
                                 BpeOptions options);

  Status Encode(std::string_view piece, std::vector<int64_t>* ids) const override;
  std::optional<int64_t> PieceToId(std::string_view piece) const override;
  size_t size() const override { return vocab_.size(); }

 private:
  BpeModel() = default;
  // The symbols of `piece` before any merge: (id, byte length) per code point, as merge_word.
  std::vector<int64_t> InitialSymbols(std::string_view piece) const;

  std::unordered_map<std::string, int64_t> vocab_;
  // (left id << 32 | right id) -> (rank, merged id).
  std::unordered_map<uint64_t, std::pair<uint32_t, int64_t>> merges_;
  BpeOptions options_;
  std::optional<int64_t> unk_id_;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_LABELS_BPE_H_
