#include "pack/image_folder.h"

#include <gtest/gtest.h>

#include "pack/test_folder.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::TempDir;

TEST(ImageFolder, ReadsMetadataInOrderWithInferredTypes) {
  TempDir dir;
  std::string root = dir.Join("src");
  testing::MakeSmallFolder(root);
  Result<ImageFolder> folder = ScanImageFolder(root);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  ASSERT_EQ(folder->samples.size(), 4u);
  EXPECT_EQ(folder->samples[1].relative_path, "sub/b.png");
  EXPECT_EQ(folder->samples[3].relative_path, "d.webp");  // "./" prefix normalized
  EXPECT_EQ(folder->samples[2].line, 3);
  ASSERT_EQ(folder->columns.size(), 3u);
  EXPECT_EQ(folder->columns[0].name, "ground_truth");
  EXPECT_EQ(folder->columns[0].type, ColumnType::kString);
  EXPECT_EQ(folder->columns[1].type, ColumnType::kInt64);
  EXPECT_EQ(folder->columns[2].type, ColumnType::kInt64List);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(folder->samples[2].values[0]));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(folder->samples[2].values[2]));
  EXPECT_EQ(std::get<std::vector<int64_t>>(folder->samples[0].values[2]),
            (std::vector<int64_t>{0, 5, 2}));
}

TEST(ImageFolder, WithoutMetadataTakesSortedImagesAndCountsOthers) {
  TempDir dir;
  std::string root = dir.Join("src");
  testing::MakeSmallFolder(root);
  ASSERT_TRUE(RemoveAll(JoinPath(root, "metadata.jsonl")).ok());
  ASSERT_TRUE(WriteTextFile(JoinPath(root, "notes.txt"), "x").ok());
  Result<ImageFolder> folder = ScanImageFolder(root);
  ASSERT_TRUE(folder.ok());
  std::vector<std::string> paths;
  for (const SourceSample& s : folder->samples) paths.push_back(s.relative_path);
  EXPECT_EQ(paths, (std::vector<std::string>{"a.png", "c.jpg", "d.webp", "sub/b.png"}));
  EXPECT_EQ(folder->other_files, 1u);
  EXPECT_TRUE(folder->columns.empty());
}

struct BadMetadataCase {
  const char* jsonl;
  const char* expected;  // substring of the error
};

class ImageFolderBadMetadata : public ::testing::TestWithParam<BadMetadataCase> {};

TEST_P(ImageFolderBadMetadata, NamesFileLineAndProblem) {
  TempDir dir;
  std::string root = dir.Join("src");
  testing::MakeSmallFolder(root);
  ASSERT_TRUE(WriteTextFile(
                  JoinPath(root, "metadata.jsonl"),
                  std::string(R"({"file_name": "a.png", "x": 1})") + "\n" + GetParam().jsonl + "\n")
                  .ok());
  // A schema error fails the scan; a row that cannot be a sample is listed with its problem
  // (the packer stops on it, or rejects it with --skip-bad).
  Result<ImageFolder> folder = ScanImageFolder(root);
  Status error = folder.status();
  if (folder.ok()) {
    ASSERT_EQ(folder->samples.size(), 2u);
    EXPECT_TRUE(folder->samples[0].problem.ok());
    error = folder->samples[1].problem;
    EXPECT_EQ(folder->samples[1].line, 2);
  }
  ASSERT_FALSE(error.ok());
  std::string message(error.message());
  EXPECT_NE(message.find("metadata.jsonl:2"), std::string::npos) << message;
  EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ImageFolderBadMetadata,
    ::testing::Values(BadMetadataCase{R"({"file_name": "a.png", "x": )", "malformed JSON"},
                      BadMetadataCase{R"({"x": 2})", "file_name"},
                      BadMetadataCase{R"({"file_name": "missing.png", "x": 2})", "no such file"},
                      BadMetadataCase{R"({"file_name": "../a.png", "x": 2})", "relative path"},
                      BadMetadataCase{R"({"file_name": "./a.png", "x": 2})",
                                      "also named by line 1"},
                      BadMetadataCase{R"({"file_name": "c.jpg\u0000.txt", "x": 2})", "NUL byte"},
                      BadMetadataCase{R"({"file_name": "sub", "x": 2})", "directory"},
                      BadMetadataCase{R"({"file_name": "a.png", "x": "two"})", "column \"x\""},
                      BadMetadataCase{R"({"file_name": "a.png", "x": {"k": 1}})", "object"},
                      BadMetadataCase{R"([1, 2])", "JSON object"},
                      BadMetadataCase{"{\"file_name\": \"a.png\", \"ground_truth\": \"caf\xE9\"}",
                                      "UTF-8 at byte 43 (in field \"ground_truth\")"},
                      BadMetadataCase{"{\"file_name\": \"a.png\", \"x\": \"\xED\xA0\x80\"}",
                                      "(in field \"x\")"}));

TEST(ImageFolder, IntsAndFloatsWidenToFloat) {
  TempDir dir;
  std::string root = dir.Join("src");
  testing::MakeSmallFolder(root);
  ASSERT_TRUE(WriteTextFile(JoinPath(root, "metadata.jsonl"),
                            "{\"file_name\": \"a.png\", \"x\": 1}\n"
                            "{\"file_name\": \"c.jpg\", \"x\": 2.5}\n")
                  .ok());
  Result<ImageFolder> folder = ScanImageFolder(root);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  EXPECT_EQ(folder->columns[0].type, ColumnType::kFloat64);
  EXPECT_EQ(std::get<double>(folder->samples[0].values[0]), 1.0);
  EXPECT_EQ(folder->unlisted_images.size(), 2u);  // sub/b.png, d.webp
}

// Found by tests/fuzz/metadata_jsonl_fuzz.cc (the third campaign's top-up): an integer past
// int64, alone or in a list, was typed int64 and threw out of the parser (the process aborted).
// pyarrow's JSON reader, which datasets' imagefolder uses, reads such a column as double:
// {"a": 11111111111111111111, "b": [1, 11111111111111111111]} gives a: double,
// b: list<item: double>.
TEST(ImageFolder, IntegersPastInt64AreDoublesAsInPyarrow) {
  Result<ImageFolder> rows = ParseSampleRows(
      "{\"file_name\": \"a.png\", \"a\": 11111111111111111111, \"b\": [1, 11111111111111111111]}\n"
      "{\"file_name\": \"b.png\", \"a\": 1, \"b\": [2]}\n");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->columns.size(), 2u);
  EXPECT_EQ(rows->columns[0].type, ColumnType::kFloat64);
  EXPECT_EQ(rows->columns[1].type, ColumnType::kFloat64List);
  EXPECT_EQ(std::get<double>(rows->samples[0].values[0]), 11111111111111111111.0);
  EXPECT_EQ(std::get<std::vector<double>>(rows->samples[0].values[1]),
            (std::vector<double>{1.0, 11111111111111111111.0}));
  EXPECT_EQ(std::get<double>(rows->samples[1].values[0]), 1.0);
}

// Found by tests/fuzz/metadata_jsonl_fuzz.cc: a column holding only empty lists was typed as a
// string column, and reading `[]` as a string threw out of the parser (the process aborted).
TEST(ImageFolder, EmptyListsAreAListColumnAndNeverAString) {
  Result<ImageFolder> only_empty = ParseSampleRows(
      "{\"file_name\": \"a.png\", \"f\": []}\n{\"file_name\": \"b.png\", \"f\": null}\n");
  ASSERT_TRUE(only_empty.ok()) << only_empty.status().ToString();
  EXPECT_EQ(only_empty->columns[0].type, ColumnType::kInt64List);
  EXPECT_EQ(std::get<std::vector<int64_t>>(only_empty->samples[0].values[0]),
            std::vector<int64_t>{});
  Result<ImageFolder> then_floats = ParseSampleRows(
      "{\"file_name\": \"a.png\", \"f\": []}\n{\"file_name\": \"b.png\", \"f\": [1.5]}\n");
  ASSERT_TRUE(then_floats.ok()) << then_floats.status().ToString();
  EXPECT_EQ(then_floats->columns[0].type, ColumnType::kFloat64List);
  Result<ImageFolder> with_string = ParseSampleRows(
      "{\"file_name\": \"a.png\", \"f\": []}\n{\"file_name\": \"b.png\", \"f\": \"x\"}\n");
  ASSERT_FALSE(with_string.ok());
  EXPECT_NE(with_string.status().ToString().find("\"f\""), std::string::npos)
      << with_string.status().ToString();
}

}  // namespace
}  // namespace docfeed::internal
