#include "labels/tokenizer.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <variant>

#include "base/file.h"
#include "base/json.h"

namespace docfeed::internal {
namespace {

constexpr int64_t kFairseqOffset = 1;  // SentencePiece id i is XLM-R id i + 1 (i >= 3)
constexpr int64_t kUnkId = 3;
constexpr std::array<const char*, 4> kFairseqTokens = {"<s>", "<pad>", "</s>", "<unk>"};

// Decodes the code point ending at s[end) (or starting at s[begin]); invalid bytes count as
// one non-space unit, which is all the whitespace test needs.
uint32_t CodePointAt(std::string_view s, size_t begin, size_t* length) {
  auto b = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  uint8_t c = b(begin);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  if (begin + n > s.size()) n = 1;
  *length = n;
  if (n == 1) return c;
  uint32_t cp = c & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (b(begin + i) & 0x3F);
  return cp;
}

// Python's str.isspace(), which str.strip() uses.
bool IsPythonSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::string_view LStrip(std::string_view s) {
  while (!s.empty()) {
    size_t n = 0;
    if (!IsPythonSpace(CodePointAt(s, 0, &n))) break;
    s.remove_prefix(n);
  }
  return s;
}

std::string_view RStrip(std::string_view s) {
  while (!s.empty()) {
    size_t begin = s.size() - 1;
    while (begin > 0 && (static_cast<uint8_t>(s[begin]) & 0xC0) == 0x80) --begin;
    size_t n = 0;
    uint32_t cp = CodePointAt(s, begin, &n);
    if (begin + n != s.size() || !IsPythonSpace(cp)) break;
    s.remove_suffix(n);
  }
  return s;
}

// A piece of the input: text for SentencePiece, or an added token (index into added_).
struct Segment {
  std::string_view text;
  int token = -1;
};

}  // namespace

struct XlmRobertaTokenizer::Impl {
  sentencepiece::SentencePieceProcessor sp;
  std::string model_bytes;
  std::vector<AddedTokenSpec> added;  // ordered by id
  std::unordered_map<std::string, size_t> added_index;
  std::array<std::vector<size_t>, 256> by_first_byte;  // longest first
  size_t vocab_size = 0;
  size_t size = 0;                         // len(get_vocab())
  std::vector<std::string> extra_special;  // additional_special_tokens, in order

  std::optional<int64_t> VocabId(std::string_view token) const {
    for (size_t i = 0; i < kFairseqTokens.size(); ++i) {
      if (token == kFairseqTokens[i]) return static_cast<int64_t>(i);
    }
    if (token == "<mask>") return static_cast<int64_t>(vocab_size) - 1;
    // Pieces 0-2 (<unk>, <s>, </s>) are shadowed by the fairseq ids, as in get_vocab().
    int id = sp.PieceToId(token);
    if (id >= 3 && sp.IdToPiece(id) == token) return id + kFairseqOffset;
    return std::nullopt;
  }

  void Put(AddedTokenSpec spec) {
    auto it = added_index.find(spec.content);
    if (it != added_index.end()) {
      added[it->second] = std::move(spec);
    } else {
      if (!VocabId(spec.content) && static_cast<size_t>(spec.id) >= vocab_size) ++size;
      added_index[spec.content] = added.size();
      added.push_back(std::move(spec));
    }
    Reindex();
  }

  void Reindex() {
    std::stable_sort(added.begin(), added.end(),
                     [](const AddedTokenSpec& a, const AddedTokenSpec& b) { return a.id < b.id; });
    added_index.clear();
    for (auto& v : by_first_byte) v.clear();
    for (size_t i = 0; i < added.size(); ++i) {
      added_index[added[i].content] = i;
      if (added[i].content.empty()) continue;
      by_first_byte[static_cast<uint8_t>(added[i].content[0])].push_back(i);
    }
    for (auto& v : by_first_byte) {
      std::stable_sort(v.begin(), v.end(), [&](size_t a, size_t b) {
        return added[a].content.size() > added[b].content.size();
      });
    }
  }

  // Leftmost-longest match of the added tokens, as the slow tokenizer's trie and the fast
  // tokenizer's Aho-Corasick (LeftmostLongest) both do for non-overlapping token sets.
  std::vector<Segment> Split(std::string_view text) const {
    std::vector<Segment> out;
    size_t start = 0;
    for (size_t i = 0; i < text.size();) {
      int hit = -1;
      for (size_t t : by_first_byte[static_cast<uint8_t>(text[i])]) {
        const std::string& c = added[t].content;
        if (text.size() - i >= c.size() && std::memcmp(text.data() + i, c.data(), c.size()) == 0) {
          hit = static_cast<int>(t);
          break;
        }
      }
      if (hit < 0) {
        ++i;
        continue;
      }
      if (i > start) out.push_back({text.substr(start, i - start)});
      out.push_back({{}, hit});
      i += added[static_cast<size_t>(hit)].content.size();
      start = i;
    }
    if (start < text.size()) out.push_back({text.substr(start)});
    return out;
  }

  // PreTrainedTokenizer.tokenize: an rstrip token strips the next piece's left, an lstrip token
  // the previous piece's right (Python whitespace), in order.
  void StripAround(std::vector<Segment>& segs) const {
    for (size_t i = 0; i < segs.size(); ++i) {
      if (segs[i].token < 0) continue;
      const AddedTokenSpec& t = added[static_cast<size_t>(segs[i].token)];
      if (t.rstrip && i + 1 < segs.size() && segs[i + 1].token < 0) {
        segs[i + 1].text = LStrip(segs[i + 1].text);
      }
      if (t.lstrip && i > 0 && segs[i - 1].token < 0) segs[i - 1].text = RStrip(segs[i - 1].text);
    }
  }
};

XlmRobertaTokenizer::XlmRobertaTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
XlmRobertaTokenizer::~XlmRobertaTokenizer() = default;

Result<std::unique_ptr<XlmRobertaTokenizer>> XlmRobertaTokenizer::FromModelFile(
    const std::string& path, Env* env) {
  env = EnvOrDefault(env);
  if (!env->PathExists(path)) {
    return NotFoundError(path + ": no SentencePiece model file (" + kSentencePieceModelName + ")");
  }
  auto impl = std::make_unique<Impl>();
  DOCFEED_ASSIGN_OR_RETURN(impl->model_bytes, env->ReadTextFile(path));
  sentencepiece::util::Status st = impl->sp.LoadFromSerializedProto(impl->model_bytes);
  if (!st.ok()) return InvalidArgumentError(path + ": not a SentencePiece model: " + st.ToString());
  size_t pieces = static_cast<size_t>(impl->sp.GetPieceSize());
  impl->vocab_size = pieces + static_cast<size_t>(kFairseqOffset) + 1;
  impl->size = impl->vocab_size;
  for (size_t i = 0; i < kFairseqTokens.size(); ++i) {
    impl->Put({kFairseqTokens[i], static_cast<int64_t>(i)});
  }
  AddedTokenSpec mask{"<mask>", static_cast<int64_t>(impl->vocab_size) - 1};
  mask.lstrip = true;  // AddedToken(mask_token, lstrip=True, special=True)
  impl->Put(mask);
  return std::unique_ptr<XlmRobertaTokenizer>(new XlmRobertaTokenizer(std::move(impl)));
}

namespace {

Result<Json> ReadJsonIfPresent(Env* env, const std::string& path) {
  if (!env->PathExists(path)) return Json();
  DOCFEED_ASSIGN_OR_RETURN(std::string text, env->ReadTextFile(path));
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    return InvalidArgumentError(path + ": not valid JSON: " + e.what());
  }
}

std::string TokenContent(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content")) return j.at("content").get<std::string>();
  return "";
}

}  // namespace

Result<std::unique_ptr<XlmRobertaTokenizer>> XlmRobertaTokenizer::Load(const std::string& dir,
                                                                       Env* env) {
  env = EnvOrDefault(env);
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<XlmRobertaTokenizer> tok,
                           FromModelFile(JoinPath(dir, kSentencePieceModelName), env));
  Impl& impl = *tok->impl_;
  DOCFEED_ASSIGN_OR_RETURN(Json config,
                           ReadJsonIfPresent(env, JoinPath(dir, "tokenizer_config.json")));
  DOCFEED_ASSIGN_OR_RETURN(Json added, ReadJsonIfPresent(env, JoinPath(dir, "added_tokens.json")));
  DOCFEED_ASSIGN_OR_RETURN(Json map,
                           ReadJsonIfPresent(env, JoinPath(dir, "special_tokens_map.json")));
  try {
    if (config.is_object() && config.contains("added_tokens_decoder")) {
      for (const auto& [id, t] : config.at("added_tokens_decoder").items()) {
        AddedTokenSpec spec{t.at("content").get<std::string>(), std::stoll(id)};
        spec.lstrip = t.value("lstrip", false);
        spec.rstrip = t.value("rstrip", false);
        spec.single_word = t.value("single_word", false);
        spec.normalized = t.value("normalized", false);
        spec.special = t.value("special", false);
        impl.Put(std::move(spec));
      }
    }
    if (added.is_object()) {
      for (const auto& [content, id] : added.items()) {
        if (impl.added_index.count(content) == 0) impl.Put({content, id.get<int64_t>()});
      }
    }
    std::vector<std::string> extra;
    for (const Json* source : {&map, &config}) {
      if (!source->is_object() || !source->contains("additional_special_tokens")) continue;
      for (const Json& t : source->at("additional_special_tokens")) {
        std::string content = TokenContent(t);
        if (!content.empty() && std::find(extra.begin(), extra.end(), content) == extra.end()) {
          extra.push_back(content);
        }
      }
    }
    tok->AddSpecialTokens(extra);
  } catch (const std::exception& e) {
    return InvalidArgumentError(dir + ": unexpected tokenizer configuration: " + e.what());
  }
  return tok;
}

int XlmRobertaTokenizer::AddSpecialTokens(const std::vector<std::string>& tokens) {
  Impl& impl = *impl_;
  return AddSpecialTokensTo(
      impl, tokens, [&](const std::string& t) { return impl.VocabId(t); },
      [&] { return static_cast<int64_t>(impl.size); });
}

Result<std::vector<int64_t>> XlmRobertaTokenizer::Encode(std::string_view text) const {
  std::vector<Segment> segs = impl_->Split(text);
  impl_->StripAround(segs);
  std::vector<int64_t> out;
  std::vector<int> piece_ids;
  for (const Segment& s : segs) {
    if (s.token >= 0) {
      out.push_back(impl_->added[static_cast<size_t>(s.token)].id);
      continue;
    }
    if (s.text.empty()) continue;
    sentencepiece::util::Status st = impl_->sp.Encode(s.text, &piece_ids);
    if (!st.ok()) return InvalidArgumentError("SentencePiece: " + st.ToString());
    for (int id : piece_ids) out.push_back(id == 0 ? kUnkId : id + kFairseqOffset);
  }
  return out;
}

std::optional<int64_t> XlmRobertaTokenizer::TokenToId(std::string_view token) const {
  auto it = impl_->added_index.find(std::string(token));
  if (it != impl_->added_index.end()) return impl_->added[it->second].id;
  return impl_->VocabId(token);
}

size_t XlmRobertaTokenizer::size() const { return impl_->size; }

std::vector<std::string> XlmRobertaTokenizer::Pieces() const {
  std::vector<std::string> out;
  for (int i = 0; i < impl_->sp.GetPieceSize(); ++i) out.push_back(impl_->sp.IdToPiece(i));
  return out;
}

SentencePieceType XlmRobertaTokenizer::model_type() const {
  // The bytes already parsed as a model, so they parse as a message here.
  Result<SentencePieceType> type = SentencePieceModelType(impl_->model_bytes);
  return type.ok() ? *type : SentencePieceType::kOther;
}

namespace {

// A protobuf varint at `*at`; false past the end or beyond 64 bits.
bool ReadVarint(std::string_view s, size_t* at, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *at < s.size(); shift += 7) {
    auto b = static_cast<uint8_t>(s[(*at)++]);
    *v |= uint64_t{b & 0x7Fu} << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// The first field `number` of a message: its varint value (wire type 0) or its bytes (type 2).
// nullopt when absent; InvalidArgument when the bytes are not a message.
Result<std::optional<std::variant<uint64_t, std::string_view>>> FindField(std::string_view msg,
                                                                          uint64_t number) {
  size_t at = 0;
  while (at < msg.size()) {
    uint64_t tag = 0;
    uint64_t v = 0;
    if (!ReadVarint(msg, &at, &tag)) return InvalidArgumentError("not a protobuf message");
    uint64_t wire = tag & 7;
    size_t skip = 0;
    if (wire == 0) {
      if (!ReadVarint(msg, &at, &v)) return InvalidArgumentError("not a protobuf message");
      if ((tag >> 3) == number) return std::optional<std::variant<uint64_t, std::string_view>>(v);
    } else if (wire == 2) {
      if (!ReadVarint(msg, &at, &v) || v > msg.size() - at) {
        return InvalidArgumentError("not a protobuf message");
      }
      if ((tag >> 3) == number) {
        return std::optional<std::variant<uint64_t, std::string_view>>(msg.substr(at, v));
      }
      skip = v;
    } else if (wire == 1 || wire == 5) {
      skip = wire == 1 ? 8 : 4;
    } else {
      return InvalidArgumentError("not a protobuf message");
    }
    if (skip > msg.size() - at) return InvalidArgumentError("not a protobuf message");
    at += skip;
  }
  return std::optional<std::variant<uint64_t, std::string_view>>();
}

}  // namespace

Result<std::string> SentencePieceCharsmap(std::string_view model_bytes) {
  // ModelProto.normalizer_spec = 3; NormalizerSpec.precompiled_charsmap = 2.
  DOCFEED_ASSIGN_OR_RETURN(auto spec, FindField(model_bytes, 3));
  if (!spec || !std::holds_alternative<std::string_view>(*spec)) return std::string();
  DOCFEED_ASSIGN_OR_RETURN(auto map, FindField(std::get<std::string_view>(*spec), 2));
  if (!map || !std::holds_alternative<std::string_view>(*map)) return std::string();
  return std::string(std::get<std::string_view>(*map));
}

Result<SentencePieceType> SentencePieceModelType(std::string_view model_bytes) {
  // ModelProto.trainer_spec = 2; TrainerSpec.model_type = 3 (UNIGRAM = 1, BPE = 2).
  DOCFEED_ASSIGN_OR_RETURN(auto spec, FindField(model_bytes, 2));
  if (!spec || !std::holds_alternative<std::string_view>(*spec)) {
    return SentencePieceType::kUnigram;
  }
  DOCFEED_ASSIGN_OR_RETURN(auto type, FindField(std::get<std::string_view>(*spec), 3));
  if (!type || !std::holds_alternative<uint64_t>(*type)) return SentencePieceType::kUnigram;
  uint64_t t = std::get<uint64_t>(*type);
  return t == 1   ? SentencePieceType::kUnigram
         : t == 2 ? SentencePieceType::kBpe
                  : SentencePieceType::kOther;
}
size_t XlmRobertaTokenizer::vocab_size() const { return impl_->vocab_size; }
const std::vector<AddedTokenSpec>& XlmRobertaTokenizer::added_tokens() const {
  return impl_->added;
}

std::vector<std::string> XlmRobertaTokenizer::SpecialTokens() const {
  std::vector<std::string> out;
  for (const AddedTokenSpec& t : impl_->added) {
    if (t.special) out.push_back(t.content);
  }
  return out;
}

std::vector<std::string> XlmRobertaTokenizer::SavedFileNames() {
  return {kSentencePieceModelName, "added_tokens.json", "special_tokens_map.json",
          "tokenizer_config.json"};
}

Status XlmRobertaTokenizer::Save(const std::string& dir, int model_max_length, Env* env) const {
  env = EnvOrDefault(env);
  const Impl& impl = *impl_;
  DOCFEED_RETURN_IF_ERROR(
      env->WriteTextFile(JoinPath(dir, kSentencePieceModelName), impl.model_bytes));
  // Like save_pretrained: added_tokens.json holds the added tokens past the base vocabulary,
  // keys sorted; tokenizer_config.json every added token with its flags, by id.
  nlohmann::json added_vocab = nlohmann::json::object();
  Json decoder = Json::object();
  for (const AddedTokenSpec& t : impl.added) {
    if (static_cast<size_t>(t.id) >= impl.vocab_size) added_vocab[t.content] = t.id;
    decoder[std::to_string(t.id)] =
        Json{{"content", t.content}, {"lstrip", t.lstrip},           {"normalized", t.normalized},
             {"rstrip", t.rstrip},   {"single_word", t.single_word}, {"special", t.special}};
  }
  Json mask = Json{{"content", "<mask>"}, {"lstrip", true},       {"normalized", false},
                   {"rstrip", false},     {"single_word", false}, {"special", true}};
  Json map = Json{{"additional_special_tokens", impl.extra_special},
                  {"bos_token", "<s>"},
                  {"cls_token", "<s>"},
                  {"eos_token", "</s>"},
                  {"mask_token", mask},
                  {"pad_token", "<pad>"},
                  {"sep_token", "</s>"},
                  {"unk_token", "<unk>"}};
  Json config = Json{{"added_tokens_decoder", decoder},
                     {"additional_special_tokens", impl.extra_special},
                     {"bos_token", "<s>"},
                     {"clean_up_tokenization_spaces", true},
                     {"cls_token", "<s>"},
                     {"eos_token", "</s>"},
                     {"extra_special_tokens", Json::object()},
                     {"mask_token", "<mask>"},
                     {"model_max_length", model_max_length},
                     {"pad_token", "<pad>"},
                     {"sep_token", "</s>"},
                     {"sp_model_kwargs", Json::object()},
                     {"tokenizer_class", "XLMRobertaTokenizer"},
                     {"unk_token", "<unk>"}};
  DOCFEED_RETURN_IF_ERROR(env->WriteTextFile(JoinPath(dir, "added_tokens.json"),
                                             added_vocab.dump(2, ' ', false) + "\n"));
  DOCFEED_RETURN_IF_ERROR(
      env->WriteTextFile(JoinPath(dir, "special_tokens_map.json"), map.dump(2, ' ', false) + "\n"));
  return env->WriteTextFile(JoinPath(dir, "tokenizer_config.json"),
                            config.dump(2, ' ', false) + "\n");
}

LabelIds MakeLabels(std::vector<int64_t> input_ids, const LabelShape& shape) {
  LabelIds out;
  out.token_count = input_ids.size();
  size_t max_length = static_cast<size_t>(shape.max_length);
  out.truncated = input_ids.size() > max_length;
  if (out.truncated) input_ids.resize(max_length);
  if (shape.pad_to_max_length) input_ids.resize(max_length, shape.pad_id);
  for (int64_t& id : input_ids) {
    if (id == shape.pad_id) id = shape.ignore_id;
  }
  if (shape.prompt_end_id) {
    size_t index_sum = 0;
    for (size_t i = 0; i < input_ids.size(); ++i) {
      if (input_ids[i] == *shape.prompt_end_id) index_sum += i;
    }
    size_t end = std::min(index_sum + 1, input_ids.size());
    std::fill(input_ids.begin(), input_ids.begin() + static_cast<std::ptrdiff_t>(end),
              shape.ignore_id);
  }
  out.labels = std::move(input_ids);
  return out;
}

}  // namespace docfeed::internal
