// pack --tokenizer: the labels columns, the saved tokenizer and the bad-sample paths. Label
// parity with transformers is tests/python/test_labels_parity.py.
#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>

#include "format/dataset.h"
#include "format/verify.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

class LabelsPackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(CreateDirectory(tok_).ok());
    std::string input = std::string(DOCFEED_TEST_DATA_DIR) + "/sample-docs/metadata.jsonl";
    auto st = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + input + " --model_prefix=" + tok_ +
        "/m --vocab_size=300 --model_type=bpe --minloglevel=2");
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_TRUE(Rename(tok_ + "/m.model", JoinPath(tok_, kSentencePieceModelName)).ok());
    ASSERT_TRUE(CreateDirectory(src_).ok());
    for (const char* name : {"a.png", "b.png", "c.png"}) {
      testing::WriteBytes(JoinPath(src_, name), *EncodePng(testing::Gradient(6, 5, 3, 1)));
    }
    ASSERT_TRUE(
        WriteTextFile(
            JoinPath(src_, "metadata.jsonl"),
            R"({"file_name": "a.png", "ground_truth": "{\"gt_parse\": {\"total\": \"9.00\"}}"})"
            "\n"
            R"({"file_name": "b.png", "ground_truth": "{\"gt_parse\": "})"
            "\n"
            R"({"file_name": "c.png", "ground_truth": "{\"gt_parse\": {\"total\": \"1\", \"date\": \"x\"}}"})"
            "\n")
            .ok());
  }
  PackOptions Options() const {
    PackOptions o;
    o.source = src_;
    o.output = out_;
    o.threads = 2;
    o.labels.tokenizer_dir = tok_;
    o.labels.max_length = 16;
    return o;
  }
  testing::TempDir dir_;
  std::string src_ = dir_.Join("src");
  std::string tok_ = dir_.Join("tok");
  std::string out_ = dir_.Join("out");
};

TEST_F(LabelsPackTest, WritesLabelsTargetsAndTokenizer) {
  PackOptions o = Options();
  o.skip_bad = true;
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 2u);
  EXPECT_EQ(summary->rejected, 1u);
  EXPECT_EQ(summary->new_tokens, 4u);  // <s_total> </s_total> <s_date> </s_date>
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out_);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  const Manifest& m = (*ds)->manifest();
  EXPECT_EQ(m.label_column, "labels");
  ASSERT_EQ(m.columns.size(), 3u);
  EXPECT_EQ(m.columns[1].name, "labels");
  EXPECT_EQ(m.columns[2].name, "target_sequence");
  Result<std::vector<Value>> row = (*ds)->ReadLabels(0);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(std::get<std::string>((*row)[2]), "<s><s_total>9.00</s_total></s>");
  const auto& labels = std::get<std::vector<int64_t>>((*row)[1]);
  ASSERT_EQ(labels.size(), 16u);
  EXPECT_EQ(labels[0], 0);
  EXPECT_EQ(labels[1], 302);  // first new token: len(tokenizer) = 300 + 2
  EXPECT_EQ(labels.back(), -100);
  int tokenizer_files = 0;
  for (const FileEntry& f : m.other_files) tokenizer_files += f.name.rfind("tokenizer/", 0) == 0;
  EXPECT_EQ(tokenizer_files, 4);
  EXPECT_TRUE(VerifyDataset(out_).ok());
  // A damaged tokenizer file is caught by verify.
  ASSERT_TRUE(WriteTextFile(JoinPath(out_, "tokenizer/added_tokens.json"), "{}").ok());
  EXPECT_FALSE(VerifyDataset(out_).ok());
}

TEST_F(LabelsPackTest, BadGroundTruthStopsNamingSampleAndField) {
  Result<PackSummary> summary = Pack(Options());
  ASSERT_FALSE(summary.ok());
  std::string message = summary.status().ToString();
  EXPECT_NE(message.find("b.png (metadata.jsonl line 2): field 'ground_truth'"), std::string::npos)
      << message;
  EXPECT_FALSE(PathExists(out_));
}

TEST_F(LabelsPackTest, StrictRejectsLongTargets) {
  PackOptions o = Options();
  o.skip_bad = true;
  o.labels.max_length = 4;
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->labels_truncated, 2u);
  o.labels.strict = true;
  o.overwrite = true;
  EXPECT_FALSE(Pack(o).ok());  // every sample rejected
}

TEST_F(LabelsPackTest, RefusesExistingLabelsColumnAndMissingModel) {
  testing::MakeSmallFolder(dir_.Join("small"));  // has a `labels` column
  PackOptions o = Options();
  o.source = dir_.Join("small");
  Result<PackSummary> summary = Pack(o);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().ToString().find("already has a 'labels' column"), std::string::npos);
  o = Options();
  o.labels.tokenizer_dir = src_;
  EXPECT_EQ(Pack(o).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace docfeed::internal
