// labels_probe IN.json OUT.json: runs docfeed's json2token, tokenizer and label shaping on the
// inputs of IN.json so tests/python/test_labels_parity.py can compare them with transformers.
//
// IN: {"json2token": {"recipe", "start", "prompt_end", "special": [...], "docs": [...]},
//      "tokenize": {"tokenizer": DIR, "add": [...], "texts": [...], "max_length": N (optional),
//                   "prompt_end": T (optional), "bench_reps": R (optional),
//                   "save": OUT_DIR (optional: the extended tokenizer is saved there)}}
// OUT: {"json2token": {"targets": [[...] | {"error": ...}], "tokens_to_add": [...]},
//       "tokenize": {"ids": [[...]], "labels": [[...]], "size": N, "token_ids": {...},
//                    "warning": W, "saved": [files] | {"error"}, "bench_seconds": S,
//                    "bench_labels": K} | {"error": ...}}
// DIR goes through LoadLabelTokenizer, the folder rule pack uses.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "labels/json2token.h"
#include "labels/label_tokenizer.h"
#include "labels/tokenizer.h"

namespace docfeed::internal {
namespace {

using Json = nlohmann::json;

Json RunJson2Token(const Json& in) {
  TargetOptions o;
  o.recipe = *ParseTargetRecipe(in.value("recipe", "notebook"));
  o.start_token = in.value("start", "<s>");
  o.prompt_end_token = in.value("prompt_end", "");
  o.sort_keys = in.value("sort_keys", true);
  TargetBuilder b(o, in.value("special", std::vector<std::string>{}));
  Json targets = Json::array();
  for (size_t i = 0; i < in.at("docs").size(); ++i) {
    Result<std::vector<std::string>> r = b.Collect(in["docs"][i].get<std::string>(), i);
    targets.push_back(r.ok() ? Json(*r) : Json{{"error", r.status().ToString()}});
  }
  b.FinishCollecting();
  return {{"targets", targets}, {"tokens_to_add", b.tokens_to_add()}};
}

Json RunTokenize(const Json& in) {
  auto loaded = LoadLabelTokenizer(in.at("tokenizer").get<std::string>());
  if (!loaded.ok()) return {{"error", loaded.status().ToString()}};
  LabelTokenizer* tok = loaded->tokenizer.get();
  tok->AddSpecialTokens(in.value("add", std::vector<std::string>{}));
  Json out = {{"size", tok->size()}, {"warning", loaded->warning}};
  if (in.contains("save")) {
    Status st = tok->Save(in["save"].get<std::string>(), 512, nullptr);
    out["saved"] = st.ok() ? Json(tok->FileNames()) : Json{{"error", st.ToString()}};
  }
  LabelShape shape;
  shape.max_length = in.value("max_length", 512);
  if (in.contains("prompt_end"))
    shape.prompt_end_id = tok->TokenToId(in["prompt_end"].get<std::string>());
  Json ids = Json::array();
  Json labels = Json::array();
  std::vector<std::string> texts = in.at("texts").get<std::vector<std::string>>();
  for (const std::string& t : texts) {
    Result<std::vector<int64_t>> r = tok->Encode(t);
    ids.push_back(r.ok() ? Json(*r) : Json{{"error", r.status().ToString()}});
    if (r.ok()) labels.push_back(MakeLabels(*r, shape).labels);
  }
  out["ids"] = ids;
  out["labels"] = labels;
  Json token_ids = Json::object();
  for (const std::string& t : in.value("add", std::vector<std::string>{})) {
    token_ids[t] = tok->TokenToId(t).value_or(-1);
  }
  out["token_ids"] = token_ids;
  int reps = in.value("bench_reps", 0);
  if (reps > 0) {
    auto start = std::chrono::steady_clock::now();
    size_t count = 0;
    for (int rep = 0; rep < reps; ++rep) {
      for (const std::string& t : texts) {
        count += MakeLabels(*tok->Encode(t), shape).labels.size() > 0 ? 1 : 0;
      }
    }
    out["bench_seconds"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out["bench_labels"] = count;
  }
  return out;
}

}  // namespace
}  // namespace docfeed::internal

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: labels_probe IN.json OUT.json\n");
    return 2;
  }
  using docfeed::internal::Json;
  std::ifstream in_file(argv[1]);
  Json in = Json::parse(in_file);
  Json out = Json::object();
  if (in.contains("json2token"))
    out["json2token"] = docfeed::internal::RunJson2Token(in["json2token"]);
  if (in.contains("tokenize")) out["tokenize"] = docfeed::internal::RunTokenize(in["tokenize"]);
  std::ofstream(argv[2]) << out.dump();
  return 0;
}
