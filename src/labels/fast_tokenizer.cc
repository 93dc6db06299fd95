#include "labels/fast_tokenizer.h"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <utility>

#include "base/file.h"
#include "labels/text_pipeline.h"

namespace docfeed::internal {
namespace {

// A piece of the input: text for the pipeline, or an added token (index into `added`).
struct Piece {
  std::string text;
  int token = -1;
  bool at_origin = false;  // starts at byte 0 of the input (Metaspace "first")
};

}  // namespace

struct FastTokenizer::Impl {
  std::string where;  // the folder, for errors
  std::string warning;
  Json tokenizer_json;
  Json config;
  int generation = 4;
  TextPipeline pipeline;
  std::unique_ptr<SubwordModel> model;
  std::vector<AddedTokenSpec> added;  // by id
  std::unordered_map<std::string, size_t> added_index;
  std::vector<std::string> normalized_content;  // `added[i]` as matched (normalized if flagged)
  std::array<std::vector<size_t>, 256> raw_by_byte;   // not normalized, longest first
  std::array<std::vector<size_t>, 256> norm_by_byte;  // normalized, longest first
  std::vector<std::string> extra_special;             // additional/extra special tokens, in order
  size_t size = 0;

  std::optional<int64_t> TokenToId(std::string_view token) const {
    auto it = added_index.find(std::string(token));
    if (it != added_index.end()) return added[it->second].id;
    return model->PieceToId(token);
  }

  int64_t NextId() const {
    int64_t max_added = -1;
    for (const AddedTokenSpec& t : added) max_added = std::max(max_added, t.id);
    auto vocab = static_cast<int64_t>(model->size());
    return max_added >= vocab ? max_added + 1 : vocab;
  }

  void Put(AddedTokenSpec spec) {
    auto it = added_index.find(spec.content);
    if (it != added_index.end()) {
      added[it->second] = std::move(spec);
    } else {
      if (!model->PieceToId(spec.content)) ++size;
      added.push_back(std::move(spec));
    }
    Reindex();
  }

  void Reindex() {
    std::stable_sort(added.begin(), added.end(),
                     [](const AddedTokenSpec& a, const AddedTokenSpec& b) { return a.id < b.id; });
    added_index.clear();
    normalized_content.clear();
    for (auto& v : raw_by_byte) v.clear();
    for (auto& v : norm_by_byte) v.clear();
    for (size_t i = 0; i < added.size(); ++i) {
      added_index[added[i].content] = i;
      normalized_content.push_back(added[i].normalized ? pipeline.Normalize(added[i].content)
                                                       : added[i].content);
      const std::string& c = normalized_content.back();
      if (c.empty()) continue;
      (added[i].normalized ? norm_by_byte : raw_by_byte)[static_cast<uint8_t>(c[0])].push_back(i);
    }
    for (auto* table : {&raw_by_byte, &norm_by_byte}) {
      for (auto& v : *table) {
        std::stable_sort(v.begin(), v.end(), [&](size_t a, size_t b) {
          return normalized_content[a].size() > normalized_content[b].size();
        });
      }
    }
  }

  // AddedVocabulary::find_matches: leftmost-longest matches of one token set in `text`; a
  // single_word token is dropped unless it stands alone; lstrip/rstrip take the neighbouring
  // whitespace into the token (it is dropped).
  void SplitOn(const Piece& in, const std::array<std::vector<size_t>, 256>& table,
               std::vector<Piece>* out) const {
    const std::string& text = in.text;
    size_t piece_start = 0;
    for (size_t i = 0; i < text.size();) {
      int hit = -1;
      for (size_t t : table[static_cast<uint8_t>(text[i])]) {
        const std::string& c = normalized_content[t];
        if (text.compare(i, c.size(), c) == 0) {
          hit = static_cast<int>(t);
          break;
        }
      }
      if (hit < 0) {
        ++i;
        continue;
      }
      const AddedTokenSpec& tok = added[static_cast<size_t>(hit)];
      size_t start = i;
      size_t stop = i + normalized_content[static_cast<size_t>(hit)].size();
      i = stop;
      if (tok.single_word) {
        bool alone_left = !EndsWithWordChar(std::string_view(text).substr(0, start));
        bool alone_right = !StartsWithWordChar(std::string_view(text).substr(stop));
        if (!alone_left || !alone_right) continue;
      }
      if (tok.lstrip) {
        start = std::max(start - TrailingWhiteSpace(std::string_view(text).substr(0, start)),
                         piece_start);
      }
      if (tok.rstrip) stop += LeadingWhiteSpace(std::string_view(text).substr(stop));
      if (piece_start < start) {
        out->push_back(
            {text.substr(piece_start, start - piece_start), -1, in.at_origin && piece_start == 0});
      }
      out->push_back({"", hit, false});
      piece_start = stop;
      i = std::max(i, stop);
    }
    if (piece_start < text.size()) {
      out->push_back({text.substr(piece_start), -1, in.at_origin && piece_start == 0});
    }
  }
};

namespace {

AddedTokenSpec ParseAddedToken(const Json& t, int64_t id) {
  AddedTokenSpec spec{t.at("content").get<std::string>(), id};
  spec.lstrip = t.value("lstrip", false);
  spec.rstrip = t.value("rstrip", false);
  spec.single_word = t.value("single_word", false);
  spec.normalized = t.value("normalized", false);
  spec.special = t.value("special", false);
  return spec;
}

Json AddedTokenJson(const AddedTokenSpec& t, bool with_id) {
  Json j = Json::object();
  if (with_id) j["id"] = t.id;
  j["content"] = t.content;
  j["single_word"] = t.single_word;
  j["lstrip"] = t.lstrip;
  j["rstrip"] = t.rstrip;
  j["normalized"] = t.normalized;
  j["special"] = t.special;
  return j;
}

std::string TokenContent(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content")) return j.at("content").get<std::string>();
  return "";
}

// The special tokens tokenizer_config.json lists: additional_special_tokens (4.x) or
// extra_special_tokens as a list (5.x).
std::vector<std::string> ListedSpecialTokens(const Json& config) {
  std::vector<std::string> out;
  for (const char* key : {"additional_special_tokens", "extra_special_tokens"}) {
    if (!config.contains(key) || !config[key].is_array()) continue;
    for (const Json& t : config[key]) {
      std::string c = TokenContent(t);
      if (!c.empty() && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    }
  }
  return out;
}

}  // namespace

FastTokenizer::FastTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FastTokenizer::~FastTokenizer() = default;

Result<std::vector<int64_t>> FastTokenizer::Encode(std::string_view text) const {
  const Impl& impl = *impl_;
  if (!IsValidUtf8(text)) return InvalidArgumentError("text is not valid UTF-8");
  std::vector<Piece> raw;
  impl.SplitOn({std::string(text), -1, true}, impl.raw_by_byte, &raw);
  std::vector<int64_t> ids;
  for (Piece& p : raw) {
    if (p.token >= 0) {
      ids.push_back(impl.added[static_cast<size_t>(p.token)].id);
      continue;
    }
    p.text = impl.pipeline.Normalize(std::move(p.text));
    std::vector<Piece> normalized;
    impl.SplitOn(p, impl.norm_by_byte, &normalized);
    for (Piece& q : normalized) {
      if (q.token >= 0) {
        ids.push_back(impl.added[static_cast<size_t>(q.token)].id);
        continue;
      }
      for (const std::string& pre : impl.pipeline.PreTokenize(std::move(q.text), q.at_origin)) {
        DOCFEED_RETURN_IF_ERROR(impl.model->Encode(pre, &ids));
      }
    }
  }
  return ids;
}

int FastTokenizer::AddSpecialTokens(const std::vector<std::string>& tokens) {
  Impl& impl = *impl_;
  return AddSpecialTokensTo(
      impl, tokens, [&](const std::string& t) { return impl.model->PieceToId(t); },
      [&] { return impl.NextId(); });
}

std::optional<int64_t> FastTokenizer::TokenToId(std::string_view token) const {
  return impl_->TokenToId(token);
}
size_t FastTokenizer::size() const { return impl_->size; }
int64_t FastTokenizer::pad_id() const {
  std::string pad = "<pad>";
  if (impl_->config.is_object() && impl_->config.contains("pad_token") &&
      impl_->config["pad_token"].is_string()) {
    pad = impl_->config["pad_token"].get<std::string>();
  }
  return impl_->TokenToId(pad).value_or(1);
}
std::vector<std::string> FastTokenizer::SpecialTokens() const {
  std::vector<std::string> out;
  for (const AddedTokenSpec& t : impl_->added) {
    if (t.special) out.push_back(t.content);
  }
  return out;
}
int FastTokenizer::generation() const { return impl_->generation; }
const std::string& FastTokenizer::warning() const { return impl_->warning; }
const std::vector<AddedTokenSpec>& FastTokenizer::added_tokens() const { return impl_->added; }
std::vector<std::string> FastTokenizer::FileNames() const {
  return {kTokenizerJsonName, kTokenizerConfigName};
}

namespace {

// transformers 5 rebuilds XLMRobertaTokenizer from tokenizer.json's vocabulary and charsmap
// (models/xlm_roberta/tokenization_xlm_roberta.py, TokenizersBackend.convert_to_native_format):
// a pipeline other than that one would load differently there, so it is an error.
Status CheckRebuiltPipeline(const Json& tj, const Json& config, const std::string& file) {
  auto disagree = [&](const std::string& field, const std::string& want) {
    return InvalidArgumentError(
        file + ": " + field + " is not what transformers 5 builds for XLMRobertaTokenizer (" +
        want +
        "); it rebuilds the tokenizer from the vocabulary, so this file would load with "
        "other ids: save the tokenizer again with the transformers you train with");
  };
  const Json& n = tj.value("normalizer", Json());
  if (!n.is_null() && JsonType(n) != "Precompiled") return disagree("normalizer", "Precompiled");
  std::string scheme = config.value("add_prefix_space", true) ? "always" : "never";
  const Json& p = tj.value("pre_tokenizer", Json());
  bool ok = JsonType(p) == "Sequence" && p.at("pretokenizers").size() == 2 &&
            JsonType(p["pretokenizers"][0]) == "WhitespaceSplit" &&
            JsonType(p["pretokenizers"][1]) == "Metaspace" &&
            p["pretokenizers"][1].value("replacement", "") == kMetaspaceMark &&
            p["pretokenizers"][1].value("prepend_scheme", "") == scheme &&
            p["pretokenizers"][1].value("split", true);
  if (!ok) return disagree("pre_tokenizer", "WhitespaceSplit then Metaspace, " + scheme);
  const Json& m = tj.at("model");
  if (JsonType(m) != "Unigram") return disagree("model.type", "Unigram");
  if (m.value("unk_id", Json()) != Json(3) || m.value("byte_fallback", false)) {
    return disagree("model.unk_id/byte_fallback", "unk_id 3, no byte_fallback");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<FastTokenizer>> FastTokenizer::FromJson(std::string_view tokenizer_text,
                                                               std::string_view config_text,
                                                               const std::string& where) {
  const std::string file = JoinPath(where, kTokenizerJsonName);
  const std::string config_file = JoinPath(where, kTokenizerConfigName);
  auto impl = std::make_unique<Impl>();
  impl->where = where;
  try {
    impl->tokenizer_json = Json::parse(tokenizer_text);
    impl->config = config_text.empty() ? Json::object() : Json::parse(config_text);
  } catch (const Json::exception& e) {
    return InvalidArgumentError(where +
                                ": tokenizer.json or tokenizer_config.json is not valid "
                                "JSON: " +
                                e.what());
  }
  const Json& tj = impl->tokenizer_json;
  const Json& config = impl->config;
  try {
    if (!tj.is_object() || !config.is_object()) {
      return InvalidArgumentError(where +
                                  ": tokenizer.json or tokenizer_config.json is not a "
                                  "JSON object");
    }
    DOCFEED_ASSIGN_OR_RETURN(impl->model, ParseSubwordModel(tj.at("model"), file));
    impl->size = impl->model->size();
    DOCFEED_ASSIGN_OR_RETURN(impl->pipeline,
                             TextPipeline::Parse(tj.value("normalizer", Json()),
                                                 tj.value("pre_tokenizer", Json()), file));
    // 5.x marks its tokenizer_config.json with "backend" and lists extra_special_tokens.
    impl->generation = config.contains("backend") || (config.contains("extra_special_tokens") &&
                                                      config["extra_special_tokens"].is_array())
                           ? 5
                           : 4;
    const std::string cls = config.value("tokenizer_class", "");
    if (impl->generation == 5 && cls == "XLMRobertaTokenizer") {
      DOCFEED_RETURN_IF_ERROR(CheckRebuiltPipeline(tj, config, file));
    }
    if (impl->generation == 4 &&
        (cls == "XLMRobertaTokenizer" || cls == "XLMRobertaTokenizerFast") &&
        !CheckRebuiltPipeline(tj, config, file).ok()) {
      const bool bpe = JsonType(tj.at("model")) == "BPE";
      impl->warning =
          config_file + " was written by transformers 4.x: labels are the ids its AutoTokenizer " +
          "gives. " +
          (bpe ? "transformers 5 cannot load this tokenizer.json (it rebuilds "
                 "XLMRobertaTokenizer as a Unigram model, and a BPE vocabulary fails there)"
               : "transformers 5 rebuilds XLMRobertaTokenizer from tokenizer.json (normalizer "
                 "Precompiled only, then WhitespaceSplit and Metaspace) and can give other ids "
                 "(src/labels/README.md: <mask> after runs of whitespace)") +
          "; to train with 5.x, save the tokenizer with it and pack with --tokenizer pointing "
          "there";
    }
    for (const Json& t : tj.value("added_tokens", Json::array())) {
      impl->Put(ParseAddedToken(t, t.at("id").get<int64_t>()));
    }
  } catch (const Json::exception& e) {
    return InvalidArgumentError(file + ": unexpected content: " + e.what());
  }
  auto tok = std::unique_ptr<FastTokenizer>(new FastTokenizer(std::move(impl)));
  DOCFEED_RETURN_IF_ERROR(tok->ApplyConfig(config_file));
  return tok;
}

// tokenizer_config.json's added_tokens_decoder and listed special tokens, as from_pretrained
// adds them after loading tokenizer.json. A token both files name with different ids, or (5.x)
// an added token of tokenizer.json that the rebuilt tokenizer would not have, is an error.
Status FastTokenizer::ApplyConfig(const std::string& config_file) {
  Impl& impl = *impl_;
  const Json& config = impl.config;
  auto mismatch = [&](const std::string& token, const std::string& what) {
    return InvalidArgumentError(config_file + " and tokenizer.json disagree on '" + token +
                                "': " + what +
                                "; transformers would load another vocabulary than the "
                                "one this folder was saved with: save the tokenizer again");
  };
  try {
    if (config.contains("added_tokens_decoder")) {
      for (const auto& [key, t] : config["added_tokens_decoder"].items()) {
        AddedTokenSpec spec = ParseAddedToken(t, std::stoll(key));
        std::optional<int64_t> have = impl.TokenToId(spec.content);
        if (have && *have != spec.id) {
          return mismatch(spec.content, "id " + key + " there, " + std::to_string(*have) + " here");
        }
        if (!have && spec.id != impl.NextId()) {
          return mismatch(spec.content, "id " + key + " there, absent here");
        }
        if (impl.added_index.count(spec.content) == 0) impl.Put(std::move(spec));
      }
    }
    std::vector<std::string> listed = ListedSpecialTokens(config);
    if (impl.generation == 5) {
      for (const AddedTokenSpec& t : impl.added) {
        bool named = impl.model->PieceToId(t.content).has_value() ||
                     std::find(listed.begin(), listed.end(), t.content) != listed.end() ||
                     (config.contains("added_tokens_decoder") &&
                      config["added_tokens_decoder"].contains(std::to_string(t.id)));
        if (!named) {
          return mismatch(t.content, "an added token of tokenizer.json (id " +
                                         std::to_string(t.id) +
                                         ") that tokenizer_config.json does not list, so "
                                         "transformers 5 would drop it");
        }
      }
    }
    AddSpecialTokens(listed);
  } catch (const std::exception& e) {
    return InvalidArgumentError(config_file + ": unexpected content: " + e.what());
  }
  return Status::Ok();
}

Result<std::unique_ptr<FastTokenizer>> FastTokenizer::Load(const std::string& dir, Env* env) {
  env = EnvOrDefault(env);
  const std::string path = JoinPath(dir, kTokenizerJsonName);
  if (!env->PathExists(path)) return NotFoundError(path + ": no such file");
  DOCFEED_ASSIGN_OR_RETURN(std::string text, env->ReadTextFile(path));
  std::string config;
  const std::string config_path = JoinPath(dir, kTokenizerConfigName);
  if (env->PathExists(config_path)) {
    DOCFEED_ASSIGN_OR_RETURN(config, env->ReadTextFile(config_path));
  }
  return FromJson(text, config, dir);
}

Status FastTokenizer::Save(const std::string& dir, int model_max_length, Env* env) const {
  env = EnvOrDefault(env);
  const Impl& impl = *impl_;
  Json tj = impl.tokenizer_json;
  Json added = Json::array();
  for (const AddedTokenSpec& t : impl.added) added.push_back(AddedTokenJson(t, true));
  tj["added_tokens"] = added;
  Json config = impl.config;
  if (!config.contains("tokenizer_class")) config["tokenizer_class"] = "XLMRobertaTokenizer";
  config["model_max_length"] = model_max_length;
  if (impl.generation == 5) {
    config["extra_special_tokens"] = impl.extra_special;
  } else {
    Json decoder = Json::object();
    for (const AddedTokenSpec& t : impl.added) {
      decoder[std::to_string(t.id)] = AddedTokenJson(t, false);
    }
    config["added_tokens_decoder"] = decoder;
    config["additional_special_tokens"] = impl.extra_special;
  }
  DOCFEED_RETURN_IF_ERROR(
      env->WriteTextFile(JoinPath(dir, kTokenizerJsonName), tj.dump(2, ' ', false) + "\n"));
  return env->WriteTextFile(JoinPath(dir, kTokenizerConfigName), config.dump(2, ' ', false) + "\n");
}

}  // namespace docfeed::internal
