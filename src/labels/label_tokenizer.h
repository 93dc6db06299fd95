// What pack needs from a Donut tokenizer folder, and the rule that picks the implementation:
// XlmRobertaTokenizer (sentencepiece.bpe.model, transformers 4.x slow-tokenizer ids) or
// FastTokenizer (tokenizer.json, Hugging Face `tokenizers` ids). See README.md, "Folders".
#ifndef DOCFEED_LABELS_LABEL_TOKENIZER_H_
#define DOCFEED_LABELS_LABEL_TOKENIZER_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/env.h"
#include "docfeed/status.h"

namespace docfeed::internal {

inline constexpr char kSentencePieceModelName[] = "sentencepiece.bpe.model";
inline constexpr char kTokenizerJsonName[] = "tokenizer.json";
inline constexpr char kTokenizerConfigName[] = "tokenizer_config.json";

// A token matched in the text before the model runs (Hugging Face `AddedToken`).
struct AddedTokenSpec {
  std::string content;
  int64_t id = 0;
  bool lstrip = false;  // eats whitespace on its left
  bool rstrip = false;  // eats whitespace on its right
  bool single_word = false;
  bool normalized = false;
  bool special = true;
};

// Thread safety: AddSpecialTokens is not thread-safe; every const method may run on many
// threads at once.
class LabelTokenizer {
 public:
  virtual ~LabelTokenizer() = default;

  // `add_special_tokens({"additional_special_tokens": tokens})`: each token not yet in the
  // vocabulary gets the next id (len(tokenizer)); tokens already in it keep their id and are no
  // longer split. Returns how many were new.
  virtual int AddSpecialTokens(const std::vector<std::string>& tokens) = 0;
  // `tokenizer(text, add_special_tokens=False)["input_ids"]`, untruncated.
  virtual Result<std::vector<int64_t>> Encode(std::string_view text) const = 0;
  // The id of a token (added token or vocabulary piece); nullopt if it would be split.
  virtual std::optional<int64_t> TokenToId(std::string_view token) const = 0;
  virtual size_t size() const = 0;  // len(tokenizer)
  virtual int64_t pad_id() const = 0;
  // Contents of the special added tokens.
  virtual std::vector<std::string> SpecialTokens() const = 0;
  // Writes the folder `save_pretrained` of the same transformers generation would write, so
  // that it loads there with the same ids, into `dir` (which must exist);
  // `model_max_length` goes into tokenizer_config.json.
  virtual Status Save(const std::string& dir, int model_max_length, Env* env) const = 0;
  // The names of the files Save writes.
  virtual std::vector<std::string> FileNames() const = 0;
};

struct LoadedTokenizer {
  std::unique_ptr<LabelTokenizer> tokenizer;
  std::string warning;  // non-empty: ids another transformers generation would give can differ
};

// The folder rule: DIR/tokenizer.json wins (AutoTokenizer loads it in 4.x and 5.x), read as the
// generation that wrote tokenizer_config.json would, with a warning for a 4.x folder that
// transformers 5 would rebuild differently; sentencepiece.bpe.model alone gives 4.x slow ids,
// with a warning when it is a BPE model (transformers 5 converts it to Unigram). NotFound when
// DIR has neither file; Unsupported / InvalidArgument name the file and field docfeed cannot
// reproduce or that disagree with each other.
Result<LoadedTokenizer> LoadLabelTokenizer(const std::string& dir, Env* env = nullptr);

// LabelTokenizer::AddSpecialTokens for both implementations: `impl` has `extra_special`
// (additional special tokens, in order), `added_index` (content -> index) and
// Put(AddedTokenSpec); `vocab_id(token)` is the token's id in the model's vocabulary, if any,
// and `next_id()` the id a new token gets (len(tokenizer)). Returns how many were new.
template <typename Impl, typename VocabId, typename NextId>
int AddSpecialTokensTo(Impl& impl, const std::vector<std::string>& tokens, const VocabId& vocab_id,
                       const NextId& next_id) {
  int added = 0;
  for (const std::string& t : tokens) {
    if (t.empty()) continue;
    if (std::find(impl.extra_special.begin(), impl.extra_special.end(), t) ==
        impl.extra_special.end()) {
      impl.extra_special.push_back(t);
    }
    if (impl.added_index.count(t) > 0) continue;
    const std::optional<int64_t> existing = vocab_id(t);
    if (!existing) ++added;
    impl.Put({t, existing ? *existing : next_id()});
  }
  return added;
}

}  // namespace docfeed::internal

#endif  // DOCFEED_LABELS_LABEL_TOKENIZER_H_
