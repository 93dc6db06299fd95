// A source Arrow file truncated or rewritten while `docfeed migrate` reads it: the migration
// fails with an error naming the file, leaves nothing at OUT, and never dies of a signal. Before
// migrate read its sources with positioned reads (migrate/source_stream.h) it mapped them, and
// touching a mapped page past the new end of the file raised SIGBUS, killing this test.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/file.h"
#include "format/arrow/builder.h"
#include "format/arrow/writer.h"
#include "format/manifest.h"
#include "imaging/donut.h"
#include "imaging/normalize.h"
#include "migrate/migrate.h"
#include "tensor_column.h"
#include "testing/temp_dir.h"

namespace docfeed::internal::migrate {
namespace {

// Tensors large enough that rows lie on many pages (36 KiB each): a cut at a fifth of the file
// falls inside row 1 of batch 0, so the reader touches pages past the new end.
constexpr int kH = 64;
constexpr int kW = 48;
constexpr int kRowsPerBatch = 3;
constexpr int kBatches = 2;
constexpr char kFile[] = "data-00000-of-00001.arrow";

// A saved dataset of kBatches x kRowsPerBatch float32 C x H x W tensors of non-zero pixels,
// normalized with Donut's default mean/std (so migrate recovers them exactly).
void WriteSource(const std::string& dir, arrow::Compression compression) {
  using arrow::MakeField;
  using arrow::MakeList;
  using arrow::TypeId;
  arrow::Schema schema;
  schema.fields.push_back(MakeList(
      "pixel_values", MakeList("item", MakeList("item", MakeField("item", TypeId::kFloat32)))));
  schema.fields.push_back(MakeField("target_sequence", TypeId::kString));
  ASSERT_TRUE(CreateDirectory(dir).ok());
  auto writer = arrow::StreamWriter::Create(JoinPath(dir, kFile), schema, compression);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  const NormalizeTable table = MakeNormalizeTable(DonutConfig{}).value();
  std::vector<arrow::ArrayBuilder> b = arrow::ArrayBuilder::ForSchema(schema);
  for (int r = 0; r < kRowsPerBatch * kBatches; ++r) {
    Image page{kW, kH, 3, {}};
    for (int p = 0; p < kW * kH * 3; ++p) {
      page.pixels.push_back(static_cast<uint8_t>(1 + (r * 31 + p * 7) % 255));
    }
    std::vector<float> t(3 * kH * kW);
    ASSERT_TRUE(Normalize(ViewOf(page), table, OutputLayout::kChw, DType::kFloat32, t.data()).ok());
    ASSERT_TRUE(AppendChwTensor(b[0], t, kH, kW).ok());
    ASSERT_TRUE(b[1].AppendString("<s>" + std::to_string(r) + "</s>").ok());
    if ((r + 1) % kRowsPerBatch == 0) {
      ASSERT_TRUE(writer->WriteBatch(b).ok());
      for (auto& col : b) col.Reset();
    }
  }
  ASSERT_TRUE(writer->Close().ok());
  ASSERT_TRUE(WriteTextFile(JoinPath(dir, "state.json"),
                            std::string("{\"_data_files\": [{\"filename\": \"") + kFile + "\"}]}")
                  .ok());
  ASSERT_TRUE(WriteTextFile(JoinPath(dir, "dataset_info.json"), "{}").ok());
}

struct Case {
  const char* name;
  arrow::Compression compression;
};

class SourceChangeTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    WriteSource(dir_.Join("src"), GetParam().compression);
    source_file_ = JoinPath(dir_.Join("src"), kFile);
    options_.source = dir_.Join("src");
    options_.output = dir_.Join("out");
    options_.threads = 1;
    options_.compression = "none";
  }

  // Runs the migration with `change` applied to the source once, after its first row.
  Status MigrateChangingTheSource(const std::function<void()>& change) {
    bool changed = false;
    options_.on_progress = [&](const MigrateProgress& p) {
      if (changed || p.rows_done == 0) return;  // reports come before the first row too
      change();
      changed = true;
    };
    Status s = Migrate(options_).status();
    EXPECT_TRUE(changed) << "the migration made no progress before it ended";
    return s;
  }

  void ExpectCleanFailure(const Status& s) {
    ASSERT_FALSE(s.ok()) << "the migration passed over a changed source";
    EXPECT_NE(s.ToString().find(kFile), std::string::npos) << s.ToString();
    EXPECT_FALSE(PathExists(JoinPath(options_.output, kManifestFileName))) << s.ToString();
    std::printf("the error: %s\n", s.ToString().c_str());
  }

  testing::TempDir dir_;
  std::string source_file_;
  MigrateOptions options_;
};

INSTANTIATE_TEST_SUITE_P(Bodies, SourceChangeTest,
                         ::testing::Values(Case{"none", arrow::Compression::kNone},
                                           Case{"zstd", arrow::Compression::kZstd}),
                         [](const auto& test) { return std::string(test.param.name); });

TEST_P(SourceChangeTest, ASourceTruncatedDuringTheMigrationIsAnErrorNamingIt) {
  ASSERT_TRUE(Migrate([&] {
                MigrateOptions plain = options_;
                plain.output = dir_.Join("plain");
                return plain;
              }())
                  .ok())
      << "the unchanged source must migrate";
  const uint64_t size = std::filesystem::file_size(source_file_);
  ExpectCleanFailure(
      MigrateChangingTheSource([&] { std::filesystem::resize_file(source_file_, size / 5); }));
}

// `cp` of a shorter file over the source (here its own first fifth, so the rows read before the
// cut stay valid and the reader runs into the end): the same inode, truncated, then written.
TEST_P(SourceChangeTest, ASourceRewrittenShorterDuringTheMigrationIsAnErrorNamingIt) {
  std::vector<uint8_t> shorter = Env::Default()->ReadFile(source_file_).value();
  shorter.resize(shorter.size() / 5);
  ExpectCleanFailure(MigrateChangingTheSource(
      [&] { ASSERT_TRUE(Env::Default()->WriteFile(source_file_, shorter).ok()); }));
}

}  // namespace
}  // namespace docfeed::internal::migrate
