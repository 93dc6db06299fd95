#include "labels/fast_tokenizer.h"

#include <unicode/uchar.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <unordered_map>
#include <utility>

#include "base/file.h"
#include "labels/bpe.h"
#include "labels/precompiled.h"
#include "labels/unigram.h"

namespace docfeed::internal {
namespace {

constexpr char kMetaspaceMark[] = "\xe2\x96\x81";  // U+2581, the default Metaspace replacement

bool IsWhiteSpace(UChar32 c) { return u_isUWhiteSpace(c) != 0; }  // Rust char::is_whitespace, \s

// Rust regex \w: Alphabetic, Mark, Decimal_Number, Connector_Punctuation, Join_Control.
bool IsWordChar(UChar32 c) {
  int8_t t = u_charType(c);
  return u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || t == U_NON_SPACING_MARK ||
         t == U_ENCLOSING_MARK || t == U_COMBINING_SPACING_MARK || t == U_DECIMAL_DIGIT_NUMBER ||
         t == U_CONNECTOR_PUNCTUATION || u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL);
}

// UTF-8 helpers for text already checked by IsValidUtf8 (ICU's U8_ macros trip -Wconversion).
size_t CharLength(uint8_t lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

UChar32 DecodeAt(std::string_view s, size_t at, size_t* length) {
  auto lead = static_cast<uint8_t>(s[at]);
  size_t n = std::min(CharLength(lead), s.size() - at);
  *length = n;
  if (n == 1) return lead;
  UChar32 c = lead & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) c = (c << 6) | (static_cast<uint8_t>(s[at + i]) & 0x3F);
  return c;
}

// Start of the code point that ends at `end` (> 0).
size_t PrevStart(std::string_view s, size_t end) {
  size_t i = end - 1;
  while (i > 0 && (static_cast<uint8_t>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}

UChar32 FirstChar(std::string_view s) {
  size_t n = 0;
  return DecodeAt(s, 0, &n);
}

UChar32 LastChar(std::string_view s) {
  size_t n = 0;
  return DecodeAt(s, PrevStart(s, s.size()), &n);
}

// Byte length of the whitespace run ending `s` / starting `s`.
size_t TrailingSpace(std::string_view s) {
  size_t i = s.size();
  while (i > 0) {
    size_t prev = PrevStart(s, i);
    size_t n = 0;
    if (!IsWhiteSpace(DecodeAt(s, prev, &n))) break;
    i = prev;
  }
  return s.size() - i;
}

size_t LeadingSpace(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t n = 0;
    if (!IsWhiteSpace(DecodeAt(s, i, &n))) break;
    i += n;
  }
  return i;
}

// What Rust accepts as a str: no overlong forms, surrogates or code points past U+10FFFF.
bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    auto lead = static_cast<uint8_t>(s[i]);
    size_t n = CharLength(lead);
    if ((lead >= 0x80 && lead < 0xC2) || lead > 0xF4 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<uint8_t>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    size_t len = 0;
    UChar32 c = DecodeAt(s, i, &len);
    if ((n == 3 && (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))) ||
        (n == 4 && (c < 0x10000 || c > 0x10FFFF))) {
      return false;
    }
    i += n;
  }
  return true;
}

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

struct PreTokenizerStep {
  enum class Kind { kWhitespaceSplit, kMetaspace } kind = Kind::kMetaspace;
  std::string replacement = std::string(kMetaspaceMark);
  enum class Prepend { kAlways, kFirst, kNever } prepend = Prepend::kAlways;
  bool split = true;
};

// A piece of the input: text for the pipeline, or an added token (index into `added`).
struct Piece {
  std::string text;
  int token = -1;
  bool at_origin = false;  // starts at byte 0 of the input (Metaspace "first")
};

std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (!from.empty() && s.compare(i, from.size(), from) == 0) {
      out.append(to);
      i += from.size();
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

std::string ApplyNormalizer(const NormalizerStep& step, std::string s) {
  switch (step.kind) {
    case NormalizerStep::Kind::kPrecompiled:
      return step.charsmap->Normalize(s);
    case NormalizerStep::Kind::kStrip: {
      if (step.strip_right) s.resize(s.size() - TrailingSpace(s));
      if (step.strip_left) s.erase(0, LeadingSpace(s));
      return s;
    }
    case NormalizerStep::Kind::kReplace:
      break;
  }
  if (step.min_repeats == 0) return ReplaceAll(s, step.pattern, step.content);
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t n = 0;
    while (s.compare(i + n * step.pattern.size(), step.pattern.size(), step.pattern) == 0) ++n;
    if (n >= step.min_repeats) {
      out.append(step.content);
      i += n * step.pattern.size();
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

}  // namespace

struct FastTokenizer::Impl {
  std::string where;  // the folder, for errors
  std::string warning;
  Json tokenizer_json;
  Json config;
  int generation = 4;
  std::vector<NormalizerStep> normalizers;
  std::vector<PreTokenizerStep> pre_tokenizers;
  std::unique_ptr<SubwordModel> model;
  std::vector<AddedTokenSpec> added;  // by id
  std::unordered_map<std::string, size_t> added_index;
  std::vector<std::string> normalized_content;  // `added[i]` as matched (normalized if flagged)
  std::array<std::vector<size_t>, 256> raw_by_byte;   // not normalized, longest first
  std::array<std::vector<size_t>, 256> norm_by_byte;  // normalized, longest first
  std::vector<std::string> extra_special;             // additional/extra special tokens, in order
  size_t size = 0;

  std::string Normalize(std::string s) const {
    for (const NormalizerStep& step : normalizers) s = ApplyNormalizer(step, std::move(s));
    return s;
  }

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
      normalized_content.push_back(added[i].normalized ? Normalize(added[i].content)
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
        bool alone_left =
            start == 0 || !IsWordChar(LastChar(std::string_view(text).substr(0, start)));
        bool alone_right =
            stop == text.size() || !IsWordChar(FirstChar(std::string_view(text).substr(stop)));
        if (!alone_left || !alone_right) continue;
      }
      if (tok.lstrip) {
        start =
            std::max(start - TrailingSpace(std::string_view(text).substr(0, start)), piece_start);
      }
      if (tok.rstrip) stop += LeadingSpace(std::string_view(text).substr(stop));
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

  // Metaspace and WhitespaceSplit over one piece; empty pieces are dropped, as tokenizers does.
  std::vector<Piece> PreTokenize(Piece piece) const {
    std::vector<Piece> pieces{std::move(piece)};
    for (const PreTokenizerStep& step : pre_tokenizers) {
      std::vector<Piece> next;
      for (Piece& p : pieces) {
        if (step.kind == PreTokenizerStep::Kind::kWhitespaceSplit) {
          SplitWhitespace(p, &next);
        } else {
          ApplyMetaspace(step, std::move(p), &next);
        }
      }
      pieces = std::move(next);
    }
    return pieces;
  }

  static void SplitWhitespace(const Piece& p, std::vector<Piece>* out) {
    std::string_view s = p.text;
    size_t start = 0;
    for (size_t i = 0; i < s.size();) {
      size_t n = 0;
      UChar32 c = DecodeAt(s, i, &n);
      if (IsWhiteSpace(c)) {
        if (i > start)
          out->push_back({std::string(s.substr(start, i - start)), -1, p.at_origin && start == 0});
        start = i + n;
      }
      i += n;
    }
    if (start < s.size())
      out->push_back({std::string(s.substr(start)), -1, p.at_origin && start == 0});
  }

  static void ApplyMetaspace(const PreTokenizerStep& step, Piece p, std::vector<Piece>* out) {
    std::string s = ReplaceAll(p.text, " ", step.replacement);
    bool starts = s.compare(0, step.replacement.size(), step.replacement) == 0;
    if (!starts && (step.prepend == PreTokenizerStep::Prepend::kAlways ||
                    (step.prepend == PreTokenizerStep::Prepend::kFirst && p.at_origin))) {
      s.insert(0, step.replacement);
    }
    if (!step.split) {
      if (!s.empty()) out->push_back({std::move(s), -1, p.at_origin});
      return;
    }
    // MergedWithNext: every replacement starts a new piece.
    size_t start = 0;
    for (size_t i = step.replacement.size(); i <= s.size(); ++i) {
      if (i == s.size() || s.compare(i, step.replacement.size(), step.replacement) == 0) {
        if (i > start) out->push_back({s.substr(start, i - start), -1, p.at_origin && start == 0});
        start = i;
      }
    }
  }
};

namespace {

Status UnsupportedField(const std::string& file, const std::string& field, const std::string& what,
                        const std::string& supported) {
  return UnsupportedError(file + ": " + field + " " + what + " is not supported (docfeed reads " +
                          supported + ")");
}

std::string TypeOf(const Json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>()
                                                                      : "";
}

// Replace's pattern: {"String": s}, or {"Regex": r} where r is a literal or "c{n,}" / "c+".
Status ParseReplacePattern(const Json& pattern, const std::string& file, const std::string& field,
                           NormalizerStep* step) {
  if (pattern.contains("String")) {
    step->pattern = pattern["String"].get<std::string>();
    return Status::Ok();
  }
  std::string re = pattern.at("Regex").get<std::string>();
  auto is_meta = [](char c) { return std::strchr("\\.^$|?*+()[]{}", c) != nullptr; };
  if (!re.empty() && std::none_of(re.begin(), re.end(), is_meta)) {
    step->pattern = re;
    return Status::Ok();
  }
  size_t brace = re.find('{');
  if (re.size() >= 2 && !is_meta(re[0]) &&
      (re.substr(1) == "+" ||
       (brace == 1 && re.back() == '}' && re[re.size() - 2] == ',' && re.size() > 4 &&
        std::all_of(re.begin() + 2, re.end() - 2, [](char c) { return c >= '0' && c <= '9'; })))) {
    step->pattern = re.substr(0, 1);
    step->min_repeats = re[1] == '+' ? 1 : std::stoul(re.substr(2, re.size() - 4));
    if (step->min_repeats > 0) return Status::Ok();
  }
  return UnsupportedField(file, field + ".pattern", "Regex '" + re + "'",
                          "a literal or one character repeated, as \" {2,}\"");
}

Status ParseNormalizer(const Json& j, const std::string& file, const std::string& field,
                       std::vector<NormalizerStep>* out) {
  if (j.is_null()) return Status::Ok();
  const std::string type = TypeOf(j);
  NormalizerStep step;
  if (type == "Sequence") {
    const Json& list = j.at("normalizers");
    for (size_t i = 0; i < list.size(); ++i) {
      DOCFEED_RETURN_IF_ERROR(
          ParseNormalizer(list[i], file, field + ".normalizers[" + std::to_string(i) + "]", out));
    }
    return Status::Ok();
  }
  if (type == "Precompiled") {
    const Json& blob = j.at("precompiled_charsmap");
    if (blob.is_null()) return Status::Ok();  // an empty map rewrites nothing
    DOCFEED_ASSIGN_OR_RETURN(std::string bytes, DecodeBase64(blob.get<std::string>()));
    Result<PrecompiledCharsmap> map = PrecompiledCharsmap::Parse(bytes);
    if (!map.ok()) return map.status().WithContext(file + ": " + field);
    step.charsmap = std::make_shared<PrecompiledCharsmap>(std::move(map).value());
  } else if (type == "Strip") {
    step.kind = NormalizerStep::Kind::kStrip;
    step.strip_left = j.value("strip_left", false);
    step.strip_right = j.value("strip_right", false);
  } else if (type == "Replace") {
    step.kind = NormalizerStep::Kind::kReplace;
    step.content = j.at("content").get<std::string>();
    DOCFEED_RETURN_IF_ERROR(ParseReplacePattern(j.at("pattern"), file, field, &step));
  } else {
    return UnsupportedField(file, field, "type '" + type + "'",
                            "Precompiled, Strip, Replace and Sequence");
  }
  out->push_back(std::move(step));
  return Status::Ok();
}

Status ParsePreTokenizer(const Json& j, const std::string& file, const std::string& field,
                         std::vector<PreTokenizerStep>* out) {
  if (j.is_null()) return Status::Ok();
  const std::string type = TypeOf(j);
  PreTokenizerStep step;
  if (type == "Sequence") {
    const Json& list = j.at("pretokenizers");
    for (size_t i = 0; i < list.size(); ++i) {
      DOCFEED_RETURN_IF_ERROR(ParsePreTokenizer(
          list[i], file, field + ".pretokenizers[" + std::to_string(i) + "]", out));
    }
    return Status::Ok();
  }
  if (type == "WhitespaceSplit") {
    step.kind = PreTokenizerStep::Kind::kWhitespaceSplit;
  } else if (type == "Metaspace") {
    step.replacement = j.value("replacement", std::string(kMetaspaceMark));
    std::string scheme = j.contains("prepend_scheme")
                             ? j["prepend_scheme"].get<std::string>()
                             : (j.value("add_prefix_space", true) ? "always" : "never");
    if (scheme == "first") step.prepend = PreTokenizerStep::Prepend::kFirst;
    if (scheme == "never") step.prepend = PreTokenizerStep::Prepend::kNever;
    if (scheme != "always" && scheme != "first" && scheme != "never") {
      return UnsupportedField(file, field + ".prepend_scheme", "'" + scheme + "'",
                              "always, first and never");
    }
    step.split = j.value("split", true);
  } else {
    return UnsupportedField(file, field, "type '" + type + "'",
                            "Metaspace, WhitespaceSplit and Sequence");
  }
  out->push_back(std::move(step));
  return Status::Ok();
}

Result<std::unique_ptr<SubwordModel>> ParseUnigram(const Json& j, const std::string& file) {
  std::vector<std::pair<std::string, double>> pieces;
  for (const Json& p : j.at("vocab")) {
    pieces.emplace_back(p.at(0).get<std::string>(), p.at(1).get<double>());
  }
  std::optional<int64_t> unk;
  if (j.contains("unk_id") && !j["unk_id"].is_null()) unk = j["unk_id"].get<int64_t>();
  Result<UnigramModel> m =
      UnigramModel::Create(std::move(pieces), unk, j.value("byte_fallback", false));
  if (!m.ok()) return m.status().WithContext(file + ": model");
  return std::unique_ptr<SubwordModel>(new UnigramModel(std::move(m).value()));
}

Result<std::unique_ptr<SubwordModel>> ParseBpe(const Json& j, const std::string& file) {
  for (const char* field : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (j.contains(field) && !j[field].is_null() && !j[field].get<std::string>().empty()) {
      return UnsupportedField(file, std::string("model.") + field,
                              "'" + j[field].get<std::string>() + "'",
                              "BPE without subword prefix or suffix");
    }
  }
  if (j.contains("dropout") && !j["dropout"].is_null() && j["dropout"].get<double>() != 0) {
    return UnsupportedField(file, "model.dropout", "(random merges)", "BPE without dropout");
  }
  std::unordered_map<std::string, int64_t> vocab;
  for (const auto& [piece, id] : j.at("vocab").items()) vocab[piece] = id.get<int64_t>();
  std::vector<std::pair<std::string, std::string>> merges;
  for (const Json& m : j.at("merges")) {
    if (m.is_array()) {
      merges.emplace_back(m.at(0).get<std::string>(), m.at(1).get<std::string>());
      continue;
    }
    std::string line = m.get<std::string>();  // the legacy "a b" form
    size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
      return InvalidArgumentError(file + ": model.merges: '" + line + "' is not two tokens");
    }
    merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  BpeOptions options;
  if (j.contains("unk_token") && !j["unk_token"].is_null()) {
    options.unk_token = j["unk_token"].get<std::string>();
  }
  options.fuse_unk = j.value("fuse_unk", false);
  options.byte_fallback = j.value("byte_fallback", false);
  options.ignore_merges = j.value("ignore_merges", false);
  Result<BpeModel> m = BpeModel::Create(std::move(vocab), merges, std::move(options));
  if (!m.ok()) return m.status().WithContext(file + ": model");
  return std::unique_ptr<SubwordModel>(new BpeModel(std::move(m).value()));
}

Result<std::unique_ptr<SubwordModel>> ParseModel(const Json& j, const std::string& file) {
  const std::string type = TypeOf(j);
  if (type == "Unigram") return ParseUnigram(j, file);
  if (type == "BPE") return ParseBpe(j, file);
  return UnsupportedField(file, "model.type", "'" + type + "'", "Unigram and BPE");
}

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
    p.text = impl.Normalize(std::move(p.text));
    std::vector<Piece> normalized;
    impl.SplitOn(p, impl.norm_by_byte, &normalized);
    for (Piece& q : normalized) {
      if (q.token >= 0) {
        ids.push_back(impl.added[static_cast<size_t>(q.token)].id);
        continue;
      }
      for (const Piece& pre : impl.PreTokenize(std::move(q))) {
        DOCFEED_RETURN_IF_ERROR(impl.model->Encode(pre.text, &ids));
      }
    }
  }
  return ids;
}

int FastTokenizer::AddSpecialTokens(const std::vector<std::string>& tokens) {
  Impl& impl = *impl_;
  int added = 0;
  for (const std::string& t : tokens) {
    if (t.empty()) continue;
    if (std::find(impl.extra_special.begin(), impl.extra_special.end(), t) ==
        impl.extra_special.end()) {
      impl.extra_special.push_back(t);
    }
    if (impl.added_index.count(t) > 0) continue;
    std::optional<int64_t> existing = impl.model->PieceToId(t);
    if (!existing) ++added;
    impl.Put({t, existing ? *existing : impl.NextId()});
  }
  return added;
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
  if (!n.is_null() && TypeOf(n) != "Precompiled") return disagree("normalizer", "Precompiled");
  std::string scheme = config.value("add_prefix_space", true) ? "always" : "never";
  const Json& p = tj.value("pre_tokenizer", Json());
  bool ok = TypeOf(p) == "Sequence" && p.at("pretokenizers").size() == 2 &&
            TypeOf(p["pretokenizers"][0]) == "WhitespaceSplit" &&
            TypeOf(p["pretokenizers"][1]) == "Metaspace" &&
            p["pretokenizers"][1].value("replacement", "") == kMetaspaceMark &&
            p["pretokenizers"][1].value("prepend_scheme", "") == scheme &&
            p["pretokenizers"][1].value("split", true);
  if (!ok) return disagree("pre_tokenizer", "WhitespaceSplit then Metaspace, " + scheme);
  const Json& m = tj.at("model");
  if (TypeOf(m) != "Unigram") return disagree("model.type", "Unigram");
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
    DOCFEED_ASSIGN_OR_RETURN(impl->model, ParseModel(tj.at("model"), file));
    impl->size = impl->model->size();
    DOCFEED_RETURN_IF_ERROR(
        ParseNormalizer(tj.value("normalizer", Json()), file, "normalizer", &impl->normalizers));
    DOCFEED_RETURN_IF_ERROR(ParsePreTokenizer(tj.value("pre_tokenizer", Json()), file,
                                              "pre_tokenizer", &impl->pre_tokenizers));
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
      const bool bpe = TypeOf(tj.at("model")) == "BPE";
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
