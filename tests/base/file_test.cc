#include "base/file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace docfeed::internal {
namespace {

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/docfeed_file_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { ASSERT_TRUE(RemoveAll(dir_).ok()); }
  std::string dir_;
};

TEST_F(FileTest, WriteThenMapAndRead) {
  std::string path = JoinPath(dir_, "a.bin");
  ASSERT_TRUE(WriteTextFile(path, "hello").ok());
  Result<MappedFile> mapped = MappedFile::Open(path);
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
  ASSERT_EQ(mapped->bytes().size(), 5u);
  EXPECT_EQ(mapped->bytes()[4], 'o');
  EXPECT_EQ(*ReadTextFile(path), "hello");
  EXPECT_EQ(*FileSize(path), 5u);
}

TEST_F(FileTest, MapsEmptyFile) {
  std::string path = JoinPath(dir_, "empty");
  ASSERT_TRUE(WriteTextFile(path, "").ok());
  Result<MappedFile> mapped = MappedFile::Open(path);
  ASSERT_TRUE(mapped.ok());
  EXPECT_TRUE(mapped->bytes().empty());
}

TEST_F(FileTest, MissingFileIsNotFoundAndNamesThePath) {
  Result<MappedFile> mapped = MappedFile::Open(JoinPath(dir_, "nope"));
  ASSERT_FALSE(mapped.ok());
  EXPECT_EQ(mapped.status().code(), StatusCode::kNotFound);
  EXPECT_NE(mapped.status().message().find("nope"), std::string_view::npos);
}

TEST_F(FileTest, ListsRecursivelySorted) {
  ASSERT_TRUE(CreateDirectory(JoinPath(dir_, "b")).ok());
  ASSERT_TRUE(CreateDirectory(JoinPath(dir_, "b/c")).ok());
  ASSERT_TRUE(WriteTextFile(JoinPath(dir_, "b/c/z.txt"), "").ok());
  ASSERT_TRUE(WriteTextFile(JoinPath(dir_, "a.txt"), "").ok());
  ASSERT_TRUE(WriteTextFile(JoinPath(dir_, "b/y.txt"), "").ok());
  Result<std::vector<std::string>> files = ListFilesRecursive(dir_);
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(*files, (std::vector<std::string>{"a.txt", "b/c/z.txt", "b/y.txt"}));
}

TEST_F(FileTest, RenameAndRemoveAll) {
  std::string from = JoinPath(dir_, "tmp.d");
  ASSERT_TRUE(CreateDirectory(from).ok());
  ASSERT_TRUE(WriteTextFile(JoinPath(from, "x"), "1").ok());
  std::string to = JoinPath(dir_, "final.d");
  ASSERT_TRUE(Rename(from, to).ok());
  EXPECT_FALSE(PathExists(from));
  EXPECT_TRUE(IsDirectory(to));
  ASSERT_TRUE(RemoveAll(to).ok());
  EXPECT_FALSE(PathExists(to));
}

TEST(Path, JoinBaseParent) {
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(BaseName("x/y/z.png"), "z.png");
  EXPECT_EQ(ParentPath("x/y/z.png"), "x/y");
  EXPECT_EQ(ParentPath("z.png"), ".");
}

}  // namespace
}  // namespace docfeed::internal
