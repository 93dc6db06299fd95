// An XLM-RoBERTa tokenizer over a SentencePiece BPE model, giving the ids Hugging Face
// `XLMRobertaTokenizer` (transformers 4.57) gives with `add_special_tokens=False`, and the
// `labels` tensor the Donut recipes build from them. See README.md for what is matched and the
// one place where the fast tokenizer differs.
#ifndef DOCFEED_LABELS_TOKENIZER_H_
#define DOCFEED_LABELS_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/env.h"
#include "docfeed/status.h"
#include "labels/label_tokenizer.h"

namespace docfeed::internal {

// The model type a SentencePiece model file was trained as (TrainerSpec.model_type).
enum class SentencePieceType { kUnigram, kBpe, kOther };

// Reads TrainerSpec.model_type from the serialized ModelProto (UNIGRAM when absent, as protobuf
// defaults it). InvalidArgument if the bytes are not a protobuf message.
Result<SentencePieceType> SentencePieceModelType(std::string_view model_bytes);
// NormalizerSpec.precompiled_charsmap of a serialized ModelProto ("" when absent), the bytes
// tokenizer.json's Precompiled normalizer holds in base64.
Result<std::string> SentencePieceCharsmap(std::string_view model_bytes);

// Ownership: owns the SentencePiece model. Thread safety: AddSpecialTokens is not thread-safe;
// every const method may run on many threads at once (SentencePiece encoding is const).
class XlmRobertaTokenizer final : public LabelTokenizer {
 public:
  // Loads DIR/sentencepiece.bpe.model and the added tokens of DIR/tokenizer_config.json
  // (`added_tokens_decoder`), DIR/added_tokens.json and DIR/special_tokens_map.json, as
  // `from_pretrained` does. NotFound names DIR when the model file is missing. Files are read
  // through `env` (Env::Default() when null); the model is loaded from its bytes.
  static Result<std::unique_ptr<XlmRobertaTokenizer>> Load(const std::string& dir,
                                                           Env* env = nullptr);
  // Just the model: `XLMRobertaTokenizer(vocab_file=path)`.
  static Result<std::unique_ptr<XlmRobertaTokenizer>> FromModelFile(const std::string& path,
                                                                    Env* env = nullptr);

  XlmRobertaTokenizer(const XlmRobertaTokenizer&) = delete;
  XlmRobertaTokenizer& operator=(const XlmRobertaTokenizer&) = delete;
  ~XlmRobertaTokenizer() override;

  // `add_special_tokens({"additional_special_tokens": tokens})`: each token not yet in the
  // vocabulary gets the next id (len(tokenizer)); tokens already in it keep their id and are no
  // longer split. Added with lstrip = rstrip = normalized = false. Returns how many were new.
  int AddSpecialTokens(const std::vector<std::string>& tokens) override;

  // `tokenizer(text, add_special_tokens=False)["input_ids"]`, untruncated.
  // InvalidArgument if SentencePiece refuses the text.
  Result<std::vector<int64_t>> Encode(std::string_view text) const override;

  // The id of a token (added token or vocabulary piece); nullopt if it would be split.
  std::optional<int64_t> TokenToId(std::string_view token) const override;

  size_t size() const override;  // len(tokenizer): vocabulary plus added tokens
  size_t vocab_size() const;     // SentencePiece pieces + fairseq offset + <mask>
  int64_t pad_id() const override { return 1; }
  // Contents of the special added tokens (`all_special_tokens` plus special added tokens).
  std::vector<std::string> SpecialTokens() const override;
  SentencePieceType model_type() const;
  // The SentencePiece pieces by SentencePiece id (XLM-R id = SentencePiece id + 1 from id 3).
  std::vector<std::string> Pieces() const;
  const std::vector<AddedTokenSpec>& added_tokens() const;  // by id

  // Writes what `save_pretrained` writes for the slow tokenizer into `dir` (which must exist):
  // the model, added_tokens.json, special_tokens_map.json, tokenizer_config.json.
  // `model_max_length` goes into tokenizer_config.json.
  Status Save(const std::string& dir, int model_max_length, Env* env = nullptr) const override;
  static std::vector<std::string> SavedFileNames();
  std::vector<std::string> FileNames() const override { return SavedFileNames(); }

 private:
  struct Impl;
  explicit XlmRobertaTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The Donut recipes' `labels`: input ids truncated to max_length, padded to it with the pad
// id (unless !pad_to_max_length), then every pad id replaced by ignore_id (-100), then, with a
// prompt-end token, positions [0, sum of the indices holding it] + 1 masked too, exactly as
// `labels[: torch.nonzero(labels == prompt_end_token_id).sum() + 1] = ignore_id`.
struct LabelShape {
  int max_length = 512;
  bool pad_to_max_length = true;
  int64_t pad_id = 1;
  int64_t ignore_id = -100;
  std::optional<int64_t> prompt_end_id;
};

struct LabelIds {
  std::vector<int64_t> labels;
  size_t token_count = 0;  // before truncation
  bool truncated = false;
};

LabelIds MakeLabels(std::vector<int64_t> input_ids, const LabelShape& shape);

}  // namespace docfeed::internal

#endif  // DOCFEED_LABELS_TOKENIZER_H_
