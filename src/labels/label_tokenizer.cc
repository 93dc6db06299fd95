#include "labels/label_tokenizer.h"

#include "base/file.h"
#include "labels/fast_tokenizer.h"
#include "labels/tokenizer.h"

namespace docfeed::internal {

Result<LoadedTokenizer> LoadLabelTokenizer(const std::string& dir, Env* env) {
  env = EnvOrDefault(env);
  const std::string json_path = JoinPath(dir, kTokenizerJsonName);
  const std::string model_path = JoinPath(dir, kSentencePieceModelName);
  const bool has_json = env->PathExists(json_path);
  const bool has_model = env->PathExists(model_path);
  if (!has_json && !has_model) {
    return NotFoundError(dir + ": no tokenizer.json or " + kSentencePieceModelName +
                         " (--tokenizer takes a folder saved by save_pretrained)");
  }
  LoadedTokenizer out;
  if (has_json) {
    DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<FastTokenizer> fast, FastTokenizer::Load(dir, env));
    out.warning = fast->warning();
    out.tokenizer = std::move(fast);
    return out;
  }
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<XlmRobertaTokenizer> tok,
                           XlmRobertaTokenizer::Load(dir, env));
  if (tok->model_type() == SentencePieceType::kBpe) {
    out.warning = model_path +
                  " is a BPE SentencePiece model: labels are transformers 4.x "
                  "XLMRobertaTokenizer ids; transformers 5 converts this file to a Unigram "
                  "tokenizer whose ids can differ. To train with 5.x, save the tokenizer with it "
                  "(AutoTokenizer.from_pretrained(DIR).save_pretrained(NEW)) and pack with "
                  "--tokenizer NEW";
  }
  out.tokenizer = std::move(tok);
  return out;
}

}  // namespace docfeed::internal
