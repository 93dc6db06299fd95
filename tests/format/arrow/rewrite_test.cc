// Rewrites every real and pyarrow-generated stream through ArrayBuilder + StreamWriter (in
// batches of 50 rows, each compression) and checks that StreamReader reads back the same schema,
// metadata and values.
//
// Interop with pyarrow/datasets: when DOCFEED_ARROW_INTEROP_DIR is set, the rewritten files are
// kept there as <dir>/<case>/<compression>/data-00000-of-00001.arrow, with a SOURCE file naming
// the original and, for files carrying `datasets` metadata, dataset_info.json and state.json so
// that the directory is a save_to_disk layout. tests/format/arrow/check_pyarrow_interop.py then
// verifies them with pyarrow and datasets.load_from_disk.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "base/file.h"
#include "format/arrow/builder.h"
#include "format/arrow/reader.h"
#include "format/arrow/writer.h"
#include "test_util.h"

namespace docfeed::internal::arrow {
namespace {

constexpr int64_t kRowsPerBatch = 50;

using testing::kStreamCases;

std::string CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kZstd:
      return "zstd";
    case Compression::kLz4Frame:
      return "lz4";
    default:
      return "none";
  }
}

// All values of every column, concatenated over batches.
std::vector<nlohmann::json> AllColumns(const testing::StreamContents& contents) {
  std::vector<nlohmann::json> columns(contents.schema.fields.size(), nlohmann::json::array());
  for (const RecordBatch& batch : contents.batches) {
    for (size_t c = 0; c < columns.size(); ++c) {
      for (const auto& value : testing::ColumnToJson(batch.columns[c])) {
        columns[c].push_back(value);
      }
    }
  }
  return columns;
}

Status WriteRows(const testing::StreamContents& source, StreamWriter& writer) {
  std::vector<ArrayBuilder> builders = ArrayBuilder::ForSchema(source.schema);
  for (const RecordBatch& batch : source.batches) {
    for (int64_t row = 0; row < batch.num_rows; ++row) {
      for (size_t c = 0; c < builders.size(); ++c) {
        DOCFEED_RETURN_IF_ERROR(testing::CopyValue(batch.columns[c], row, &builders[c]));
      }
      if (builders.empty() || builders[0].length() < kRowsPerBatch) continue;
      DOCFEED_RETURN_IF_ERROR(writer.WriteBatch(builders).status());
    }
  }
  if (!builders.empty() && builders[0].length() > 0) {
    DOCFEED_RETURN_IF_ERROR(writer.WriteBatch(builders).status());
  }
  return writer.Close();
}

// The save_to_disk companions of an arrow file whose schema carries `datasets` features.
Status WriteDatasetsSidecars(const std::string& dir, const Schema& schema) {
  const std::string* hf = schema.FindMetadata("huggingface");
  if (hf == nullptr) return Status::Ok();
  nlohmann::json info = nlohmann::json::parse(*hf)["info"];
  if (info["features"].empty()) return Status::Ok();  // a synthetic test file, not `datasets`'
  DOCFEED_RETURN_IF_ERROR(WriteTextFile(JoinPath(dir, "dataset_info.json"), info.dump(2)));
  const nlohmann::json state = {{"_data_files", {{{"filename", "data-00000-of-00001.arrow"}}}},
                                {"_fingerprint", "docfeed0arrow0test"},
                                {"_format_columns", nullptr},
                                {"_format_kwargs", nlohmann::json::object()},
                                {"_format_type", nullptr},
                                {"_output_all_columns", false},
                                {"_split", nullptr}};
  return WriteTextFile(JoinPath(dir, "state.json"), state.dump(2));
}

std::string OutputDir(size_t case_index, Compression compression) {
  const char* interop = std::getenv("DOCFEED_ARROW_INTEROP_DIR");
  const std::string name = "case" + std::to_string(case_index);
  if (interop == nullptr)
    return testing::MakeTempDir("rewrite_" + name + CompressionName(compression));
  std::string dir = JoinPath(interop, name);
  EXPECT_TRUE(PathExists(dir) || CreateDirectory(dir).ok());
  dir = JoinPath(dir, CompressionName(compression));
  EXPECT_TRUE(RemoveAll(dir).ok());
  EXPECT_TRUE(CreateDirectory(dir).ok());
  return dir;
}

class Rewrite : public ::testing::TestWithParam<std::tuple<size_t, Compression>> {};

TEST_P(Rewrite, ReadWriteReadPreservesEverything) {
  const auto [case_index, compression] = GetParam();
  const std::string source_path = testing::ArrowDataPath(kStreamCases[case_index]);
  auto source_file = MappedFile::Open(source_path);
  ASSERT_TRUE(source_file.ok()) << source_file.status().ToString();
  auto source = testing::ReadStream(source_file->bytes(), source_path);
  ASSERT_TRUE(source.ok()) << source.status().ToString();

  const std::string dir = OutputDir(case_index, compression);
  const std::string out_path = JoinPath(dir, "data-00000-of-00001.arrow");
  auto writer = StreamWriter::Create(out_path, source->schema, compression);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  const Status written = WriteRows(*source, *writer);
  ASSERT_TRUE(written.ok()) << written.ToString();
  ASSERT_TRUE(WriteTextFile(JoinPath(dir, "SOURCE"), source_path).ok());
  ASSERT_TRUE(WriteDatasetsSidecars(dir, source->schema).ok());

  auto out_file = MappedFile::Open(out_path);
  ASSERT_TRUE(out_file.ok());
  auto rewritten = testing::ReadStream(out_file->bytes(), out_path);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status().ToString();
  EXPECT_EQ(rewritten->schema, source->schema);
  EXPECT_EQ(AllColumns(*rewritten), AllColumns(*source));
  for (const RecordBatch& batch : rewritten->batches) {
    EXPECT_LE(batch.num_rows, kRowsPerBatch);
    EXPECT_EQ(batch.compressed, compression != Compression::kNone);
  }
}

INSTANTIATE_TEST_SUITE_P(ArrowRewrite, Rewrite,
                         ::testing::Combine(::testing::Range<size_t>(0, std::size(kStreamCases)),
                                            ::testing::Values(Compression::kNone,
                                                              Compression::kZstd,
                                                              Compression::kLz4Frame)),
                         [](const auto& param_info) {
                           return "case" + std::to_string(std::get<0>(param_info.param)) + "_" +
                                  CompressionName(std::get<1>(param_info.param));
                         });

}  // namespace
}  // namespace docfeed::internal::arrow
