// Parquet as a pack source (src/pack/parquet_source.h and the split source it shares with
// save_to_disk datasets), on the file `datasets` wrote (tests/data/parquet/images.parquet: four
// images in two row groups): the Hub's split names, and the same dataset whatever the thread
// count, which under TSan (make test-tsan) also checks the workers' shared cache of decoded row
// groups. Row-for-row parity with `datasets` is tests/python/test_hf_parquet_pack.py.
#include "pack/parquet_source.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/file.h"
#include "format/verify.h"
#include "pack/packer.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

// Creates every directory on the way to `dir`.
void MakeDirs(const std::string& dir) {
  if (dir.empty() || dir == "/" || IsDirectory(dir)) return;
  MakeDirs(ParentPath(dir));
  ASSERT_TRUE(CreateDirectory(dir).ok()) << dir;
}

std::vector<uint8_t> Fixture() {
  return ReadFile(std::string(DOCFEED_TEST_DATA_DIR) + "/parquet/images.parquet").value();
}

TEST(ParquetSource, SplitsComeFromTheHubsNames) {
  testing::TempDir dir;
  const std::vector<std::string> files = {"data/train-00000-of-00002.parquet",
                                          "data/train-00001-of-00002.parquet",
                                          "data/test-00000-of-00001.parquet",
                                          "default/validation/0000.parquet",
                                          "dev.parquet",
                                          "extra/other.parquet"};
  for (const std::string& f : files) {
    MakeDirs(ParentPath(dir.Join(f)));
    ASSERT_TRUE(WriteFile(dir.Join(f), Fixture()).ok());
  }
  ASSERT_TRUE(WriteTextFile(dir.Join("README.md"), "# card\n").ok());
  ASSERT_TRUE(IsParquetSource(dir.path()).value());
  Result<migrate::SavedDataset> saved = OpenParquetDataset(dir.path());
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  ASSERT_TRUE(saved->is_dict);
  std::vector<std::string> splits;
  for (const auto& s : saved->splits)
    splits.push_back(s.name + ":" + std::to_string(s.data_files.size()));
  // train: the two shards and extra/other.parquet (no split in its name); validation: the
  // export's directory and dev.parquet.
  EXPECT_EQ(splits, (std::vector<std::string>{"train:3", "validation:2", "test:1"}));
  EXPECT_EQ(BaseName(saved->splits[0].data_files[0]), "train-00000-of-00002.parquet");
}

TEST(ParquetSource, AFolderWithImagesIsAnImageFolderAndAFakeParquetIsAnError) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteFile(dir.Join("a.parquet"), Fixture()).ok());
  ASSERT_TRUE(WriteFile(dir.Join("scan.png"), std::vector<uint8_t>{0x89, 'P', 'N', 'G'}).ok());
  EXPECT_FALSE(IsParquetSource(dir.path()).value());
  ASSERT_TRUE(RemoveAll(dir.Join("scan.png")).ok());
  ASSERT_TRUE(WriteTextFile(dir.Join("b.parquet"), "not parquet, but named so").ok());
  Result<migrate::SavedDataset> saved = OpenParquetDataset(dir.path());
  ASSERT_FALSE(saved.ok());
  EXPECT_NE(saved.status().message().find("b.parquet"), std::string::npos)
      << saved.status().ToString();
}

TEST(ParquetSource, ManyThreadsPackTheSameDatasetAsOne) {
  testing::TempDir dir;
  for (int shard = 0; shard < 3; ++shard) {
    const std::string name = "src/data/train-0000" + std::to_string(shard) + "-of-00003.parquet";
    MakeDirs(ParentPath(dir.Join(name)));
    ASSERT_TRUE(WriteFile(dir.Join(name), Fixture()).ok());
  }
  std::vector<std::vector<uint8_t>> outputs;
  for (int threads : {1, 4}) {
    PackOptions options;
    options.source = dir.Join("src");
    options.output = dir.Join("out" + std::to_string(threads));
    options.threads = threads;
    Result<PackSummary> summary = Pack(options);
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    EXPECT_EQ(summary->samples, 12u);
    const std::string train = JoinPath(options.output, "train");
    ASSERT_TRUE(VerifyDataset(train).ok());
    outputs.push_back(ReadFile(JoinPath(train, "data-00000-of-00001.arrow")).value());
  }
  EXPECT_EQ(outputs[0], outputs[1]);
}

}  // namespace
}  // namespace docfeed::internal
