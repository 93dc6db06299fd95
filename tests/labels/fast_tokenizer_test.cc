// FastTokenizer (tokenizer.json) and its pieces against Hugging Face `tokenizers`.
//
// The expected ids and normalized strings below were produced by the real library, not by
// docfeed: tokenizers 0.22.2 (transformers 4.57.6's) and 0.23.3 (transformers 5.23's) gave the
// same values, with
//   Tokenizer.from_str(json.dumps(TinyJson())).encode(text, add_special_tokens=False).ids
//   normalizers.Precompiled(charsmap).normalize_str(text)
// where TinyJson() is the tokenizer.json built below and `charsmap` the nmt_nfkc map of a
// SentencePiece model (pip sentencepiece and Debian's libsentencepiece write the same bytes).
#include "labels/fast_tokenizer.h"

#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>

#include <memory>
#include <thread>

#include "base/file.h"
#include "labels/bpe.h"
#include "labels/precompiled.h"
#include "labels/tokenizer.h"
#include "labels/unigram.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using Ids = std::vector<int64_t>;

Json Token(int id, const char* content, bool lstrip, bool rstrip, bool single_word, bool normalized,
           bool special) {
  return Json{{"id", id},          {"content", content}, {"single_word", single_word},
              {"lstrip", lstrip},  {"rstrip", rstrip},   {"normalized", normalized},
              {"special", special}};
}

// Scores chosen so that ties ("ab" vs "a" + "b"), unknown runs and byte fallback all occur; the
// added tokens cover lstrip, rstrip, single_word and a normalized token.
Json TinyJson(bool byte_fallback = false) {
  Json vocab = Json::array();
  for (auto [piece, score] : std::vector<std::pair<const char*, double>>{{"<s>", 0},
                                                                         {"<pad>", 0},
                                                                         {"</s>", 0},
                                                                         {"<unk>", 0},
                                                                         {"\u2581", -2},
                                                                         {"a", -1},
                                                                         {"b", -1},
                                                                         {"ab", -2},
                                                                         {"\u2581ab", -2.5},
                                                                         {"c", -3},
                                                                         {"abc", -5.5},
                                                                         {"bc", -3},
                                                                         {"\u2581a", -1.5},
                                                                         {"<0xC3>", -9},
                                                                         {"<0xA9>", -9},
                                                                         {"<0xC2>", -9},
                                                                         {"\u00e9", -4},
                                                                         {"\u2581c", -3.5},
                                                                         {"<mask>", 0}}) {
    vocab.push_back(Json{piece, score});
  }
  Json added = Json::array({Token(0, "<s>", false, false, false, false, true),
                            Token(1, "<pad>", false, false, false, false, true),
                            Token(2, "</s>", false, false, false, false, true),
                            Token(3, "<unk>", false, false, false, false, true),
                            Token(18, "<mask>", true, false, false, false, true),
                            Token(19, "<r>", false, true, false, false, true),
                            Token(20, "cab", false, false, true, false, false),
                            Token(21, "b  c", false, false, false, true, false)});
  Json normalizer = {
      {"type", "Sequence"},
      {"normalizers",
       Json::array(
           {Json{{"type", "Strip"}, {"strip_left", false}, {"strip_right", true}},
            Json{{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", "\u2581"}}})}};
  return Json{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", normalizer},
      {"pre_tokenizer",
       {{"type", "Metaspace"},
        {"replacement", "\u2581"},
        {"prepend_scheme", "always"},
        {"split", true}}},
      {"post_processor", nullptr},
      {"decoder", nullptr},
      {"model",
       {{"type", "Unigram"}, {"unk_id", 3}, {"vocab", vocab}, {"byte_fallback", byte_fallback}}}};
}

std::unique_ptr<FastTokenizer> FromJson(const Json& tj, const Json& config = Json()) {
  auto tok = FastTokenizer::FromJson(tj.dump(), config.is_null() ? "" : config.dump(), "tiny");
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

Ids Encode(const LabelTokenizer& tok, std::string_view text) {
  Result<Ids> ids = tok.Encode(text);
  EXPECT_TRUE(ids.ok()) << ids.status().ToString();
  return ids.ok() ? *ids : Ids{};
}

struct Case {
  const char* text;
  Ids ids;
};

const std::vector<Case>& TinyCases() {
  static const std::vector<Case> cases = {
      {"ab", {8}},                        // "▁ab" beats "▁" + "ab" (-2.5 > -4)
      {"abc", {12, 11}},                  // "▁a" + "bc" (-4.5) beats "▁" + "abc" (-7.5)
      {" ab  c ", {12, 21}},              // stripped, "  " -> "▁", then normalized "b  c"
      {"xyz", {4, 3}},                    // one fused unknown
      {"axyb", {12, 3, 6}},               //
      {"a<mask>b", {12, 18, 4, 6}},       // the piece after a token gets its own "▁"
      {"a \t <mask> b", {12, 18, 4, 6}},  // lstrip eats " \t "
      {"<r>  ab", {19, 8}},               // rstrip eats "  "
      {"cab ab", {20, 8}},                // single_word at a word boundary
      {"xcab", {4, 3, 9, 7}},             // ... and not inside a word
      {"cab", {20}},
      {"ab cab", {8, 20}},
      {"ab  c", {12, 21}},
      {"b  c", {21}},
      {"\u00e9", {4, 16}},
      {"\u00fc", {4, 3}},
      {"\u00a9", {4, 3}},  // byte fallback: {4, 15, 14}
      {"x\u00a9y", {4, 3}},
      {"<s>ab</s>", {0, 8, 2}},
      {"", {}},
      {"   ", {}},
      {"a\u3000<mask>", {12, 18}},  // U+3000 is White_Space for lstrip
  };
  return cases;
}

TEST(FastTokenizer, MatchesTokenizersOnTinyTokenizer) {
  auto tok = FromJson(TinyJson());
  ASSERT_NE(tok, nullptr);
  for (const Case& c : TinyCases()) EXPECT_EQ(Encode(*tok, c.text), c.ids) << c.text;
  EXPECT_EQ(tok->size(), 22u);  // 19 pieces + <r>, cab, "b  c"
  EXPECT_EQ(tok->TokenToId("<mask>"), 18);
  EXPECT_EQ(tok->TokenToId("\u2581ab"), 8);
  EXPECT_EQ(tok->TokenToId("zz"), std::nullopt);
  EXPECT_EQ(tok->pad_id(), 1);
}

TEST(FastTokenizer, ByteFallbackSpellsUnknownsAsBytes) {
  auto tok = FromJson(TinyJson(/*byte_fallback=*/true));
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(Encode(*tok, "\u00a9"), (Ids{4, 15, 14}));
  EXPECT_EQ(Encode(*tok, "x\u00a9y"), (Ids{4, 3}));  // no <0x78>: the fused run stays <unk>
  EXPECT_EQ(Encode(*tok, "\u00fc"), (Ids{4, 3}));
}

TEST(FastTokenizer, AddedSpecialTokensTakeTheNextIds) {
  auto tok = FromJson(TinyJson());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->AddSpecialTokens({"<s_total>", "</s_total>", "<s>", "ab"}), 2);
  EXPECT_EQ(tok->TokenToId("<s_total>"), 22);
  EXPECT_EQ(tok->TokenToId("</s_total>"), 23);
  EXPECT_EQ(tok->TokenToId("ab"), 7);  // a piece: keeps its id, no longer split
  EXPECT_EQ(tok->size(), 24u);
  EXPECT_EQ(Encode(*tok, "<s_total>xab</s_total>"), (Ids{22, 4, 3, 7, 23}));
}

// A BPE tokenizer.json as transformers 4.x writes for a BPE SentencePiece model, tiny: merges
// with equal ranks at several positions, unknown characters, and byte fallback's quirk (bytes do
// not end a pending unknown, so "x©y" gives the bytes of © before the fused <unk> of x and y).
Json TinyBpeJson(bool fuse_unk, bool byte_fallback) {
  Json vocab = Json::object();
  int64_t id = 0;
  for (const char* piece : {"<s>", "<pad>", "</s>", "<unk>", "\u2581", "a", "b", "c", "ab", "bc",
                            "\u2581a", "abc", "aa", "aaa", "<0xC2>", "<0xA9>", "\u2581ab"}) {
    vocab[piece] = id++;
  }
  Json merges = Json::array({Json{"a", "b"}, Json{"b", "c"}, Json{"\u2581", "a"}, Json{"ab", "c"},
                             Json{"a", "a"}, Json{"aa", "a"}, "\u2581 ab"});
  Json tj = TinyJson();
  tj["normalizer"] = nullptr;
  tj["added_tokens"] = Json::array({Token(0, "<s>", false, false, false, false, true)});
  tj["model"] = {{"type", "BPE"},
                 {"dropout", nullptr},
                 {"unk_token", "<unk>"},
                 {"continuing_subword_prefix", nullptr},
                 {"end_of_word_suffix", nullptr},
                 {"fuse_unk", fuse_unk},
                 {"byte_fallback", byte_fallback},
                 {"ignore_merges", false},
                 {"vocab", vocab},
                 {"merges", merges}};
  return tj;
}

TEST(FastTokenizer, BpeMatchesTokenizers) {
  const std::vector<const char*> texts = {"ab",      "abc",   "bc",   "aaaa",     "aaa",
                                          "cab",     "xyz",   "axyb", "x\u00a9y", "\u00a9x",
                                          "a\u00a9", "abxab", "",     "<s>abc"};
  // (fuse_unk, byte_fallback) -> ids, from tokenizers 0.22.2 and 0.23.3.
  const std::vector<std::pair<std::pair<bool, bool>, std::vector<Ids>>> want = {
      {{true, false},
       {{16},
        {4, 11},
        {4, 9},
        {10, 13},
        {10, 12},
        {4, 7, 8},
        {4, 3},
        {10, 3, 6},
        {4, 3},
        {4, 3},
        {10, 3},
        {16, 3, 8},
        {},
        {0, 4, 11}}},
      {{true, true},
       {{16},
        {4, 11},
        {4, 9},
        {10, 13},
        {10, 12},
        {4, 7, 8},
        {4, 3},
        {10, 3, 6},
        {4, 14, 15, 3},
        {4, 14, 15, 3},
        {10, 14, 15},
        {16, 3, 8},
        {},
        {0, 4, 11}}},
      {{false, false},
       {{16},
        {4, 11},
        {4, 9},
        {10, 13},
        {10, 12},
        {4, 7, 8},
        {4, 3, 3, 3},
        {10, 3, 3, 6},
        {4, 3, 3, 3},
        {4, 3, 3},
        {10, 3},
        {16, 3, 8},
        {},
        {0, 4, 11}}},
      {{false, true},
       {{16},
        {4, 11},
        {4, 9},
        {10, 13},
        {10, 12},
        {4, 7, 8},
        {4, 3, 3, 3},
        {10, 3, 3, 6},
        {4, 14, 15, 3, 3},
        {4, 14, 15, 3},
        {10, 14, 15},
        {16, 3, 8},
        {},
        {0, 4, 11}}},
  };
  for (const auto& [flags, ids] : want) {
    auto tok = FromJson(TinyBpeJson(flags.first, flags.second));
    ASSERT_NE(tok, nullptr);
    for (size_t i = 0; i < texts.size(); ++i) {
      EXPECT_EQ(Encode(*tok, texts[i]), ids[i])
          << texts[i] << " fuse_unk=" << flags.first << " byte_fallback=" << flags.second;
    }
  }
  Json bad = TinyBpeJson(true, false);
  bad["model"]["merges"].push_back(Json{"c", "c"});  // "cc" is not in the vocabulary
  auto r = FastTokenizer::FromJson(bad.dump(), "", "dir");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("'cc' is not in the vocabulary"), std::string::npos);
  Json dropout = TinyBpeJson(true, false);
  dropout["model"]["dropout"] = 0.1;
  EXPECT_EQ(FastTokenizer::FromJson(dropout.dump(), "", "dir").status().code(),
            StatusCode::kUnsupported);
}

TEST(FastTokenizer, RejectsWhatItDoesNotImplementNamingTheField) {
  Json wordpiece = TinyJson();
  wordpiece["model"] = {{"type", "WordPiece"}, {"vocab", Json::object()}};
  auto r = FastTokenizer::FromJson(wordpiece.dump(), "", "dir");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().ToString().find("dir/tokenizer.json: model.type 'WordPiece'"),
            std::string::npos)
      << r.status().ToString();

  Json nfkc = TinyJson();
  nfkc["normalizer"]["normalizers"].push_back(Json{{"type", "NFKC"}});
  r = FastTokenizer::FromJson(nfkc.dump(), "", "dir");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().ToString().find("normalizer.normalizers[2] type 'NFKC'"), std::string::npos)
      << r.status().ToString();

  Json regex = TinyJson();
  regex["normalizer"]["normalizers"][1]["pattern"] = {{"Regex", "\\s+"}};
  r = FastTokenizer::FromJson(regex.dump(), "", "dir");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);

  Json bert = TinyJson();
  bert["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  r = FastTokenizer::FromJson(bert.dump(), "", "dir");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("pre_tokenizer type 'BertPreTokenizer'"), std::string::npos);
}

TEST(FastTokenizer, FilesThatDisagreeAreAnError) {
  // tokenizer_config.json (4.x layout) gives <r> another id than tokenizer.json.
  Json config = {{"tokenizer_class", "XLMRobertaTokenizer"},
                 {"added_tokens_decoder",
                  {{"25", {{"content", "<r>"}, {"special", true}, {"rstrip", true}}}}}};
  auto r = FastTokenizer::FromJson(TinyJson().dump(), config.dump(), "dir");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().ToString().find("disagree on '<r>'"), std::string::npos)
      << r.status().ToString();
  // A 5.x folder: transformers 5 rebuilds XLMRobertaTokenizer with WhitespaceSplit + Metaspace
  // and Precompiled only, so a Strip/Replace normalizer would load differently there.
  Json config5 = {{"tokenizer_class", "XLMRobertaTokenizer"},
                  {"backend", "tokenizers"},
                  {"extra_special_tokens", Json::array()}};
  r = FastTokenizer::FromJson(TinyJson().dump(), config5.dump(), "dir");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().ToString().find("normalizer is not what transformers 5 builds"),
            std::string::npos)
      << r.status().ToString();
}

TEST(FastTokenizer, SaveAndLoadKeepIds) {
  auto tok = FromJson(TinyJson(), Json{{"tokenizer_class", "XLMRobertaTokenizer"}});
  ASSERT_NE(tok, nullptr);
  tok->AddSpecialTokens({"<s_a>", "</s_a>"});
  testing::TempDir out;
  ASSERT_TRUE(tok->Save(out.path(), 512, nullptr).ok());
  auto again = FastTokenizer::Load(out.path());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->size(), tok->size());
  EXPECT_EQ((*again)->TokenToId("</s_a>"), tok->TokenToId("</s_a>"));
  for (const Case& c : TinyCases()) EXPECT_EQ(Encode(**again, c.text), c.ids) << c.text;
  EXPECT_EQ(Encode(**again, "<s_a>ab</s_a>"), Encode(*tok, "<s_a>ab</s_a>"));
}

TEST(FastTokenizer, EncodesConcurrently) {
  auto tok = FromJson(TinyJson());
  ASSERT_NE(tok, nullptr);
  std::vector<int> same(4, 1);
  std::vector<std::thread> threads;
  for (size_t k = 0; k < same.size(); ++k) {
    threads.emplace_back([&, k] {
      for (int rep = 0; rep < 50; ++rep) {
        for (const Case& c : TinyCases()) {
          Result<Ids> ids = tok->Encode(c.text);
          if (!ids.ok() || *ids != c.ids) same[k] = 0;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(same, std::vector<int>(4, 1));
}

TEST(Base64, DecodesStandardAlphabetWithPadding) {
  EXPECT_EQ(*DecodeBase64(""), "");
  EXPECT_EQ(*DecodeBase64("Zg=="), "f");
  EXPECT_EQ(*DecodeBase64("Zm8="), "fo");
  EXPECT_EQ(*DecodeBase64("Zm9v"), "foo");
  EXPECT_EQ(*DecodeBase64("+/+/"), "\xfb\xff\xbf");
  EXPECT_FALSE(DecodeBase64("Zm9").ok());
  EXPECT_FALSE(DecodeBase64("Zm=v").ok());
  EXPECT_FALSE(DecodeBase64("Zm9*").ok());
}

TEST(UnigramModel, RejectsBadVocabularies) {
  EXPECT_FALSE(UnigramModel::Create({}, 0, false).ok());
  EXPECT_FALSE(UnigramModel::Create({{"a", -1.0}}, 1, false).ok());
  auto no_unk = UnigramModel::Create({{"a", -1.0}}, std::nullopt, false);
  ASSERT_TRUE(no_unk.ok());
  Ids ids;
  EXPECT_TRUE(no_unk->Encode("aa", &ids).ok());
  EXPECT_EQ(ids, (Ids{0, 0}));
  EXPECT_FALSE(no_unk->Encode("ab", &ids).ok());  // tokenizers: MissingUnkId
}

// The nmt_nfkc map of a SentencePiece model trained here, applied as tokenizers does.
class PrecompiledTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    testing::TempDir dir;
    std::string input = std::string(DOCFEED_TEST_DATA_DIR) + "/sample-docs/metadata.jsonl";
    auto st = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + input + " --model_prefix=" + dir.Join("m") +
        " --vocab_size=200 --model_type=unigram --minloglevel=2");
    ASSERT_TRUE(st.ok()) << st.ToString();
    Result<std::string> bytes = ReadTextFile(dir.Join("m.model"));
    ASSERT_TRUE(bytes.ok());
    Result<std::string> blob = SentencePieceCharsmap(*bytes);
    ASSERT_TRUE(blob.ok() && !blob->empty());
    auto map = PrecompiledCharsmap::Parse(*blob);
    ASSERT_TRUE(map.ok()) << map.status().ToString();
    map_ = new PrecompiledCharsmap(std::move(map).value());
  }
  static void TearDownTestSuite() { delete map_; }
  static PrecompiledCharsmap* map_;
};

PrecompiledCharsmap* PrecompiledTest::map_ = nullptr;

TEST_F(PrecompiledTest, NormalizesLikeTokenizers) {
  ASSERT_NE(map_, nullptr);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\uff46\uff55\uff4c\uff4c", "full"},
      {"\u2460", "1"},
      {"e\u0301", "\u00e9"},
      // One cluster shorter than 6 bytes: the rule for its prefix "a\u0300" replaces all of it,
      // so U+0301 is lost (SentencePiece itself keeps it).
      {"a\u0300\u0301", "\u00e0"},
      {"\u3000x", " x"},
      {"\ufb01", "fi"},
      {"\u0130", "\u0130"},
      {"\u01c5", "D\u017e"},
      {"\U0001d518", "U"},
      {"\ufeffa", " a"},
      {"\u200bb", " b"},
      {"x\u00a0y", "x y"},
      {"caf\u00e9", "caf\u00e9"},
      {"\r\n", " "},
      {"\u00c5", "\u00c5"},
      {"\ud55c\uad6d\uc5b4", "\ud55c\uad6d\uc5b4"},
      {"\U0001f44d\U0001f3fd", "\U0001f44d\U0001f3fd"},
      {"a\x1c"
       "b",
       "ab"},
      {"TOTAL 9.00", "TOTAL 9.00"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(map_->Normalize(in), want) << in;
  // Each thread has its own ICU break iterator.
  std::vector<int> same(4, 1);
  std::vector<std::thread> threads;
  for (size_t k = 0; k < same.size(); ++k) {
    threads.emplace_back([&, k] {
      for (int rep = 0; rep < 200; ++rep) {
        for (const auto& [in, want] : cases) {
          if (map_->Normalize(in) != want) same[k] = 0;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(same, std::vector<int>(4, 1));
}

TEST(PrecompiledCharsmap, RejectsBadSizes) {
  EXPECT_FALSE(PrecompiledCharsmap::Parse("").ok());
  EXPECT_FALSE(PrecompiledCharsmap::Parse(std::string("\x08\x00\x00\x00", 4)).ok());
  EXPECT_FALSE(PrecompiledCharsmap::Parse(std::string("\x03\x00\x00\x00xyz", 7)).ok());
}

}  // namespace
}  // namespace docfeed::internal
