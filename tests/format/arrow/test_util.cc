#include "test_util.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdlib>
#include <cstring>

#include "base/file.h"

namespace docfeed::internal::arrow::testing {
namespace {

std::string Hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

}  // namespace

std::string ArrowDataPath(std::string_view relative) {
  return std::string(DOCFEED_TEST_DATA_DIR) + "/arrow/" + std::string(relative);
}

std::string MakeTempDir(std::string_view name) {
  const std::string dir = JoinPath(::testing::TempDir(), "docfeed_arrow_" + std::string(name));
  EXPECT_TRUE(RemoveAll(dir).ok());
  EXPECT_TRUE(CreateDirectory(dir).ok());
  return dir;
}

Result<StreamContents> ReadStream(std::span<const uint8_t> bytes, const std::string& name) {
  DOCFEED_ASSIGN_OR_RETURN(StreamReader reader, StreamReader::Open(bytes, name));
  StreamContents contents;
  contents.schema = reader.schema();
  while (true) {
    RecordBatch batch;
    DOCFEED_ASSIGN_OR_RETURN(bool more, reader.Next(&batch));
    if (!more) break;
    contents.batches.push_back(std::move(batch));
  }
  return contents;
}

nlohmann::json ValueToJson(const ArrayView& view, int64_t i) {
  if (view.IsNull(i)) return nullptr;
  switch (view.type()) {
    case TypeId::kNull:
      return nullptr;
    case TypeId::kBool:
      return view.GetBool(i);
    case TypeId::kUInt64:
      return view.GetUInt64(i);
    case TypeId::kFloat16:
    case TypeId::kFloat32:
    case TypeId::kFloat64:
      return view.GetDouble(i);
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
    case TypeId::kFixedSizeBinary:
      return Hex(view.GetBinary(i));
    case TypeId::kString:
    case TypeId::kLargeString:
      return std::string(view.GetString(i));
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kFixedSizeList: {
      nlohmann::json items = nlohmann::json::array();
      const auto [begin, end] = view.GetListRange(i);
      for (int64_t j = begin; j < end; ++j) items.push_back(ValueToJson(view.children[0], j));
      return items;
    }
    case TypeId::kStruct: {
      nlohmann::json object = nlohmann::json::object();
      for (const ArrayView& child : view.children) {
        object[child.field->name] = ValueToJson(child, i);
      }
      return object;
    }
    default:
      return view.GetInt64(i);
  }
}

nlohmann::json ColumnToJson(const ArrayView& view) {
  nlohmann::json values = nlohmann::json::array();
  for (int64_t i = 0; i < view.length; ++i) values.push_back(ValueToJson(view, i));
  return values;
}

Status CopyValue(const ArrayView& view, int64_t i, ArrayBuilder* builder) {
  if (view.IsNull(i)) return builder->AppendNull();
  switch (view.type()) {
    case TypeId::kBool:
      return builder->AppendBool(view.GetBool(i));
    case TypeId::kUInt64:
      return builder->AppendUInt(view.GetUInt64(i));
    case TypeId::kFloat16:
    case TypeId::kFloat32:
    case TypeId::kFloat64:
      return builder->AppendDouble(view.GetDouble(i));
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
    case TypeId::kFixedSizeBinary:
    case TypeId::kString:
    case TypeId::kLargeString:
      return builder->AppendBinary(view.GetBinary(i));
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kFixedSizeList: {
      const auto [begin, end] = view.GetListRange(i);
      for (int64_t j = begin; j < end; ++j) {
        DOCFEED_RETURN_IF_ERROR(CopyValue(view.children[0], j, &builder->child(0)));
      }
      return builder->FinishList();
    }
    case TypeId::kStruct:
      for (size_t k = 0; k < view.children.size(); ++k) {
        DOCFEED_RETURN_IF_ERROR(CopyValue(view.children[k], i, &builder->child(k)));
      }
      return builder->AppendStruct();
    default:
      return builder->AppendInt(view.GetInt64(i));
  }
}

}  // namespace docfeed::internal::arrow::testing
