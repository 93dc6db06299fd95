#include "labels/json2token.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "base/check.h"
#include "base/json.h"

namespace docfeed::internal {
namespace {

// Insertion-ordered, like Python's dict: the order matters when sort_keys is off.

std::string ScalarToString(const Json& j) {
  switch (j.type()) {
    case Json::value_t::string:
      return j.get<std::string>();
    case Json::value_t::boolean:
      return j.get<bool>() ? "True" : "False";
    case Json::value_t::number_integer:
      return std::to_string(j.get<int64_t>());
    case Json::value_t::number_unsigned:
      return std::to_string(j.get<uint64_t>());
    case Json::value_t::number_float:
      return PythonFloatRepr(j.get<double>());
    default:
      return "None";
  }
}

}  // namespace

Result<TargetRecipe> ParseTargetRecipe(std::string_view name) {
  if (name == "notebook") return TargetRecipe::kNotebook;
  if (name == "donut") return TargetRecipe::kDonut;
  return InvalidArgumentError("unknown target recipe '" + std::string(name) +
                              "' (expected notebook or donut)");
}

std::string PythonFloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, as Python's repr (David Gay's mode 0) produces.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, end);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  int exp10 = std::atoi(sci.c_str() + e + 1);
  if (exp10 < -4 || exp10 >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    std::string ex = std::to_string(std::abs(exp10));
    if (ex.size() < 2) ex = "0" + ex;
    return out + "e" + (exp10 < 0 ? "-" : "+") + ex;
  }
  if (exp10 < 0) return sign + "0." + std::string(static_cast<size_t>(-exp10 - 1), '0') + digits;
  size_t int_digits = static_cast<size_t>(exp10) + 1;
  if (digits.size() <= int_digits) {
    return sign + digits + std::string(int_digits - digits.size(), '0') + ".0";
  }
  return sign + digits.substr(0, int_digits) + "." + digits.substr(int_digits);
}

// One traversal of one sample. Mirrors the recipes' recursion exactly, including when a key's
// tags become known (before its value is converted).
struct TargetBuilder::Walk {
  const TargetBuilder& builder;
  uint64_t sample;
  std::vector<std::string>* added;          // tokens first added by this sample, in order
  std::unordered_set<std::string> local{};  // tokens added while walking this sample

  bool AddedBefore(const std::string& token) const {
    auto it = builder.first_seen_.find(token);
    return it != builder.first_seen_.end() && it->second < sample;
  }
  bool Known(const std::string& token) const {
    if (local.count(token) > 0 || AddedBefore(token)) return true;
    return builder.options_.recipe == TargetRecipe::kDonut &&
           builder.tokenizer_special_.count(token) > 0;
  }
  void Add(const std::string& token) {
    if (local.count(token) > 0 || AddedBefore(token)) return;
    local.insert(token);
    added->push_back(token);
  }
  void AddKey(const std::string& key) {
    std::string open = "<s_" + key + ">";
    std::string close = "</s_" + key + ">";
    if (builder.options_.recipe == TargetRecipe::kDonut) {
      Add(close);  // sorted({open, close}): '/' sorts before 's'
      Add(open);
    } else {
      Add(open);
      Add(close);
    }
  }

  Status Convert(const Json& obj, std::string* out) {
    if (obj.is_object()) {
      if (obj.size() == 1 && obj.contains("text_sequence")) {
        const Json& text = obj.at("text_sequence");
        if (!text.is_string()) return InvalidArgumentError("text_sequence is not a string");
        *out += text.get_ref<const std::string&>();
        return Status::Ok();
      }
      std::vector<const std::string*> keys;
      keys.reserve(obj.size());
      for (auto it = obj.begin(); it != obj.end(); ++it) keys.push_back(&it.key());
      if (builder.options_.sort_keys) {
        // Python sorts str by code point; byte order of UTF-8 is the same order.
        std::sort(keys.begin(), keys.end(),
                  [](const std::string* a, const std::string* b) { return *a > *b; });
      }
      for (const std::string* key : keys) {
        AddKey(*key);
        *out += "<s_" + *key + ">";
        DOCFEED_RETURN_IF_ERROR(Convert(obj.at(*key), out));
        *out += "</s_" + *key + ">";
      }
      return Status::Ok();
    }
    if (obj.is_array()) {
      for (size_t i = 0; i < obj.size(); ++i) {
        if (i > 0) *out += "<sep/>";
        DOCFEED_RETURN_IF_ERROR(Convert(obj[i], out));
      }
      return Status::Ok();
    }
    std::string value = ScalarToString(obj);
    std::string categorical = "<" + value + "/>";
    *out += Known(categorical) ? categorical : value;
    return Status::Ok();
  }
};

TargetBuilder::TargetBuilder(TargetOptions options, std::vector<std::string> tokenizer_special)
    : options_(std::move(options)),
      tokenizer_special_(tokenizer_special.begin(), tokenizer_special.end()) {}

Result<std::vector<std::string>> TargetBuilder::Run(std::string_view ground_truth, uint64_t sample,
                                                    std::vector<std::string>* added) const {
  Json doc;
  try {
    doc = Json::parse(ground_truth.begin(), ground_truth.end());
  } catch (const Json::exception& e) {
    return InvalidArgumentError(std::string("not valid JSON (or not UTF-8): ") + e.what());
  }
  std::vector<const Json*> parses;
  if (doc.is_object() && doc.contains("gt_parses")) {
    const Json& list = doc.at("gt_parses");
    if (!list.is_array()) return InvalidArgumentError("gt_parses is not a list");
    if (list.empty()) return InvalidArgumentError("gt_parses is empty");
    for (const Json& item : list) parses.push_back(&item);
  } else if (doc.is_object() && doc.contains("gt_parse")) {
    const Json& parse = doc.at("gt_parse");
    if (options_.recipe == TargetRecipe::kDonut && !parse.is_object()) {
      return InvalidArgumentError("gt_parse is not a JSON object");
    }
    parses.push_back(&parse);
  } else if (options_.recipe == TargetRecipe::kDonut) {
    return InvalidArgumentError("no gt_parse or gt_parses key");
  } else {
    parses.push_back(&doc);
  }
  Walk walk{*this, sample, added};
  std::vector<std::string> targets;
  for (const Json* parse : parses) {
    std::string target = options_.start_token;
    DOCFEED_RETURN_IF_ERROR(walk.Convert(*parse, &target));
    target += options_.eos_token;
    targets.push_back(std::move(target));
  }
  return targets;
}

void TargetBuilder::Register(const std::vector<std::string>& tokens, uint64_t sample) {
  for (const std::string& t : tokens) {
    if (first_seen_.emplace(t, sample).second) tokens_to_add_.push_back(t);
  }
}

Result<std::vector<std::string>> TargetBuilder::Collect(std::string_view ground_truth,
                                                        uint64_t sample) {
  DOCFEED_CHECK(!finished_);
  std::vector<std::string> added;
  DOCFEED_ASSIGN_OR_RETURN(std::vector<std::string> targets, Run(ground_truth, sample, &added));
  Register(added, sample);
  return targets;
}

void TargetBuilder::FinishCollecting() {
  DOCFEED_CHECK(!finished_);
  finished_ = true;
  std::vector<std::string> last = {options_.start_token};
  if (!options_.prompt_end_token.empty()) last.push_back(options_.prompt_end_token);
  if (options_.recipe == TargetRecipe::kDonut) {
    std::sort(last.begin(), last.end());  // the authors add sorted(set(...))
  }
  Register(last, UINT64_MAX);
}

Result<std::vector<std::string>> TargetBuilder::Build(std::string_view ground_truth,
                                                      uint64_t sample) const {
  DOCFEED_CHECK(finished_);
  std::vector<std::string> added;
  return Run(ground_truth, sample, &added);
}

}  // namespace docfeed::internal
