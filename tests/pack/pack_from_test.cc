// PackFrom with a caller-supplied SampleSource (the path docfeed.pack's rows take): the same
// rows as an image folder give the same dataset, rows are typed as metadata.jsonl rows, and a
// source's per-row error is named by the source's Where().
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <set>

#include "format/dataset.h"
#include "pack/image_folder.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::TempDir;

// The image folder's files held in memory, listed by ParseSampleRows from `jsonl`.
class MemorySource final : public SampleSource {
 public:
  MemorySource(ImageFolder listing, std::vector<Result<std::vector<uint8_t>>> images)
      : listing_(std::move(listing)), images_(std::move(images)) {}
  const ImageFolder& listing() const override { return listing_; }
  Result<std::vector<uint8_t>> ReadImage(size_t i) override {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_TRUE(asked_.insert(i).second) << "sample " << i << " read twice";
    return images_[i];
  }
  std::string Where(size_t i) const override { return "row " + std::to_string(i); }
  std::string Name() const override { return "memory"; }

 private:
  ImageFolder listing_;
  std::vector<Result<std::vector<uint8_t>>> images_;
  std::mutex mu_;
  std::set<size_t> asked_;
};

class PackFromTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::MakeSmallFolder(src_); }

  // The folder's samples as a MemorySource whose rows are its metadata.jsonl.
  std::unique_ptr<MemorySource> FromFolder() {
    Result<std::string> meta = ReadTextFile(JoinPath(src_, "metadata.jsonl"));
    EXPECT_TRUE(meta.ok());
    Result<ImageFolder> listing = ParseSampleRows(*meta);
    EXPECT_TRUE(listing.ok()) << listing.status().ToString();
    Result<ImageFolder> folder = ScanImageFolder(src_);
    EXPECT_TRUE(folder.ok());
    std::vector<Result<std::vector<uint8_t>>> images;
    for (const SourceSample& s : folder->samples) {
      images.push_back(ReadFile(JoinPath(src_, s.relative_path)));
    }
    return std::make_unique<MemorySource>(std::move(listing).value(), std::move(images));
  }

  PackOptions Options(const std::string& out) {
    PackOptions o;
    o.output = out;
    o.threads = 2;
    return o;
  }

  TempDir dir_;
  std::string src_ = dir_.Join("src");
};

TEST_F(PackFromTest, RowsGiveWhatTheFolderGives) {
  PackOptions folder_options = Options(dir_.Join("folder"));
  folder_options.source = src_;
  ASSERT_TRUE(Pack(folder_options).ok());
  std::unique_ptr<MemorySource> source = FromFolder();
  Result<PackSummary> summary = PackFrom(*source, Options(dir_.Join("rows")));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 4u);
  Result<std::unique_ptr<Dataset>> a = Dataset::Open(dir_.Join("folder"));
  Result<std::unique_ptr<Dataset>> b = Dataset::Open(dir_.Join("rows"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)->manifest().columns.size(), (*b)->manifest().columns.size());
  for (size_t c = 0; c < (*a)->manifest().columns.size(); ++c) {
    EXPECT_EQ((*a)->manifest().columns[c].name, (*b)->manifest().columns[c].name);
    EXPECT_EQ((*a)->manifest().columns[c].type, (*b)->manifest().columns[c].type);
  }
  ASSERT_EQ((*a)->size(), (*b)->size());
  for (uint64_t i = 0; i < (*a)->size(); ++i) {
    EXPECT_EQ(*(*a)->ReadImage(i), *(*b)->ReadImage(i)) << i;
    EXPECT_EQ(*(*a)->ReadLabels(i), *(*b)->ReadLabels(i)) << i;
  }
}

TEST_F(PackFromTest, ABadRowIsNamedBySourceAndRejectedWithSkipBad) {
  std::unique_ptr<MemorySource> good = FromFolder();
  std::vector<Result<std::vector<uint8_t>>> images;
  for (size_t i = 0; i < 4; ++i) images.push_back(std::vector<uint8_t>{'n', 'o', 'p', 'e'});
  images[0] = *ReadFile(JoinPath(src_, "a.png"));
  MemorySource bad(good->listing(), images);
  Result<PackSummary> failed = PackFrom(bad, Options(dir_.Join("out")));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().ToString().find("row 1"), std::string::npos)
      << failed.status().ToString();
  EXPECT_FALSE(PathExists(dir_.Join("out")));
  MemorySource again(good->listing(), images);
  PackOptions skip = Options(dir_.Join("out"));
  skip.skip_bad = true;
  Result<PackSummary> packed = PackFrom(again, skip);
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  EXPECT_EQ(packed->samples, 1u);
  EXPECT_EQ(packed->rejected, 3u);
}

TEST(ParseSampleRowsTest, TypesAndErrorsAsMetadataRows) {
  Result<ImageFolder> rows = ParseSampleRows(
      "{\"file_name\": \"a.png\", \"n\": 1, \"x\": 2}\n{\"file_name\": \"b.png\", \"x\": 2.5}\n");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->columns.size(), 2u);
  EXPECT_EQ(rows->columns[0].type, ColumnType::kInt64);
  EXPECT_EQ(rows->columns[1].type, ColumnType::kFloat64);  // int widened by a later float
  ASSERT_EQ(rows->samples.size(), 2u);
  EXPECT_EQ(rows->samples[1].relative_path, "b.png");
  EXPECT_EQ(rows->samples[1].line, 0);
  Result<ImageFolder> bad = ParseSampleRows(
      "{\"file_name\": \"a.png\", \"v\": 1}\n{\"file_name\": \"b\", \"v\": \"s\"}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("row 1"), std::string::npos) << bad.status().ToString();
}

}  // namespace
}  // namespace docfeed::internal
