// Migrate() end to end on small save_to_disk directories written with docfeed's Arrow writer in
// the layout `datasets` uses (the real-`datasets` inputs are in tests/python/test_migrate.py).
// Runs several threads, so it also serves the ASan/TSan builds.
#include "migrate/migrate.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
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
#include "pipeline/loader.h"
#include "tensor_column.h"
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

// The page padded centred and normalized with `norm` (rescale 1/255, (x - mean) / std).
std::vector<float> Tensor(const Image& page, const DonutConfig& norm = DonutConfig{}) {
  Image padded{kW, kH, 3, std::vector<uint8_t>(kH * kW * 3)};
  const PadOffsets off{(kH - page.height) / 2, (kW - page.width) / 2};
  EXPECT_TRUE(DonutPad(ViewOf(page), off, MutableViewOf(padded)).ok());
  std::vector<float> chw(3 * kH * kW);
  const NormalizeTable table = MakeNormalizeTable(norm).value();
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

// Writes a saved Dataset with `files` data files of `rows` rows each (two batches per file),
// the tensors normalized with `norm`.
void WriteSource(const std::string& dir, int files, int rows,
                 const DonutConfig& norm = DonutConfig{}) {
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
      const std::vector<float> t = Tensor(Page(sample), norm);
      ASSERT_TRUE(AppendChwTensor(b[0], t, kH, kW).ok());
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

// The batches of a loader over `path` (storage order, centred padding), one tensor per sample.
std::vector<std::vector<uint8_t>> LoadAll(LoaderOptions lo, const std::string& path, DType dtype) {
  lo.path = path;
  lo.preset.donut.height = kH;
  lo.preset.donut.width = kW;
  lo.batch_size = 4;
  lo.shuffle = false;
  lo.preset.pad = PadMode::kCenter;
  lo.dtype = dtype;
  lo.remainder = Remainder::kPartial;
  lo.num_threads = 2;
  std::vector<std::vector<uint8_t>> out;
  Result<std::unique_ptr<Loader>> loader = Loader::Create(lo);
  EXPECT_TRUE(loader.ok()) << loader.status().ToString();
  if (!loader.ok()) return out;
  while (true) {
    Result<Batch> b = (*loader)->Next();
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok() || !b->valid()) break;
    const size_t per_sample = b->pixel_bytes() / b->size();
    for (uint32_t j = 0; j < b->size(); ++j) {
      const auto* px = static_cast<const uint8_t*>(b->pixels()) + j * per_sample;
      out.emplace_back(px, px + per_sample);
    }
  }
  return out;
}

// `tensor` as the loader's `dtype` bytes (float16/bfloat16: float32 rounded to nearest-even).
std::vector<uint8_t> AsDType(const std::vector<float>& tensor, DType dtype) {
  std::vector<uint8_t> out(tensor.size() * DTypeSize(dtype));
  for (size_t i = 0; i < tensor.size(); ++i) {
    if (dtype == DType::kFloat32) {
      std::memcpy(out.data() + 4 * i, &tensor[i], 4);
    } else {
      const uint16_t h =
          dtype == DType::kFloat16 ? FloatToHalf(tensor[i]) : FloatToBfloat16(tensor[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

// The mean/std the tensors were normalized with is recorded in the manifest and the loader applies
// it, so centred padding gives the original tensors back also for ImageNet's and a user's
// statistics, in every float dtype; options still override it.
TEST(Migrate, LoaderNormalizesWithTheRecordedMeanAndStd) {
  struct Case {
    std::string name;
    std::array<double, 3> mean, std;
  };
  for (const Case& c : {Case{"imagenet_default", {0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}},
                        Case{"user", {0.3, 0.62, 0.1}, {0.2, 0.35, 0.71}}}) {
    SCOPED_TRACE(c.name);
    TempDir tmp;
    DonutConfig norm;
    norm.mean = c.mean;
    norm.std = c.std;
    WriteSource(tmp.Join("src"), 2, 3, norm);
    MigrateOptions o;
    o.source = tmp.Join("src");
    o.output = tmp.Join("out");
    o.threads = 2;
    if (c.name == "user") o.candidates = {{"user", c.mean, c.std}};
    const Result<MigrateSummary> s = Migrate(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->normalization.name, c.name);
    {
      auto ds = Dataset::Open(o.output).value();
      ASSERT_TRUE(ds->manifest().normalization.has_value());
      EXPECT_EQ(ds->manifest().normalization->mean, c.mean);
      EXPECT_EQ(ds->manifest().normalization->std, c.std);
    }
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBfloat16}) {
      const auto loaded = LoadAll(LoaderOptions{}, o.output, dtype);
      ASSERT_EQ(loaded.size(), 6u);
      for (size_t i = 0; i < loaded.size(); ++i) {
        EXPECT_EQ(loaded[i], AsDType(Tensor(Page(static_cast<int>(i)), norm), dtype))
            << "sample " << i << " dtype " << static_cast<int>(dtype);
      }
    }
    LoaderOptions donut_default;
    donut_default.image_mean = std::array<double, 3>{0.5, 0.5, 0.5};
    donut_default.image_std = std::array<double, 3>{0.5, 0.5, 0.5};
    const auto overridden = LoadAll(donut_default, o.output, DType::kFloat32);
    ASSERT_EQ(overridden.size(), 6u);
    EXPECT_EQ(overridden[1], AsDType(Tensor(Page(1)), DType::kFloat32));
  }
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

// Issue #14, items 6, 8 and 10: one writer per OUT (OUT.lock, shared with pack and synth), a
// placement that never removes what the run did not make, --overwrite of docfeed output only.

TEST(MigrateOutput, ASecondMigrationWhileOneRunsFailsAtOnceAndTheFirstFinishes) {
  TempDir tmp;
  WriteSource(tmp.Join("src"), 2, 4);
  MigrateOptions o;
  o.source = tmp.Join("src");
  o.output = tmp.Join("out");
  o.threads = 1;
  Status second = Status::Ok();
  bool started = false;
  MigrateOptions first = o;
  first.on_progress = [&](const MigrateProgress& p) {
    if (p.rows_done == 0 || started) return;
    started = true;  // the first is inside OUT.partial: a second run must not enter it
    second = Migrate(o).status();
  };
  Result<MigrateSummary> done = Migrate(first);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_TRUE(started);
  EXPECT_EQ(second.code(), StatusCode::kFailedPrecondition) << second.ToString();
  EXPECT_NE(second.message().find("out.lock"), std::string::npos) << second.ToString();
  EXPECT_TRUE(VerifyDataset(o.output).ok());
  EXPECT_FALSE(PathExists(o.output + ".lock"));
}

TEST(MigrateOutput, WhatAppearsAtOutDuringTheRunIsKept) {
  TempDir tmp;
  WriteSource(tmp.Join("src"), 2, 4);
  MigrateOptions o;
  o.source = tmp.Join("src");
  o.output = tmp.Join("out");
  o.threads = 1;
  o.on_progress = [&](const MigrateProgress& p) {
    if (p.rows_done != 1) return;
    ASSERT_TRUE(CreateDirectory(o.output).ok());  // a user's directory, made mid-run
    ASSERT_TRUE(WriteTextFile(JoinPath(o.output, "notes.txt"), "mine").ok());
  };
  const Status s = Migrate(o).status();
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists) << s.ToString();
  EXPECT_EQ(ReadTextFile(JoinPath(o.output, "notes.txt")).value(), "mine");
}

TEST(MigrateOutput, OverwriteReplacesOnlyADocfeedDataset) {
  TempDir tmp;
  WriteSource(tmp.Join("src"), 1, 2);
  MigrateOptions o;
  o.source = tmp.Join("src");
  o.output = tmp.Join("out");
  o.overwrite = true;
  ASSERT_TRUE(CreateDirectory(o.output).ok());
  ASSERT_TRUE(WriteTextFile(JoinPath(o.output, "notes.txt"), "mine").ok());
  Status s = Migrate(o).status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("notes.txt"), std::string::npos) << s.ToString();
  EXPECT_EQ(ReadTextFile(JoinPath(o.output, "notes.txt")).value(), "mine");
  ASSERT_TRUE(RemoveAll(o.output).ok());
  ASSERT_TRUE(Migrate(o).ok());  // nothing there, then a docfeed dataset there: replaced
  ASSERT_TRUE(Migrate(o).ok());
  EXPECT_TRUE(VerifyDataset(o.output).ok());
}

}  // namespace
}  // namespace docfeed::internal::migrate
