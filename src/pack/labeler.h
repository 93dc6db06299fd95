// Donut labels at pack time: for each sample, the target string (json2token of its JSON ground
// truth) and the `labels` ids the recipe's tokenizer call gives, appended as the columns
// `labels` (list<int64>) and `target_sequence` (string); and the tokenizer extended with the
// new tokens, saved beside the shards so the model's embedding resize uses the same ids.
//
// Two passes, as the recipes do: Create() walks every sample's ground truth in order to collect
// the new special tokens (the categorical rule depends on that order) and adds them to the
// tokenizer; Make() then runs per sample on the encode workers.
#ifndef DOCFEED_PACK_LABELER_H_
#define DOCFEED_PACK_LABELER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "docfeed/status.h"
#include "format/value.h"
#include "labels/json2token.h"
#include "labels/label_tokenizer.h"
#include "labels/tokenizer.h"
#include "pack/image_folder.h"

namespace docfeed::internal {

inline constexpr char kLabelsColumn[] = "labels";
inline constexpr char kTargetSequenceColumn[] = "target_sequence";
inline constexpr char kTokenizerDirName[] = "tokenizer";

struct LabelOptions {
  std::string tokenizer_dir;  // "" disables labels
  std::string target_field = "ground_truth";
  TargetOptions target;
  int max_length = 512;
  bool pad_to_max_length = true;  // the recipes pad to max_length (then pad -> -100)
  bool strict = false;            // a target longer than max_length is an error, not truncated
  Env* env = nullptr;  // reads the tokenizer, writes the extended one (Env::Default() when null)
};

// Thread safety: Make() may run on many threads; nothing else may run concurrently with it.
class Labeler {
 public:
  // Loads the tokenizer and collects the new tokens over `folder`. InvalidArgument if the
  // target field is not a string column or the output columns already exist; NotFound if the
  // tokenizer folder has neither tokenizer.json nor sentencepiece.bpe.model; Unsupported or
  // InvalidArgument for a folder docfeed cannot reproduce (labels/label_tokenizer.h).
  static Result<std::unique_ptr<Labeler>> Create(const LabelOptions& options,
                                                 const ImageFolder& folder);

  // The `labels` and `target_sequence` values of sample `i`. InvalidArgument naming the field
  // for a missing or malformed ground truth, or (strict) a target longer than max_length.
  Result<std::vector<Value>> Make(size_t i, const SourceSample& sample) const;

  static std::vector<ColumnSpec> Columns();
  // Writes the extended tokenizer into `dir`/tokenizer/; returns the written files' names
  // relative to `dir`.
  Result<std::vector<std::string>> SaveTokenizer(const std::string& dir) const;
  std::vector<std::string> TokenizerFileNames() const;

  uint64_t truncated() const { return truncated_.load(); }
  size_t new_tokens() const { return new_tokens_; }
  size_t tokenizer_size() const { return tokenizer_->size(); }
  // Non-empty when another transformers generation could give other ids (LoadLabelTokenizer).
  const std::string& tokenizer_warning() const { return tokenizer_warning_; }

 private:
  Labeler(const LabelOptions& options, std::unique_ptr<LabelTokenizer> tokenizer,
          size_t target_column);

  LabelOptions options_;
  std::unique_ptr<LabelTokenizer> tokenizer_;
  std::string tokenizer_warning_;
  std::unique_ptr<TargetBuilder> targets_;
  size_t target_column_;
  LabelShape shape_;
  size_t new_tokens_ = 0;
  mutable std::atomic<uint64_t> truncated_{0};
};

}  // namespace docfeed::internal

#endif  // DOCFEED_PACK_LABELER_H_
