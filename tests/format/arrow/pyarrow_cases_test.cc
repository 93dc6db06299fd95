// StreamReader on streams written by pyarrow (tests/data/arrow/make_pyarrow_cases.py): ZSTD and
// LZ4_FRAME bodies, legacy V4 framing, large_* types, nested lists and structs, nulls, empty
// batches. Values are compared with expected.json, which pyarrow produced.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file.h"
#include "format/arrow/reader.h"
#include "test_util.h"

namespace docfeed::internal::arrow {
namespace {

using testing::ArrowDataPath;

const nlohmann::json& Expected() {
  static const nlohmann::json* expected = [] {
    std::ifstream in(ArrowDataPath("pyarrow_cases/expected.json"));
    auto* json = new nlohmann::json(nlohmann::json::parse(in));
    return json;
  }();
  return *expected;
}

class PyarrowCase : public ::testing::TestWithParam<std::string> {};

TEST_P(PyarrowCase, MatchesPyarrowValues) {
  const std::string name = GetParam();
  const nlohmann::json& expected = Expected().at(name);
  auto file = MappedFile::Open(ArrowDataPath("pyarrow_cases/" + name));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto contents = testing::ReadStream(file->bytes(), name);
  ASSERT_TRUE(contents.ok()) << contents.status().ToString();

  const Schema& schema = contents->schema;
  ASSERT_EQ(schema.fields.size(), expected["schema"].size());
  for (size_t i = 0; i < schema.fields.size(); ++i) {
    EXPECT_EQ(schema.fields[i].name, expected["schema"][i][0]);
    EXPECT_EQ(TypeToString(schema.fields[i]), expected["schema"][i][1]);
    EXPECT_EQ(schema.fields[i].nullable, expected["schema"][i][2]);
  }
  for (const auto& [key, value] : expected["metadata"].items()) {
    ASSERT_NE(schema.FindMetadata(key), nullptr) << key;
    EXPECT_EQ(*schema.FindMetadata(key), value.get<std::string>());
  }
  const bool compressed =
      name.find("zstd") != std::string::npos || name.find("lz4") != std::string::npos;
  ASSERT_EQ(contents->batches.size(), expected["batches"].size());
  for (size_t b = 0; b < contents->batches.size(); ++b) {
    const RecordBatch& batch = contents->batches[b];
    const nlohmann::json& expected_batch = expected["batches"][b];
    EXPECT_EQ(batch.num_rows, expected_batch["num_rows"]);
    EXPECT_EQ(batch.batch_index, static_cast<int64_t>(b));
    EXPECT_EQ(batch.compressed, compressed);
    for (size_t c = 0; c < batch.columns.size(); ++c) {
      const std::string& column = schema.fields[c].name;
      EXPECT_EQ(testing::ColumnToJson(batch.columns[c]), expected_batch["columns"][column])
          << name << " batch " << b << " column " << column;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ArrowPyarrow, PyarrowCase,
                         ::testing::Values("mixed_uncompressed.arrow", "mixed_zstd.arrow",
                                           "mixed_lz4.arrow", "mixed_legacy_v4.arrow",
                                           "large_types.arrow", "large_types_zstd.arrow",
                                           "schema_only.arrow"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           return name.substr(0, name.find('.'));
                         });

TEST(ArrowPyarrow, DictionaryIsUnsupportedAndNamesTheField) {
  auto file = MappedFile::Open(ArrowDataPath("pyarrow_cases/dictionary.arrow"));
  ASSERT_TRUE(file.ok());
  auto reader = StreamReader::Open(file->bytes(), "dictionary.arrow");
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(reader.status().message().find("'label'"), std::string::npos)
      << reader.status().ToString();
  EXPECT_NE(reader.status().message().find("dictionary.arrow"), std::string::npos);
}

TEST(ArrowPyarrow, ReadBatchAtOnCompressedStream) {
  auto file = MappedFile::Open(ArrowDataPath("pyarrow_cases/mixed_zstd.arrow"));
  ASSERT_TRUE(file.ok());
  auto reader = StreamReader::Open(file->bytes(), "mixed_zstd.arrow");
  ASSERT_TRUE(reader.ok());
  RecordBatch first;
  RecordBatch second;
  ASSERT_TRUE(reader->Next(&first).value());
  ASSERT_TRUE(reader->Next(&second).value());
  auto again = reader->ReadBatchAt(second.message_offset);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  for (size_t c = 0; c < second.columns.size(); ++c) {
    EXPECT_EQ(testing::ColumnToJson(again->columns[c]), testing::ColumnToJson(second.columns[c]));
  }
  RecordBatch end;
  EXPECT_FALSE(reader->Next(&end).value());
  EXPECT_FALSE(reader->Next(&end).value());
}

}  // namespace
}  // namespace docfeed::internal::arrow
