// The cell encoding of "arrow" columns (format/arrow_cell.h): every value of every column of the
// real `datasets` files and the pyarrow-written cases (every type the reader supports, nulls at
// every level, large and fixed-size types) goes through EncodeCell -> AppendEncodedCell ->
// StreamWriter -> StreamReader and must come back equal, as pyarrow's own values render it
// (testing::ValueToJson), with the same encoding (canonical: it depends on the value only).
// Malformed encodings are refused. (arrow_column_test.cc: fields as JSON, KeptColumn.)
#include "format/arrow_cell.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "arrow/test_util.h"
#include "base/file.h"
#include "format/arrow/writer.h"

namespace docfeed::internal {
namespace {

using arrow::ArrayBuilder;
using arrow::ArrayView;
using arrow::Field;
using arrow::TypeId;

using arrow::testing::kStreamCases;

// Writes one batch of `builders` as a stream file and returns its bytes.
std::vector<uint8_t> WriteStream(const arrow::Schema& schema, std::vector<ArrayBuilder>& builders,
                                 const std::string& name) {
  // A directory per stream: ctest runs the tests of this file in parallel processes.
  std::string dir = "arrow_cell_" + name;
  for (char& ch : dir) {
    if (ch == '/' || ch == '.') ch = '_';
  }
  const std::string path = JoinPath(arrow::testing::MakeTempDir(dir), "stream.arrow");
  Result<arrow::StreamWriter> writer = arrow::StreamWriter::Create(path, schema);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  if (!writer.ok()) return {};
  Result<arrow::BatchLocation> written = writer->WriteBatch(builders);
  EXPECT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_TRUE(writer->Close().ok());
  Result<std::vector<uint8_t>> bytes = ReadFile(path);
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

class ArrowCellTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ArrowCellTest, EveryValueRoundTripsThroughItsEncoding) {
  Result<std::vector<uint8_t>> bytes = ReadFile(arrow::testing::ArrowDataPath(GetParam()));
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Result<arrow::testing::StreamContents> in = arrow::testing::ReadStream(*bytes, GetParam());
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  int64_t checked = 0;
  for (const arrow::RecordBatch& batch : in->batches) {
    // One builder per column, fed only through the encodings.
    std::vector<ArrayBuilder> builders = ArrayBuilder::ForSchema(in->schema);
    std::vector<std::vector<std::string>> encodings(builders.size());
    for (size_t c = 0; c < builders.size(); ++c) {
      const ArrayView& column = batch.columns[c];
      for (int64_t row = 0; row < batch.num_rows; ++row) {
        if (column.IsNull(row) || column.type() == TypeId::kNull) {
          ASSERT_TRUE(builders[c].AppendNull().ok());
          encodings[c].emplace_back();
          continue;
        }
        std::string encoded = EncodeCell(column, row);
        Status appended = AppendEncodedCell(builders[c], encoded);
        ASSERT_TRUE(appended.ok()) << GetParam() << " column " << column.field->name << " row "
                                   << row << ": " << appended.ToString();
        encodings[c].push_back(std::move(encoded));
      }
    }
    const std::vector<uint8_t> out = WriteStream(
        in->schema, builders, std::string(GetParam()) + "_" + std::to_string(batch.batch_index));
    Result<arrow::testing::StreamContents> back = arrow::testing::ReadStream(out, "rewritten");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ASSERT_EQ(back->batches.size(), 1u);
    for (size_t c = 0; c < builders.size(); ++c) {
      const ArrayView& before = batch.columns[c];
      const ArrayView& after = back->batches[0].columns[c];
      for (int64_t row = 0; row < batch.num_rows; ++row) {
        ASSERT_EQ(arrow::testing::ValueToJson(after, row), arrow::testing::ValueToJson(before, row))
            << GetParam() << " column " << before.field->name << " row " << row;
        if (!encodings[c][static_cast<size_t>(row)].empty()) {
          EXPECT_EQ(EncodeCell(after, row), encodings[c][static_cast<size_t>(row)]);
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(Files, ArrowCellTest, ::testing::ValuesIn(kStreamCases));

Field StructOfListOfInt32() {
  return arrow::MakeStruct("s", {arrow::MakeList("ids", arrow::MakeField("item", TypeId::kInt32)),
                                 arrow::MakeField("name", TypeId::kString)});
}

TEST(ArrowCell, TheEncodingIsTheDocumentedBytes) {
  // {"ids": [7, null], "name": "ab"}: no list-level flag for the top value; children flagged.
  ArrayBuilder b(StructOfListOfInt32());
  ASSERT_TRUE(AppendEncodedCell(b, std::string("\1"
                                               "\2\0\0\0\0\0\0\0"
                                               "\1"
                                               "\7\0\0\0"
                                               "\0"
                                               "\1"
                                               "\2\0\0\0\0\0\0\0"
                                               "ab",
                                               26))
                  .ok());
  arrow::Schema schema;
  schema.fields.push_back(StructOfListOfInt32());
  std::vector<ArrayBuilder> builders;
  builders.push_back(std::move(b));
  const std::vector<uint8_t> out = WriteStream(schema, builders, "doc");
  Result<arrow::testing::StreamContents> back = arrow::testing::ReadStream(out, "doc");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(arrow::testing::ValueToJson(back->batches[0].columns[0], 0).dump(),
            R"({"ids":[7,null],"name":"ab"})");
}

TEST(ArrowCell, MalformedEncodingsAreRefused) {
  const std::string good(
      "\1"
      "\1\0\0\0\0\0\0\0"
      "\1"
      "\7\0\0\0"
      "\1"
      "\1\0\0\0\0\0\0\0"
      "a",
      24);
  {
    ArrayBuilder b(StructOfListOfInt32());
    ASSERT_TRUE(AppendEncodedCell(b, good).ok());
  }
  for (size_t cut = 0; cut < good.size(); ++cut) {
    ArrayBuilder b(StructOfListOfInt32());
    EXPECT_EQ(AppendEncodedCell(b, good.substr(0, cut)).code(), StatusCode::kCorruption) << cut;
  }
  ArrayBuilder trailing(StructOfListOfInt32());
  EXPECT_EQ(AppendEncodedCell(trailing, good + "x").code(), StatusCode::kCorruption);
  std::string bad_flag = good;
  bad_flag[0] = '\2';
  ArrayBuilder flagged(StructOfListOfInt32());
  EXPECT_EQ(AppendEncodedCell(flagged, bad_flag).code(), StatusCode::kCorruption);
  // A list count far beyond the bytes.
  ArrayBuilder huge(arrow::MakeList("l", arrow::MakeField("item", TypeId::kInt64)));
  EXPECT_EQ(AppendEncodedCell(huge, std::string("\377\377\377\377\377\377\377\177", 8)).code(),
            StatusCode::kCorruption);
}

}  // namespace
}  // namespace docfeed::internal
