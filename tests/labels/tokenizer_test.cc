#include "labels/tokenizer.h"

#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>

#include <memory>
#include <thread>

#include "base/file.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using Ids = std::vector<int64_t>;

// A small BPE model trained on the sample documents' metadata (receipt and invoice text), as
// sentencepiece.bpe.model in a tokenizer folder.
class TokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    std::string input = std::string(DOCFEED_TEST_DATA_DIR) + "/sample-docs/metadata.jsonl";
    std::string prefix = dir_->Join("m");
    auto st = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + input + " --model_prefix=" + prefix +
        " --vocab_size=400 --model_type=bpe --character_coverage=1.0 --minloglevel=2");
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_TRUE(Rename(prefix + ".model", dir_->Join(kSentencePieceModelName)).ok());
  }
  static void TearDownTestSuite() { delete dir_; }

  static std::unique_ptr<XlmRobertaTokenizer> Load() {
    auto tok = XlmRobertaTokenizer::Load(dir_->path());
    EXPECT_TRUE(tok.ok()) << tok.status().ToString();
    return std::move(tok).value();
  }
  static Ids Encode(const XlmRobertaTokenizer& tok, std::string_view text) {
    Result<Ids> ids = tok.Encode(text);
    EXPECT_TRUE(ids.ok()) << ids.status().ToString();
    return ids.ok() ? *ids : Ids{};
  }

  static testing::TempDir* dir_;
};

testing::TempDir* TokenizerTest::dir_ = nullptr;

TEST_F(TokenizerTest, FairseqIdsAndVocabulary) {
  auto tok = Load();
  EXPECT_EQ(tok->vocab_size(), 400u + 2);  // pieces + fairseq offset + <mask>
  EXPECT_EQ(tok->size(), 402u);
  EXPECT_EQ(tok->TokenToId("<s>"), 0);
  EXPECT_EQ(tok->TokenToId("<pad>"), 1);
  EXPECT_EQ(tok->TokenToId("</s>"), 2);
  EXPECT_EQ(tok->TokenToId("<unk>"), 3);
  EXPECT_EQ(tok->TokenToId("<mask>"), 401);
  EXPECT_EQ(tok->TokenToId("<s_total>"), std::nullopt);
  EXPECT_EQ(Encode(*tok, "<s>x</s>").front(), 0);
  EXPECT_EQ(Encode(*tok, "<s>x</s>").back(), 2);
  EXPECT_EQ(Encode(*tok, "").size(), 0u);
  EXPECT_EQ(Encode(*tok, "   ").size(), 0u);
  Ids unk = Encode(*tok, "\xe2\x82\xac");  // a character the model never saw: ▁ + <unk>
  EXPECT_EQ(unk.back(), 3);
}

TEST_F(TokenizerTest, AddedTokensAreMatchedBeforeSentencePiece) {
  auto tok = Load();
  EXPECT_EQ(tok->AddSpecialTokens({"<s_total>", "</s_total>", "<s>", "<s_total>"}), 2);
  EXPECT_EQ(tok->TokenToId("<s_total>"), 402);
  EXPECT_EQ(tok->TokenToId("</s_total>"), 403);
  EXPECT_EQ(tok->size(), 404u);
  Ids ids = Encode(*tok, "<s><s_total>9.00</s_total></s>");
  ASSERT_GE(ids.size(), 5u);
  EXPECT_EQ(ids[0], 0);
  EXPECT_EQ(ids[1], 402);
  EXPECT_EQ(ids[ids.size() - 2], 403);
  // Whitespace around a token without lstrip/rstrip goes to SentencePiece, which drops it at
  // the edges of a piece.
  EXPECT_EQ(Encode(*tok, "<s_total> 9.00 </s_total>"), Encode(*tok, "<s_total>9.00</s_total>"));
  // <mask> eats whitespace on its left (lstrip), so "a <mask>" encodes "a" then <mask>.
  EXPECT_EQ(Encode(*tok, "a \t<mask>"), Encode(*tok, "a<mask>"));
}

TEST_F(TokenizerTest, LongestAddedTokenWins) {
  auto tok = Load();
  tok->AddSpecialTokens({"<s_a>", "<s_a>b>"});
  Ids ids = Encode(*tok, "<s_a>b>");
  EXPECT_EQ(ids, Ids{*tok->TokenToId("<s_a>b>")});
}

TEST_F(TokenizerTest, SaveAndLoadKeepIds) {
  auto tok = Load();
  tok->AddSpecialTokens({"<s_b>", "</s_b>", "<sep/>"});
  testing::TempDir out;
  ASSERT_TRUE(tok->Save(out.path(), 512).ok());
  auto again = XlmRobertaTokenizer::Load(out.path());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->size(), tok->size());
  for (const char* t : {"<s_b>", "</s_b>", "<sep/>", "<mask>"}) {
    EXPECT_EQ((*again)->TokenToId(t), tok->TokenToId(t)) << t;
  }
  std::string text = "<s><s_b>NO.53, JALAN<sep/>x</s_b></s>";
  EXPECT_EQ(Encode(**again, text), Encode(*tok, text));
}

TEST_F(TokenizerTest, MissingModelIsNotFound) {
  testing::TempDir empty;
  auto tok = XlmRobertaTokenizer::Load(empty.path());
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kNotFound);
  EXPECT_NE(tok.status().ToString().find(kSentencePieceModelName), std::string::npos);
  ASSERT_TRUE(WriteTextFile(empty.Join(kSentencePieceModelName), "not a model").ok());
  EXPECT_EQ(XlmRobertaTokenizer::Load(empty.path()).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TokenizerTest, FolderRule) {
  // sentencepiece.bpe.model alone, a BPE model: 4.x slow ids, and a warning about 5.x.
  auto loaded = LoadLabelTokenizer(dir_->path());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_NE(dynamic_cast<XlmRobertaTokenizer*>(loaded->tokenizer.get()), nullptr);
  EXPECT_NE(loaded->warning.find("is a BPE SentencePiece model"), std::string::npos);
  EXPECT_EQ(Load()->model_type(), SentencePieceType::kBpe);
  // A tokenizer.json beside it wins; it must hold the model file's vocabulary.
  ASSERT_TRUE(WriteTextFile(dir_->Join(kTokenizerJsonName),
                            R"({"model": {"type": "Unigram", "unk_id": 0,
                                          "vocab": [["<unk>", 0], ["x", -1]]}})")
                  .ok());
  loaded = LoadLabelTokenizer(dir_->path());
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(loaded.status().ToString().find("hold different vocabularies"), std::string::npos)
      << loaded.status().ToString();
  // One docfeed cannot read is an error naming the field.
  ASSERT_TRUE(
      WriteTextFile(dir_->Join(kTokenizerJsonName), R"({"model": {"type": "WordPiece"}})").ok());
  loaded = LoadLabelTokenizer(dir_->path());
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(loaded.status().ToString().find("tokenizer.json: model.type 'WordPiece'"),
            std::string::npos)
      << loaded.status().ToString();
  ASSERT_TRUE(RemoveAll(dir_->Join(kTokenizerJsonName)).ok());
  // Neither file.
  testing::TempDir empty;
  loaded = LoadLabelTokenizer(empty.path());
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kNotFound);
  EXPECT_NE(loaded.status().ToString().find("no tokenizer.json or sentencepiece.bpe.model"),
            std::string::npos);
}

TEST_F(TokenizerTest, EncodesConcurrently) {
  auto tok = Load();
  tok->AddSpecialTokens({"<s_company>", "</s_company>"});
  std::vector<std::string> texts;
  for (int i = 0; i < 64; ++i) {
    texts.push_back("<s><s_company>TEO HENG STATIONERY & BOOKS " + std::to_string(i * 7919) +
                    "</s_company></s>");
  }
  std::vector<Ids> expected;
  for (const std::string& t : texts) expected.push_back(Encode(*tok, t));
  std::vector<std::thread> threads;
  std::vector<int> same(4, 1);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int rep = 0; rep < 20; ++rep) {
        for (size_t i = 0; i < texts.size(); ++i) {
          Result<Ids> ids = tok->Encode(texts[i]);
          if (!ids.ok() || *ids != expected[i]) same[static_cast<size_t>(k)] = 0;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(same, std::vector<int>(4, 1));
}

TEST(MakeLabels, TruncatesPadsAndMasks) {
  LabelShape shape;
  shape.max_length = 6;
  LabelIds l = MakeLabels({0, 10, 11, 2}, shape);
  EXPECT_EQ(l.labels, (Ids{0, 10, 11, 2, -100, -100}));
  EXPECT_EQ(l.token_count, 4u);
  EXPECT_FALSE(l.truncated);
  l = MakeLabels({0, 10, 11, 12, 13, 14, 15, 2}, shape);
  EXPECT_EQ(l.labels, (Ids{0, 10, 11, 12, 13, 14}));
  EXPECT_TRUE(l.truncated);
  EXPECT_EQ(l.token_count, 8u);
  // A literal "<pad>" in the text (id 1) is masked too, as `labels[labels == pad] = -100` does.
  EXPECT_EQ(MakeLabels({0, 1, 2}, shape).labels, (Ids{0, -100, 2, -100, -100, -100}));
  shape.pad_to_max_length = false;
  EXPECT_EQ(MakeLabels({0, 10, 2}, shape).labels, (Ids{0, 10, 2}));
}

TEST(MakeLabels, PromptEndMasksLikeTheDonutRecipe) {
  LabelShape shape;
  shape.max_length = 8;
  shape.prompt_end_id = 50;
  // Prompt end at index 2: positions 0..2 masked.
  EXPECT_EQ(MakeLabels({40, 10, 50, 11, 2}, shape).labels,
            (Ids{-100, -100, -100, 11, 2, -100, -100, -100}));
  // Absent: nonzero().sum() is 0, so only position 0 is masked.
  EXPECT_EQ(MakeLabels({40, 10, 2}, shape).labels,
            (Ids{-100, 10, 2, -100, -100, -100, -100, -100}));
  // Twice (indices 1 and 3): the recipe masks up to their sum, 4.
  EXPECT_EQ(MakeLabels({40, 50, 10, 50, 11, 12, 2}, shape).labels,
            (Ids{-100, -100, -100, -100, -100, 12, 2, -100}));
}

}  // namespace
}  // namespace docfeed::internal
