// WebDataset shards as a pack source (src/pack/tar_source.h), on the small shards the tar fuzzer
// starts from (tests/fuzz/corpus/tar/, written by Python's tarfile: a.ppm a.json a.cls, b.txt
// alone, c.ppm c.bin; one plain ustar, one gzip-compressed pax): samples grouped by key, columns
// by extension, and images read back whatever order the encoder asks for them in.
#include "pack/tar_source.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/file.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

const std::vector<uint8_t> kPpm = [] {
  std::vector<uint8_t> ppm = {'P', '6', '\n', '2', ' ', '2', '\n', '2', '5', '5', '\n'};
  for (uint8_t i = 0; i < 12; ++i) ppm.push_back(i);
  return ppm;
}();

class TarSourceTest : public ::testing::TestWithParam<const char*> {
 protected:
  std::string Shard() const {
    return std::string(DOCFEED_TEST_DATA_DIR) + "/../fuzz/corpus/tar/" + GetParam();
  }
};

TEST_P(TarSourceTest, GroupsMembersByKeyIntoSamplesAndColumns) {
  ASSERT_TRUE(IsTarSource(Shard()));
  Result<std::unique_ptr<SampleSource>> source = OpenTarSource(Shard());
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  const ImageFolder& listing = (*source)->listing();
  std::vector<std::string> columns;
  for (const ColumnSpec& c : listing.columns) columns.push_back(c.name);
  EXPECT_EQ(columns, (std::vector<std::string>{"__key__", "__url__", "json", "cls", "txt", "bin"}));
  ASSERT_EQ(listing.samples.size(), 3u);
  EXPECT_EQ(std::get<std::string>(listing.samples[0].values[0]), "a");
  EXPECT_EQ(std::get<std::string>(listing.samples[0].values[2]), R"({"x": 1})");
  EXPECT_EQ(std::get<int64_t>(listing.samples[0].values[3]), 3);
  EXPECT_EQ(listing.samples[0].relative_path, "a.ppm");
  EXPECT_FALSE(listing.samples[1].problem.ok());  // b: text, no image
  EXPECT_NE(listing.samples[1].problem.message().find("sample b: has no image member"),
            std::string::npos)
      << listing.samples[1].problem.ToString();
  // c's binary member as an arrow binary cell: u64 length + bytes.
  EXPECT_EQ(std::get<std::string>(listing.samples[2].values[5]),
            std::string("\2\0\0\0\0\0\0\0\0\1", 10));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(listing.samples[2].values[3]));
}

TEST_P(TarSourceTest, ImagesAskedForOutOfOrderComeBackRight) {
  Result<std::unique_ptr<SampleSource>> source = OpenTarSource(Shard());
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  Result<std::vector<uint8_t>> c = (*source)->ReadImage(2);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c, kPpm);
  Result<std::vector<uint8_t>> a = (*source)->ReadImage(0);  // behind the stream: starts again
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, kPpm);
}

TEST_P(TarSourceTest, ImagesAskedForInOrderAreStreamedOnce) {
  Result<std::unique_ptr<SampleSource>> source = OpenTarSource(Shard());
  ASSERT_TRUE(source.ok());
  // a, then c (b is a bad sample and never asked for): one pass, c found after a.
  EXPECT_EQ((*source)->ReadImage(0).value(), kPpm);
  EXPECT_EQ((*source)->ReadImage(2).value(), kPpm);
}

INSTANTIATE_TEST_SUITE_P(Shards, TarSourceTest, ::testing::Values("seed-plain.tar", "seed-gz.tar"));

TEST(TarSource, AFileThatIsNotATarIsNotASource) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteTextFile(dir.Join("x.tar"), std::string(600, 'x')).ok());
  EXPECT_FALSE(IsTarSource(dir.Join("x.tar")));
  EXPECT_FALSE(IsTarSource(dir.path()));
}

}  // namespace
}  // namespace docfeed::internal
