// A Donut/XLM-R tokenizer read from tokenizer.json, giving the ids of Hugging Face `tokenizers`
// (the fast tokenizer of transformers 4.x, and the only backend of transformers 5.x) for
// `tokenizer(text, add_special_tokens=False)`:
//
//   text ─▶ added tokens not normalized (leftmost-longest; lstrip/rstrip/single_word)
//        ─▶ each other piece: normalizer (Precompiled, Strip, Replace) ─▶ normalized added tokens
//        ─▶ pre-tokenizer (WhitespaceSplit, Metaspace) ─▶ Unigram or BPE model ─▶ ids
//
// Followed: tokenizers/src/tokenizer/added_vocabulary.rs (find_matches, extract_and_normalize),
// pre_tokenizers/metaspace.rs and whitespace.rs, normalizers/strip.rs and replace.rs (v0.22.2,
// v0.23); the models in unigram.h and bpe.h. Anything else tokenizer.json may hold (a WordPiece
// or WordLevel model, other normalizers or pre-tokenizers, BPE dropout) is Unsupported, naming
// the file and the JSON field.
#ifndef DOCFEED_LABELS_FAST_TOKENIZER_H_
#define DOCFEED_LABELS_FAST_TOKENIZER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/env.h"
#include "base/json.h"
#include "labels/label_tokenizer.h"

namespace docfeed::internal {

// Ownership: owns the parsed model and the input JSON (rewritten by Save). Thread safety: as
// LabelTokenizer.
class FastTokenizer final : public LabelTokenizer {
 public:
  // Loads DIR/tokenizer.json and DIR/tokenizer_config.json (optional), as AutoTokenizer of the
  // transformers generation that wrote tokenizer_config.json would (README.md, "Folders").
  static Result<std::unique_ptr<FastTokenizer>> Load(const std::string& dir, Env* env = nullptr);
  // The same from the files' text; `config_text` may be empty. `where` prefixes errors.
  static Result<std::unique_ptr<FastTokenizer>> FromJson(std::string_view tokenizer_text,
                                                         std::string_view config_text,
                                                         const std::string& where);

  FastTokenizer(const FastTokenizer&) = delete;
  FastTokenizer& operator=(const FastTokenizer&) = delete;
  ~FastTokenizer() override;

  int AddSpecialTokens(const std::vector<std::string>& tokens) override;
  Result<std::vector<int64_t>> Encode(std::string_view text) const override;
  std::optional<int64_t> TokenToId(std::string_view token) const override;
  size_t size() const override;
  int64_t pad_id() const override;
  std::vector<std::string> SpecialTokens() const override;
  // tokenizer.json with the added tokens, and tokenizer_config.json in the layout of the
  // generation that wrote the input (5.x: extra_special_tokens; 4.x: added_tokens_decoder and
  // additional_special_tokens).
  Status Save(const std::string& dir, int model_max_length, Env* env) const override;
  std::vector<std::string> FileNames() const override;

  int generation() const;  // 4 or 5: the transformers that wrote tokenizer_config.json
  // Non-empty for a 4.x XLM-R folder that transformers 5 would rebuild with another pipeline.
  const std::string& warning() const;
  const std::vector<AddedTokenSpec>& added_tokens() const;  // by id

 private:
  struct Impl;
  explicit FastTokenizer(std::unique_ptr<Impl> impl);
  Status ApplyConfig(const std::string& config_file);
  std::unique_ptr<Impl> impl_;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_LABELS_FAST_TOKENIZER_H_
