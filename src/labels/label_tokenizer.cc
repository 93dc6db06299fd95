#include "labels/label_tokenizer.h"

#include "base/file.h"
#include "labels/fast_tokenizer.h"
#include "labels/tokenizer.h"

namespace docfeed::internal {
namespace {

// A folder holding both files must hold one vocabulary: AutoTokenizer reads tokenizer.json, the
// slow XLMRobertaTokenizer (4.x) reads sentencepiece.bpe.model, and save_pretrained writes both
// from one tokenizer, SentencePiece id i at id i + 1 from i = 3 on.
Status CheckSameVocabulary(const FastTokenizer& fast, const std::string& dir,
                           const std::string& model_path, Env* env) {
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<XlmRobertaTokenizer> slow,
                           XlmRobertaTokenizer::FromModelFile(model_path, env));
  std::vector<std::string> pieces = slow->Pieces();
  for (size_t i = 3; i < pieces.size(); ++i) {
    std::optional<int64_t> id = fast.TokenToId(pieces[i]);
    if (id == static_cast<int64_t>(i) + 1) continue;
    return InvalidArgumentError(
        dir + ": tokenizer.json and " + kSentencePieceModelName +
        " hold different vocabularies ('" + pieces[i] + "' is id " +
        (id ? std::to_string(*id) : std::string("absent")) + " in tokenizer.json, " +
        std::to_string(i + 1) +
        " by the model file): AutoTokenizer reads tokenizer.json, the "
        "slow XLMRobertaTokenizer the model file; remove the stale one or save the tokenizer "
        "again");
  }
  return Status::Ok();
}

}  // namespace

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
    if (has_model) DOCFEED_RETURN_IF_ERROR(CheckSameVocabulary(*fast, dir, model_path, env));
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
