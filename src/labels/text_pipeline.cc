#include "labels/text_pipeline.h"

#include <unicode/uchar.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "labels/bpe.h"
#include "labels/unigram.h"

namespace docfeed::internal {
namespace {

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

}  // namespace

size_t TrailingWhiteSpace(std::string_view s) {
  size_t i = s.size();
  while (i > 0) {
    size_t prev = PrevStart(s, i);
    size_t n = 0;
    if (!IsWhiteSpace(DecodeAt(s, prev, &n))) break;
    i = prev;
  }
  return s.size() - i;
}

size_t LeadingWhiteSpace(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t n = 0;
    if (!IsWhiteSpace(DecodeAt(s, i, &n))) break;
    i += n;
  }
  return i;
}

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

bool StartsWithWordChar(std::string_view s) { return !s.empty() && IsWordChar(FirstChar(s)); }
bool EndsWithWordChar(std::string_view s) { return !s.empty() && IsWordChar(LastChar(s)); }

namespace {

// A pre-token on its way through the pre-tokenizers.
struct Piece {
  std::string text;
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
      if (step.strip_right) s.resize(s.size() - TrailingWhiteSpace(s));
      if (step.strip_left) s.erase(0, LeadingWhiteSpace(s));
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

void SplitWhitespace(const Piece& p, std::vector<Piece>* out) {
  std::string_view s = p.text;
  size_t start = 0;
  for (size_t i = 0; i < s.size();) {
    size_t n = 0;
    UChar32 c = DecodeAt(s, i, &n);
    if (IsWhiteSpace(c)) {
      if (i > start)
        out->push_back({std::string(s.substr(start, i - start)), p.at_origin && start == 0});
      start = i + n;
    }
    i += n;
  }
  if (start < s.size()) out->push_back({std::string(s.substr(start)), p.at_origin && start == 0});
}

void ApplyMetaspace(const PreTokenizerStep& step, Piece p, std::vector<Piece>* out) {
  std::string s = ReplaceAll(p.text, " ", step.replacement);
  bool starts = s.compare(0, step.replacement.size(), step.replacement) == 0;
  if (!starts && (step.prepend == PreTokenizerStep::Prepend::kAlways ||
                  (step.prepend == PreTokenizerStep::Prepend::kFirst && p.at_origin))) {
    s.insert(0, step.replacement);
  }
  if (!step.split) {
    if (!s.empty()) out->push_back({std::move(s), p.at_origin});
    return;
  }
  // MergedWithNext: every replacement starts a new piece.
  size_t start = 0;
  for (size_t i = step.replacement.size(); i <= s.size(); ++i) {
    if (i == s.size() || s.compare(i, step.replacement.size(), step.replacement) == 0) {
      if (i > start) out->push_back({s.substr(start, i - start), p.at_origin && start == 0});
      start = i;
    }
  }
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
  const std::string type = JsonType(j);
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
  const std::string type = JsonType(j);
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

}  // namespace

Result<std::unique_ptr<SubwordModel>> ParseSubwordModel(const Json& j, const std::string& file) {
  const std::string type = JsonType(j);
  if (type == "Unigram") return ParseUnigram(j, file);
  if (type == "BPE") return ParseBpe(j, file);
  return UnsupportedField(file, "model.type", "'" + type + "'", "Unigram and BPE");
}

Status UnsupportedField(const std::string& file, const std::string& field, const std::string& what,
                        const std::string& supported) {
  return UnsupportedError(file + ": " + field + " " + what + " is not supported (docfeed reads " +
                          supported + ")");
}

std::string JsonType(const Json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>()
                                                                      : "";
}

Result<TextPipeline> TextPipeline::Parse(const Json& normalizer, const Json& pre_tokenizer,
                                         const std::string& file) {
  TextPipeline p;
  DOCFEED_RETURN_IF_ERROR(ParseNormalizer(normalizer, file, "normalizer", &p.normalizers_));
  DOCFEED_RETURN_IF_ERROR(
      ParsePreTokenizer(pre_tokenizer, file, "pre_tokenizer", &p.pre_tokenizers_));
  return p;
}

std::string TextPipeline::Normalize(std::string s) const {
  for (const NormalizerStep& step : normalizers_) s = ApplyNormalizer(step, std::move(s));
  return s;
}

std::vector<std::string> TextPipeline::PreTokenize(std::string piece, bool at_origin) const {
  std::vector<Piece> pieces{{std::move(piece), at_origin}};
  for (const PreTokenizerStep& step : pre_tokenizers_) {
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
  std::vector<std::string> out;
  for (Piece& p : pieces) {
    if (!p.text.empty()) out.push_back(std::move(p.text));
  }
  return out;
}

}  // namespace docfeed::internal
