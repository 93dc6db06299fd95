// Migrate() end to end on small save_to_disk directories written with docfeed's Arrow writer in
// the layout `datasets` uses (the real-`datasets` inputs are in tests/python/test_migrate.py).
// Runs several threads, so it also serves the ASan/TSan builds.
#include "migrate/migrate.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/file.h"
#include "codec/codec.h"
#include "format/arrow/builder.h"
#include "format/arrow/writer.h"
#include "format/dataset.h"
#include "format/verify.h"
#include "imaging/donut.h"
#include "imaging/normalize.h"
#include "testing/temp_dir.h"

namespace docfeed::internal::migrate {
namespace {

using testing::TempDir;

constexpr int kH = 12;
constexpr int kW = 10;

// Sample i: a (kH - 2 * (i % 3)) x kW RGB page of non-zero pixels, padded centred with 0.
Image Page(int i) {
  Image img{kW, kH - 2 * (i % 3), 3, {}};
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      for (int c = 0; c < 3; ++c) {
        img.pixels.push_back(static_cast<uint8_t>(1 + (i * 31 + y * 7 + x * 3 + c * 50) % 255));
      }
    }
  }
  return img;
}

std::vector<float> Tensor(const Image& page) {
  Image padded{kW, kH, 3, std::vector<uint8_t>(kH * kW * 3)};
  const PadOffsets off{(kH - page.height) / 2, (kW - page.width) / 2};
  EXPECT_TRUE(DonutPad(ViewOf(page), off, MutableViewOf(padded)).ok());
  std::vector<float> chw(3 * kH * kW);
  const NormalizeTable table = MakeNormalizeTable(DonutConfig{}).value();
  EXPECT_TRUE(
      Normalize(ViewOf(padded), table, OutputLayout::kChw, DType::kFloat32, chw.data()).ok());
  return chw;
}

arrow::Schema SourceSchema() {
  using arrow::MakeField;
  using arrow::MakeList;
  using arrow::TypeId;
  arrow::Schema s;
  s.fields.push_back(MakeList(
      "pixel_values", MakeList("item", MakeList("item", MakeField("item", TypeId::kFloat32)))));
  s.fields.push_back(MakeList("labels", MakeField("item", TypeId::kInt64)));
  s.fields.push_back(MakeField("target_sequence", TypeId::kString));
  return s;
}

// Writes a saved Dataset with `files` data files of `rows` rows each (two batches per file).
void WriteSource(const std::string& dir, int files, int rows) {
  ASSERT_TRUE(CreateDirectory(dir).ok());
  std::string state = "{\"_data_files\": [";
  int sample = 0;
  for (int f = 0; f < files; ++f) {
    const std::string name =
        "data-0000" + std::to_string(f) + "-of-0000" + std::to_string(files) + ".arrow";
    state += (f ? ", " : "") + std::string("{\"filename\": \"") + name + "\"}";
    auto writer =
        arrow::StreamWriter::Create(JoinPath(dir, name), SourceSchema(), arrow::Compression::kNone);
    ASSERT_TRUE(writer.ok());
    std::vector<arrow::ArrayBuilder> b = arrow::ArrayBuilder::ForSchema(SourceSchema());
    for (int r = 0; r < rows; ++r, ++sample) {
      const std::vector<float> t = Tensor(Page(sample));
      for (int c = 0; c < 3; ++c) {
        for (int y = 0; y < kH; ++y) {
          for (int x = 0; x < kW; ++x) {
            ASSERT_TRUE(
                b[0].child(0).child(0).child(0).AppendDouble(t[(c * kH + y) * kW + x]).ok());
          }
          ASSERT_TRUE(b[0].child(0).child(0).FinishList().ok());
        }
        ASSERT_TRUE(b[0].child(0).FinishList().ok());
      }
      ASSERT_TRUE(b[0].FinishList().ok());
      ASSERT_TRUE(b[1].child(0).AppendInt(sample).ok());
      ASSERT_TRUE(b[1].child(0).AppendInt(-100).ok());
      ASSERT_TRUE(b[1].FinishList().ok());
      ASSERT_TRUE(b[2].AppendString("<s>" + std::to_string(sample) + "</s>").ok());
      if (r == rows / 2 || r == rows - 1) {
        ASSERT_TRUE(writer->WriteBatch(b).ok());
        for (auto& col : b) col.Reset();
      }
    }
    ASSERT_TRUE(writer->Close().ok());
  }
  ASSERT_TRUE(WriteTextFile(JoinPath(dir, "state.json"), state + "]}").ok());
  ASSERT_TRUE(WriteTextFile(JoinPath(dir, "dataset_info.json"), "{}").ok());
}

std::vector<std::pair<std::string, std::vector<uint8_t>>> ReadTree(const std::string& dir) {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
  const std::vector<std::string> names = ListFilesRecursive(dir).value();
  for (const std::string& name : names) {
    out.emplace_back(name, ReadFile(JoinPath(dir, name)).value());
  }
  return out;
}

TEST(Migrate, RecoversPagesKeepsColumnsAndIsDeterministicAcrossThreads) {
  TempDir tmp;
  WriteSource(tmp.Join("src"), 3, 5);
  MigrateOptions o;
  o.source = tmp.Join("src");
  o.output = tmp.Join("out3");
  o.threads = 3;
  const MigrateSummary s = Migrate(o).value();
  EXPECT_EQ(s.rows, 15u);
  EXPECT_EQ(s.off_grid_values, 0u);
  EXPECT_EQ(s.normalization.name, "imagenet_standard");
  EXPECT_EQ(s.cropped, 10u);  // pages 1, 2 (mod 3) are shorter than the tensor
  EXPECT_EQ(s.off_centre, 0u);

  EXPECT_TRUE(VerifyDataset(o.output).ok()) << VerifyDataset(o.output).ToString();
  auto ds = Dataset::Open(o.output).value();
  ASSERT_EQ(ds->size(), 15u);
  EXPECT_EQ(ds->manifest().preprocess.height, kH);
  EXPECT_EQ(ds->manifest().preprocess.width, kW);
  for (uint64_t i = 0; i < ds->size(); ++i) {
    const Image page = Page(static_cast<int>(i));
    const Image stored = DecodeImage(ds->ReadImage(i).value()).value();
    EXPECT_EQ(stored.width, page.width);
    EXPECT_EQ(stored.height, page.height);
    EXPECT_EQ(stored.pixels, page.pixels) << i;
    const std::vector<Value> labels = ds->ReadLabels(i).value();
    EXPECT_EQ(std::get<std::vector<int64_t>>(labels[0]),
              (std::vector<int64_t>{static_cast<int64_t>(i), -100}));
    EXPECT_EQ(std::get<std::string>(labels[1]), "<s>" + std::to_string(i) + "</s>");
  }
  o.output = tmp.Join("out1");
  o.threads = 1;
  ASSERT_TRUE(Migrate(o).ok());
  EXPECT_EQ(ReadTree(tmp.Join("out1")), ReadTree(tmp.Join("out3")));
  EXPECT_FALSE(PathExists(WorkDirectory(o.output)));
}

TEST(Migrate, ResumesFromFinishedPiecesWithIdenticalBytes) {
  TempDir tmp;
  WriteSource(tmp.Join("src"), 3, 3);
  MigrateOptions o;
  o.source = tmp.Join("src");
  o.output = tmp.Join("whole");
  ASSERT_TRUE(Migrate(o).ok());
  // Stopped after 4 rows on one thread: file 0 finished, file 1 half done.
  o.output = tmp.Join("again");
  o.threads = 1;
  int rows = 0;
  o.should_stop = [&rows] { return ++rows == 4; };
  EXPECT_EQ(Migrate(o).status().code(), StatusCode::kCancelled);
  EXPECT_FALSE(PathExists(o.output));
  EXPECT_TRUE(PathExists(JoinPath(WorkDirectory(o.output), "journal.json")));
  o.should_stop = nullptr;
  const MigrateSummary s = Migrate(o).value();
  EXPECT_EQ(s.resumed_files, 1u);
  EXPECT_TRUE(VerifyDataset(o.output).ok());
  EXPECT_EQ(ReadTree(tmp.Join("again")), ReadTree(tmp.Join("whole")));
  // A work directory from other options is discarded, not trusted.
  o.output = tmp.Join("third");
  rows = 0;
  o.should_stop = [&rows] { return ++rows == 4; };
  EXPECT_FALSE(Migrate(o).ok());
  o.should_stop = nullptr;
  o.box = BoxPolicy::kKeep;
  EXPECT_EQ(Migrate(o).value().resumed_files, 0u);
}

TEST(Migrate, TruncatedFileIsRefusedBeforeAnyOutput) {
  TempDir tmp;
  WriteSource(tmp.Join("src"), 2, 4);
  const std::string victim = tmp.Join("src/data-00001-of-00002.arrow");
  std::vector<uint8_t> bytes = ReadFile(victim).value();
  bytes.resize(bytes.size() / 2);
  ASSERT_TRUE(WriteFile(victim, bytes).ok());
  MigrateOptions o;
  o.source = tmp.Join("src");
  o.output = tmp.Join("out");
  const Status s = Migrate(o).status();
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find("data-00001-of-00002.arrow"), std::string::npos) << s.ToString();
  EXPECT_FALSE(PathExists(o.output));
  EXPECT_FALSE(PathExists(WorkDirectory(o.output)));
}

}  // namespace
}  // namespace docfeed::internal::migrate
