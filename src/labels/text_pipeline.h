// The text steps tokenizer.json puts around its model, as Hugging Face `tokenizers` runs them:
// the normalizer (Precompiled, Strip, Replace, Sequence) and the pre-tokenizer (WhitespaceSplit,
// Metaspace, Sequence); the model (unigram.h, bpe.h) read from "model"; and the Unicode helpers
// that added tokens need (White_Space, word characters, UTF-8 as a Rust str).
// Followed: tokenizers/src/normalizers/{precompiled,strip,replace}.rs,
// pre_tokenizers/{metaspace,whitespace}.rs, tokenizer/pre_tokenizer.rs (PreTokenizedString::split
// drops empty pieces), v0.22.2 and v0.23, Apache-2.0.
#ifndef DOCFEED_LABELS_TEXT_PIPELINE_H_
#define DOCFEED_LABELS_TEXT_PIPELINE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"
#include "docfeed/status.h"
#include "labels/precompiled.h"
#include "labels/subword_model.h"

namespace docfeed::internal {

inline constexpr char kMetaspaceMark[] = "\xe2\x96\x81";  // U+2581, Metaspace's replacement

// What Rust accepts as a str: no overlong forms, surrogates or code points past U+10FFFF.
bool IsValidUtf8(std::string_view s);
// Bytes of the White_Space run (Rust char::is_whitespace, regex \s) starting / ending `s`.
// REQUIRES (all four): `s` is valid UTF-8.
size_t LeadingWhiteSpace(std::string_view s);
size_t TrailingWhiteSpace(std::string_view s);
// Whether `s` starts / ends with a Rust regex \w character; false when empty.
bool StartsWithWordChar(std::string_view s);
bool EndsWithWordChar(std::string_view s);

// The "type" of a tokenizer.json object ("" if none).
std::string JsonType(const Json& j);
// Unsupported, naming the file and JSON field and what docfeed reads instead.
Status UnsupportedField(const std::string& file, const std::string& field, const std::string& what,
                        const std::string& supported);

// One normalizer of tokenizer.json's "normalizer" (a Sequence is flattened).
struct NormalizerStep {
  enum class Kind { kPrecompiled, kStrip, kReplace } kind = Kind::kPrecompiled;
  std::shared_ptr<PrecompiledCharsmap> charsmap;
  bool strip_left = false;
  bool strip_right = false;
  std::string pattern;     // Replace: the literal, or the repeated character of "c{n,}"
  size_t min_repeats = 0;  // 0: `pattern` is a literal string
  std::string content;
};

// One pre-tokenizer of tokenizer.json's "pre_tokenizer" (a Sequence is flattened).
struct PreTokenizerStep {
  enum class Kind { kWhitespaceSplit, kMetaspace } kind = Kind::kMetaspace;
  std::string replacement = std::string(kMetaspaceMark);
  enum class Prepend { kAlways, kFirst, kNever } prepend = Prepend::kAlways;
  bool split = true;
};

// Immutable once parsed; const methods are thread-safe.
class TextPipeline {
 public:
  // From tokenizer.json's "normalizer" and "pre_tokenizer" (either may be null). Unsupported
  // names `file` and the field of anything else.
  static Result<TextPipeline> Parse(const Json& normalizer, const Json& pre_tokenizer,
                                    const std::string& file);

  // REQUIRES: valid UTF-8.
  std::string Normalize(std::string s) const;
  // The pre-tokens of one normalized piece, empty ones dropped; `at_origin`: the piece starts
  // the input (Metaspace's "first" scheme prepends only there).
  std::vector<std::string> PreTokenize(std::string piece, bool at_origin) const;

  const std::vector<NormalizerStep>& normalizers() const { return normalizers_; }

 private:
  std::vector<NormalizerStep> normalizers_;
  std::vector<PreTokenizerStep> pre_tokenizers_;
};

// tokenizer.json's "model": Unigram or BPE; Unsupported naming "model.type" otherwise.
Result<std::unique_ptr<SubwordModel>> ParseSubwordModel(const Json& model, const std::string& file);

}  // namespace docfeed::internal

#endif  // DOCFEED_LABELS_TEXT_PIPELINE_H_
