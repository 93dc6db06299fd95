// Every byte of a packed dataset is untrusted: flip or truncate any of them and `verify`
// reports the damage, naming the file (and for Arrow files the region), while opening and
// reading the damaged dataset gives errors or data but never crashes (run under ASan/UBSan).
#include <gtest/gtest.h>

#include "format/dataset.h"
#include "format/verify.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::TempDir;

// Opens and reads everything; the result does not matter, only that nothing crashes.
void ReadEverything(const std::string& dir) {
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(dir);
  if (!ds.ok()) return;
  for (uint64_t i = 0; i < (*ds)->size(); ++i) {
    (*ds)->ReadImage(i).status().IgnoreError();
    (*ds)->ReadLabels(i).status().IgnoreError();
  }
}

class CorruptionTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    testing::MakeSmallFolder(src_);
    PackOptions o;
    o.source = src_;
    o.output = out_;
    o.compression = GetParam();
    Result<PackSummary> s = Pack(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    files_ = *ListFilesRecursive(out_);
    ASSERT_GE(files_.size(), 5u);
  }
  TempDir dir_;
  std::string src_ = dir_.Join("src");
  std::string out_ = dir_.Join("out");
  std::vector<std::string> files_;
};

TEST_P(CorruptionTest, EveryFlippedByteIsReportedWithItsFile) {
  for (const std::string& name : files_) {
    std::string path = JoinPath(out_, name);
    std::vector<uint8_t> original = *ReadFile(path);
    for (size_t pos = 0; pos < original.size(); ++pos) {
      std::vector<uint8_t> damaged = original;
      damaged[pos] ^= (pos % 2 == 0) ? 0x01 : 0x80;
      testing::WriteBytes(path, damaged);
      Result<VerifyReport> report = VerifyDatasetReport(out_);
      ASSERT_TRUE(report.ok()) << report.status().ToString();
      ASSERT_FALSE(report->ok()) << name << " byte " << pos << " flipped, verify saw nothing";
      EXPECT_NE(report->problems[0].find(name), std::string::npos)
          << name << " byte " << pos << ": " << report->problems[0];
      if (name.find(".arrow") != std::string::npos) {
        const std::string& p = report->problems[0];
        bool region = p.find("record batch") != std::string::npos ||
                      p.find("schema") != std::string::npos ||
                      p.find("end-of-stream") != std::string::npos;
        EXPECT_TRUE(region) << p;
      }
      ReadEverything(out_);
    }
    testing::WriteBytes(path, original);
  }
  EXPECT_TRUE(VerifyDataset(out_).ok());
}

TEST_P(CorruptionTest, EveryTruncationIsReported) {
  for (const std::string& name : files_) {
    std::string path = JoinPath(out_, name);
    std::vector<uint8_t> original = *ReadFile(path);
    for (size_t len = 0; len < original.size(); len += 1 + len / 16) {
      testing::WriteBytes(path, std::vector<uint8_t>(original.begin(), original.begin() + len));
      Result<VerifyReport> report = VerifyDatasetReport(out_);
      if (name == "docfeed.json") {
        // A damaged manifest is reported as a problem (or the report cannot start).
        EXPECT_TRUE(!report.ok() || !report->ok()) << "truncated manifest at " << len;
      } else {
        ASSERT_TRUE(report.ok());
        ASSERT_FALSE(report->ok()) << name << " truncated to " << len;
        EXPECT_NE(report->problems[0].find(name), std::string::npos) << report->problems[0];
      }
      ReadEverything(out_);
    }
    testing::WriteBytes(path, original);
  }
}

TEST_P(CorruptionTest, MissingFileIsReported) {
  for (const std::string& name : files_) {
    if (name == "docfeed.json") continue;
    std::string path = JoinPath(out_, name);
    std::vector<uint8_t> original = *ReadFile(path);
    ASSERT_TRUE(RemoveAll(path).ok());
    Result<VerifyReport> report = VerifyDatasetReport(out_);
    ASSERT_TRUE(report.ok());
    EXPECT_FALSE(report->ok()) << name;
    ReadEverything(out_);
    testing::WriteBytes(path, original);
  }
}

INSTANTIATE_TEST_SUITE_P(Compression, CorruptionTest, ::testing::Values("none", "zstd"));

}  // namespace
}  // namespace docfeed::internal
