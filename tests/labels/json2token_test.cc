#include "labels/json2token.h"

#include <gtest/gtest.h>

#include <thread>

namespace docfeed::internal {
namespace {

std::string One(TargetBuilder& b, std::string_view json, uint64_t sample = 0) {
  Result<std::vector<std::string>> r = b.Collect(json, sample);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() && r->size() == 1 ? r->front() : "";
}

TEST(PythonFloatRepr, MatchesPythonRepr) {
  EXPECT_EQ(PythonFloatRepr(4.11), "4.11");
  EXPECT_EQ(PythonFloatRepr(319.0), "319.0");
  EXPECT_EQ(PythonFloatRepr(-0.0), "-0.0");
  EXPECT_EQ(PythonFloatRepr(0.0001), "0.0001");
  EXPECT_EQ(PythonFloatRepr(0.00001), "1e-05");
  EXPECT_EQ(PythonFloatRepr(1.5e-7), "1.5e-07");
  EXPECT_EQ(PythonFloatRepr(1e15), "1000000000000000.0");
  EXPECT_EQ(PythonFloatRepr(1e16), "1e+16");
  EXPECT_EQ(PythonFloatRepr(1.25e100), "1.25e+100");
  EXPECT_EQ(PythonFloatRepr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(PythonFloatRepr(123456.789), "123456.789");
}

TEST(Json2Token, ReverseSortedKeysAndTags) {
  TargetBuilder b({}, {});
  EXPECT_EQ(One(b, R"({"gt_parse": {"company": "A", "total": "9.00", "date": "1/2"}})"),
            "<s><s_total>9.00</s_total><s_date>1/2</s_date><s_company>A</s_company></s>");
  EXPECT_EQ(b.tokens_to_add(),
            (std::vector<std::string>{"<s_total>", "</s_total>", "<s_date>", "</s_date>",
                                      "<s_company>", "</s_company>"}));
}

TEST(Json2Token, ScalarsListsAndTextSequence) {
  TargetBuilder b({}, {});
  EXPECT_EQ(One(b, R"({"a": [1, 2.5, true, null, "x"], "b": {"text_sequence": "raw <t>"},
                       "c": [], "d": {}})"),
            "<s><s_d></s_d><s_c></s_c><s_b>raw <t></s_b><s_a>1<sep/>2.5<sep/>True<sep/>None"
            "<sep/>x</s_a></s>");
  // Without gt_parse the whole object is the parse (the notebook's SROIE layout).
  EXPECT_EQ(One(b, R"({"x": "1"})", 1), "<s><s_x>1</s_x></s>");
}

TEST(Json2Token, KeepsKeyOrderWhenNotSorting) {
  TargetOptions o;
  o.sort_keys = false;
  TargetBuilder b(o, {});
  EXPECT_EQ(One(b, R"({"b": "1", "a": "2", "c": "3"})"),
            "<s><s_b>1</s_b><s_a>2</s_a><s_c>3</s_c></s>");
}

TEST(Json2Token, CategoricalTokensNeedToBeKnownFirst) {
  TargetBuilder b({}, {"<advertisement/>"});
  // Notebook: only collected tokens count; "s_k" of an earlier key is one (`<s_k/>` is not
  // collected, so this stays plain), and tokenizer specials do not count.
  EXPECT_EQ(One(b, R"({"class": "advertisement"})"), "<s><s_class>advertisement</s_class></s>");
  TargetOptions o;
  o.recipe = TargetRecipe::kDonut;
  o.start_token = "<s_rvlcdip>";
  TargetBuilder d(o, {"<advertisement/>"});
  EXPECT_EQ(One(d, R"({"gt_parse": {"class": "advertisement"}})"),
            "<s_rvlcdip><s_class><advertisement/></s_class></s>");
}

TEST(Json2Token, DonutRecipeOrderAndParses) {
  TargetOptions o;
  o.recipe = TargetRecipe::kDonut;
  o.start_token = "<s_docvqa>";
  o.prompt_end_token = "<s_answer>";
  TargetBuilder b(o, {});
  Result<std::vector<std::string>> r =
      b.Collect(R"({"gt_parses": [{"question": "q?", "answer": "a"}, {"answer": "b"}]})", 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, (std::vector<std::string>{
                    "<s_docvqa><s_question>q?</s_question><s_answer>a</s_answer></s>",
                    "<s_docvqa><s_answer>b</s_answer></s>"}));
  b.FinishCollecting();
  EXPECT_EQ(b.tokens_to_add(),
            (std::vector<std::string>{"</s_question>", "<s_question>", "</s_answer>", "<s_answer>",
                                      "<s_docvqa>"}));
}

TEST(Json2Token, BadInputIsInvalidArgument) {
  TargetOptions donut;
  donut.recipe = TargetRecipe::kDonut;
  for (const char* bad : {"{", "[1,", "{\"gt_parse\": \"\xff\"}", "{\"gt_parses\": 3}",
                          "{\"a\": {\"text_sequence\": 3}}"}) {
    TargetBuilder b({}, {});
    Result<std::vector<std::string>> r = b.Collect(bad, 0);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(b.tokens_to_add().empty());
  }
  TargetBuilder d(donut, {});
  EXPECT_FALSE(d.Collect(R"({"company": "x"})", 0).ok());
  EXPECT_FALSE(d.Collect(R"({"gt_parse": [1]})", 0).ok());
}

TEST(Json2Token, BuildReproducesCollectOnAnyThread) {
  // A key "y/" makes "<s_y/>" a token, so the value "s_y" becomes "<s_y/>" from then on.
  std::vector<std::string> docs = {
      R"({"gt_parse": {"k": "s_y", "x/": "s_x"}})",
      R"({"gt_parse": {"y/": "1"}})",
      R"({"gt_parse": {"k": ["s_y", "s_x"]}})",
  };
  TargetBuilder b({}, {});
  std::vector<std::vector<std::string>> collected;
  for (size_t i = 0; i < docs.size(); ++i) collected.push_back(*b.Collect(docs[i], i));
  EXPECT_EQ(collected[0][0], "<s><s_x/><s_x/></s_x/><s_k>s_y</s_k></s>");
  EXPECT_EQ(collected[2][0], "<s><s_k><s_y/><sep/><s_x/></s_k></s>");
  b.FinishCollecting();
  std::vector<std::thread> threads;
  std::vector<int> ok(docs.size(), 0);
  for (size_t i = 0; i < docs.size(); ++i) {
    threads.emplace_back([&, i] {
      Result<std::vector<std::string>> r = b.Build(docs[i], i);
      ok[i] = r.ok() && *r == collected[i];
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < docs.size(); ++i) EXPECT_TRUE(ok[i]) << i;
}

}  // namespace
}  // namespace docfeed::internal
