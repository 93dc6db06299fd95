// Donut text targets: the `json2token` of the Donut fine-tuning recipes, turning a JSON ground
// truth into the string the decoder learns (`<s_key>value</s_key>`, `<sep/>` between list items,
// categorical `<value/>` tokens), and the registry of the new special tokens it introduces.
//
// Two recipes are in use and differ only in details that change token ids:
//   kNotebook  the public fine-tuning notebook: the whole JSON (or its `gt_parse`) is converted;
//              new tokens are added in first-seen order (`<s_k>` then `</s_k>`); a value `v`
//              becomes
//              `<v/>` only if `<v/>` was collected as a key tag before it.
//   kDonut     clovaai/donut `DonutDataset`: `gt_parse` (one target) or `gt_parses` (several)
//              is required; each key's pair is added as `sorted({<s_k>, </s_k>})` (so `</s_k>`
//              gets the lower id), then `sorted({start, prompt_end})`; `<v/>` is used when it is
//              any special token of the tokenizer or collected before.
//
// Usage: one TargetBuilder per dataset. Pass 1, in sample order on one thread: Collect() every
// sample (the categorical rule depends on what was collected before, exactly as the recipes'
// sequential loop), then FinishCollecting(). Pass 2, on any number of threads: Build() returns
// for each sample exactly what Collect() returned for it, without storing the targets.
#ifndef DOCFEED_LABELS_JSON2TOKEN_H_
#define DOCFEED_LABELS_JSON2TOKEN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "docfeed/status.h"

namespace docfeed::internal {

enum class TargetRecipe { kNotebook, kDonut };

// Parses "notebook" or "donut".
Result<TargetRecipe> ParseTargetRecipe(std::string_view name);

struct TargetOptions {
  TargetRecipe recipe = TargetRecipe::kNotebook;
  std::string start_token = "<s>";  // task start token prepended to every target
  std::string prompt_end_token;     // "" for none; added as a special token when set
  std::string eos_token = "</s>";   // appended to every target
  bool sort_keys = true;            // reverse-sorted keys (the recipes' default)
};

// Python's `str(float)` (repr): shortest round-trip digits, exponent form outside [1e-4, 1e16),
// `.0` for integral values, `inf`, `nan`.
std::string PythonFloatRepr(double value);

// Thread safety: Collect/FinishCollecting mutate and must not run concurrently with anything;
// Build and the accessors are const and may run on many threads once collecting is finished.
class TargetBuilder {
 public:
  // `tokenizer_special_tokens`: the special tokens the tokenizer already has (used by kDonut's
  // categorical rule).
  TargetBuilder(TargetOptions options, std::vector<std::string> tokenizer_special_tokens);

  // Pass 1. `ground_truth` is the JSON text of sample `sample` (ids strictly increasing).
  // Returns the target strings (one, or one per `gt_parses` item). InvalidArgument for malformed
  // JSON, a missing `gt_parse` (kDonut) or a non-string `text_sequence`; no token is recorded for
  // a sample that fails.
  Result<std::vector<std::string>> Collect(std::string_view ground_truth, uint64_t sample);

  // Appends the start and prompt-end tokens to the tokens to add.
  void FinishCollecting();

  // Pass 2. REQUIRES: FinishCollecting() was called and `sample` was collected.
  Result<std::vector<std::string>> Build(std::string_view ground_truth, uint64_t sample) const;

  // Every token the recipe passes to the tokenizer, in the order it adds them (some may already
  // be in the vocabulary; the tokenizer skips those).
  const std::vector<std::string>& tokens_to_add() const { return tokens_to_add_; }
  const TargetOptions& options() const { return options_; }

 private:
  struct Walk;
  Result<std::vector<std::string>> Run(std::string_view ground_truth, uint64_t sample,
                                       std::vector<std::string>* added) const;
  void Register(const std::vector<std::string>& tokens, uint64_t sample);

  TargetOptions options_;
  std::unordered_set<std::string> tokenizer_special_;
  std::unordered_map<std::string, uint64_t> first_seen_;  // token -> first sample
  std::vector<std::string> tokens_to_add_;
  bool finished_ = false;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_LABELS_JSON2TOKEN_H_
