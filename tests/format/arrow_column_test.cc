// Keeping a source's columns (format/arrow_column.h): an Arrow field survives its manifest JSON
// for every field of the test files (every type the reader supports), and a column is native
// only when its Hugging Face feature is the plain one docfeed would write.
#include "format/arrow_column.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/file.h"
#include "format/arrow/reader.h"

namespace docfeed::internal {
namespace {

using arrow::Field;
using arrow::TypeId;

const char* const kCases[] = {
    "huggingface-lerobot/pusht_image/train/data-00000-of-00001.arrow",
    "huggingface-datasets/cache-071f8664cd4c4be34f5ad90bd847cbc8.arrow",
    "pyarrow_cases/mixed_uncompressed.arrow",
    "pyarrow_cases/large_types.arrow",
};

TEST(ArrowColumn, EveryFieldOfTheTestFilesRoundTripsThroughJson) {
  for (const char* name : kCases) {
    Result<std::vector<uint8_t>> bytes =
        ReadFile(std::string(DOCFEED_TEST_DATA_DIR) + "/arrow/" + name);
    ASSERT_TRUE(bytes.ok());
    Result<arrow::StreamReader> in = arrow::StreamReader::Open(*bytes, name);
    ASSERT_TRUE(in.ok());
    for (const Field& f : in->schema().fields) {
      Result<Field> back = FieldFromJson(FieldToJson(f), "test");
      ASSERT_TRUE(back.ok()) << f.name << ": " << back.status().ToString();
      EXPECT_TRUE(arrow::SameType(*back, f))
          << arrow::TypeToString(*back) << " vs " << arrow::TypeToString(f);
      EXPECT_EQ(back->name, f.name);
      EXPECT_EQ(back->nullable, f.nullable);
    }
  }
}

TEST(ArrowColumn, KeptColumnIsNativeOnlyForPlainFeatures) {
  const Json value_int64 = Json::parse(R"({"dtype": "int64", "_type": "Value"})");
  const Json class_label = Json::parse(R"({"names": ["a", "b"], "_type": "ClassLabel"})");
  const Json list_string =
      Json::parse(R"({"feature": {"dtype": "string", "_type": "Value"}, "_type": "List"})");
  const Json sequence_string =
      Json::parse(R"({"feature": {"dtype": "string", "_type": "Value"}, "_type": "Sequence"})");
  const Field int64 = arrow::MakeField("x", TypeId::kInt64);
  const Field strings = arrow::MakeList("w", arrow::MakeField("item", TypeId::kString));

  EXPECT_EQ(KeptColumn(int64, &value_int64)->type, ColumnType::kInt64);
  Result<ColumnSpec> label = KeptColumn(int64, &class_label);
  ASSERT_TRUE(label.ok());
  EXPECT_EQ(label->type, ColumnType::kArrow);
  EXPECT_EQ(Json::parse(label->feature), class_label);
  EXPECT_TRUE(arrow::SameType(label->arrow, int64));
  EXPECT_EQ(KeptColumn(strings, &list_string)->type, ColumnType::kStringList);
  EXPECT_EQ(KeptColumn(strings, &sequence_string)->type, ColumnType::kStringList);
  EXPECT_EQ(KeptColumn(strings, &list_string, /*force_arrow=*/true)->type, ColumnType::kArrow);
  // int32 with a Value("int32") feature is not a docfeed int64: kept as it is.
  const Json value_int32 = Json::parse(R"({"dtype": "int32", "_type": "Value"})");
  EXPECT_EQ(KeptColumn(arrow::MakeField("y", TypeId::kInt32), &value_int32)->type,
            ColumnType::kArrow);
  EXPECT_EQ(KeptColumn(arrow::MakeField("y", TypeId::kInt32), nullptr).status().code(),
            StatusCode::kUnsupported);
}

TEST(ArrowColumn, MalformedFieldJsonIsRefused) {
  for (const char* text :
       {R"({"name": "x", "type": "int33", "nullable": true})",
        R"({"name": "x", "type": "list", "nullable": true})",
        R"({"name": "x", "type": "fixed_size_list", "nullable": true, "size": -1,
            "children": [{"name": "item", "type": "int8", "nullable": true}]})",
        R"({"name": "x", "type": "timestamp", "nullable": true, "unit": "fortnight"})",
        R"({"name": 3, "type": "int8", "nullable": true})", R"([1, 2])"}) {
    Result<Field> f = FieldFromJson(Json::parse(text), "manifest column x");
    EXPECT_EQ(f.status().code(), StatusCode::kCorruption) << text;
  }
}

}  // namespace
}  // namespace docfeed::internal
