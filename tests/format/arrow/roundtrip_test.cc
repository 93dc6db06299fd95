// StreamWriter -> StreamReader round trips over every supported type, nulls, empty and multiple
// batches and each compression; BatchLocation accuracy; ArrayBuilder argument checks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/file.h"
#include "format/arrow/builder.h"
#include "format/arrow/compression.h"
#include "format/arrow/reader.h"
#include "format/arrow/writer.h"
#include "test_util.h"

namespace docfeed::internal::arrow {
namespace {

using nlohmann::json;

std::span<const uint8_t> Bytes(std::string_view text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

// Every supported type, including the HF image struct and nested lists.
Schema AllTypesSchema() {
  Schema schema;
  schema.fields = {
      MakeStruct("image",
                 {MakeField("bytes", TypeId::kBinary), MakeField("path", TypeId::kString)}),
      MakeField("i8", TypeId::kInt8),
      MakeField("i16", TypeId::kInt16),
      MakeField("i32", TypeId::kInt32),
      MakeField("i64", TypeId::kInt64, /*nullable=*/false),
      MakeField("u8", TypeId::kUInt8),
      MakeField("u16", TypeId::kUInt16),
      MakeField("u32", TypeId::kUInt32),
      MakeField("u64", TypeId::kUInt64),
      MakeField("f16", TypeId::kFloat16),
      MakeField("f32", TypeId::kFloat32),
      MakeField("f64", TypeId::kFloat64),
      MakeField("flag", TypeId::kBool),
      MakeField("text", TypeId::kString),
      MakeField("big_text", TypeId::kLargeString),
      MakeField("big_blob", TypeId::kLargeBinary),
      MakeFixedSizeBinary("digest", 4),
      MakeField("day", TypeId::kDate32),
      MakeField("ms", TypeId::kDate64),
      MakeTimestamp("when", TimeUnit::kMicro, "UTC"),
      MakeList("tags", MakeField("item", TypeId::kInt64)),
      MakeLargeList("words", MakeField("item", TypeId::kString)),
      MakeFixedSizeList("state", MakeField("item", TypeId::kFloat32), 2),
      MakeList("nested", MakeList("item", MakeField("item", TypeId::kInt32))),
      MakeField("nothing", TypeId::kNull),
  };
  schema.fields[0].metadata = {{"field_key", "field_value"}};
  schema.metadata = {{"huggingface", R"({"info": {"features": {}}})"}, {"docfeed", "1"}};
  return schema;
}

// Appends row `r` to the builders of AllTypesSchema(); every 5th row has nulls.
void AppendRow(std::vector<ArrayBuilder>& b, int64_t r) {
  const bool null = r % 5 == 3;
  auto ok = [](const Status& s) { ASSERT_TRUE(s.ok()) << s.ToString(); };
  if (null) {
    ok(b[0].AppendNull());
  } else {
    const std::string png = "\x89PNG" + std::string(static_cast<size_t>(r % 7), 'x');
    ok(b[0].child(0).AppendBinary(Bytes(png)));
    ok(r % 2 ? b[0].child(1).AppendString("p" + std::to_string(r)) : b[0].child(1).AppendNull());
    ok(b[0].AppendStruct());
  }
  ok(null ? b[1].AppendNull() : b[1].AppendInt(-(r % 128)));
  ok(b[2].AppendInt(-r * 3));
  ok(b[3].AppendInt(r * 100000));
  ok(b[4].AppendInt(r * 1'000'000'007LL));
  ok(b[5].AppendUInt(static_cast<uint64_t>(r % 256)));
  ok(b[6].AppendInt(65535 - r));
  ok(b[7].AppendUInt(4294967295u - static_cast<uint64_t>(r)));
  ok(b[8].AppendUInt(18446744073709551615ull - static_cast<uint64_t>(r)));
  ok(b[9].AppendDouble(static_cast<double>(r) * 0.25 - 3.0));
  ok(null ? b[10].AppendNull() : b[10].AppendDouble(static_cast<double>(r) / 8.0));
  ok(b[11].AppendDouble(static_cast<double>(r) * 1e100));
  ok(null ? b[12].AppendNull() : b[12].AppendBool(r % 3 == 0));
  ok(null ? b[13].AppendNull() : b[13].AppendString("row " + std::to_string(r) + " é"));
  ok(b[14].AppendString(std::string(static_cast<size_t>(r % 4), 'L')));
  ok(null ? b[15].AppendNull() : b[15].AppendBinary(Bytes(std::string("\0\xff", 2))));
  ok(null ? b[16].AppendNull() : b[16].AppendBinary(Bytes("abc" + std::to_string(r % 10))));
  ok(b[17].AppendInt(19000 + r));
  ok(b[18].AppendInt(1'700'000'000'000LL + r));
  ok(null ? b[19].AppendNull() : b[19].AppendInt(1'700'000'000'000'000LL + r));
  if (null) {
    ok(b[20].AppendNull());
    ok(b[21].AppendNull());
    ok(b[22].AppendNull());
    ok(b[23].AppendNull());
  } else {
    for (int64_t j = 0; j < r % 4; ++j) ok(b[20].child(0).AppendInt(r * 10 + j));
    ok(b[20].FinishList());
    ok(b[21].child(0).AppendString("w" + std::to_string(r)));
    ok(b[21].child(0).AppendNull());
    ok(b[21].FinishList());
    ok(b[22].child(0).AppendDouble(static_cast<double>(r)));
    ok(b[22].child(0).AppendNull());
    ok(b[22].FinishList());
    ArrayBuilder& inner = b[23].child(0);
    ok(inner.child(0).AppendInt(r));
    ok(inner.FinishList());
    ok(inner.AppendNull());
    ok(inner.FinishList());  // empty list
    ok(b[23].FinishList());
  }
  ok(b[24].AppendNull());
}

// Independent expectation for row r, written in the JSON encoding of test_util.h.
json ExpectedRow(const std::string& column, int64_t r) {
  const bool null = r % 5 == 3;
  if (column == "text") return null ? json(nullptr) : json("row " + std::to_string(r) + " é");
  if (column == "i64") return r * 1'000'000'007LL;
  if (column == "u64") return 18446744073709551615ull - static_cast<uint64_t>(r);
  if (column == "f16") return static_cast<double>(r) * 0.25 - 3.0;  // exact in half precision
  if (column == "tags") {
    if (null) return nullptr;
    json items = json::array();
    for (int64_t j = 0; j < r % 4; ++j) items.push_back(r * 10 + j);
    return items;
  }
  if (column == "nested")
    return null ? json(nullptr) : json::parse("[[" + std::to_string(r) + "],null,[]]");
  if (column == "state")
    return null ? json(nullptr) : json::array({static_cast<double>(r), nullptr});
  if (column == "digest") {
    if (null) return nullptr;
    const std::string text = "abc" + std::to_string(r % 10);
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string hex;
    for (unsigned char c : text) hex += {kDigits[c >> 4], kDigits[c & 15]};
    return hex;
  }
  return json();  // not checked individually
}

struct Written {
  std::string path;
  std::vector<BatchLocation> locations;
};

// Writes batches of the given row counts (rows numbered consecutively).
Written WriteAllTypes(const std::string& name, Compression compression,
                      const std::vector<int64_t>& batch_rows) {
  Written written;
  written.path = JoinPath(testing::MakeTempDir(name), "data-00000-of-00001.arrow");
  auto writer = StreamWriter::Create(written.path, AllTypesSchema(), compression);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  if (!writer.ok()) return written;
  std::vector<ArrayBuilder> builders = ArrayBuilder::ForSchema(writer->schema());
  int64_t row = 0;
  for (int64_t rows : batch_rows) {
    for (int64_t i = 0; i < rows; ++i) AppendRow(builders, row++);
    auto location = writer->WriteBatch(builders);
    EXPECT_TRUE(location.ok()) << location.status().ToString();
    if (location.ok()) written.locations.push_back(std::move(location).value());
    EXPECT_EQ(builders[0].length(), 0);  // reset after writing
  }
  EXPECT_TRUE(writer->Close().ok());
  return written;
}

class RoundTrip : public ::testing::TestWithParam<Compression> {};

TEST_P(RoundTrip, AllTypesNullsEmptyAndSeveralBatches) {
  const Compression compression = GetParam();
  const std::vector<int64_t> batch_rows = {17, 0, 40, 1};
  const Written written = WriteAllTypes("roundtrip" + std::to_string(static_cast<int>(compression)),
                                        compression, batch_rows);
  ASSERT_EQ(written.locations.size(), batch_rows.size());
  auto file = MappedFile::Open(written.path);
  ASSERT_TRUE(file.ok());
  auto contents = testing::ReadStream(file->bytes(), written.path);
  ASSERT_TRUE(contents.ok()) << contents.status().ToString();
  EXPECT_EQ(contents->schema, AllTypesSchema());
  ASSERT_EQ(contents->batches.size(), batch_rows.size());
  auto reader = StreamReader::Open(file->bytes(), written.path);
  ASSERT_TRUE(reader.ok());
  int64_t row = 0;
  for (size_t b = 0; b < batch_rows.size(); ++b) {
    const RecordBatch& batch = contents->batches[b];
    ASSERT_EQ(batch.num_rows, batch_rows[b]);
    EXPECT_EQ(batch.message_offset, written.locations[b].message_offset);
    EXPECT_EQ(batch.body_offset, written.locations[b].body_offset);
    EXPECT_EQ(batch.message_offset % 8, 0u);
    EXPECT_EQ(batch.compressed, compression != Compression::kNone);
    for (size_t c = 0; c < batch.columns.size(); ++c) {
      const std::string& name = batch.columns[c].field->name;
      for (int64_t i = 0; i < batch.num_rows; ++i) {
        const json expected = ExpectedRow(name, row + i);
        if (!expected.is_null() || name == "text") {
          EXPECT_EQ(testing::ValueToJson(batch.columns[c], i), expected)
              << name << " row " << row + i;
        }
      }
    }
    // Random access returns the same values.
    auto again = reader->ReadBatchAt(written.locations[b].message_offset);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    for (size_t c = 0; c < batch.columns.size(); ++c) {
      EXPECT_EQ(testing::ColumnToJson(again->columns[c]), testing::ColumnToJson(batch.columns[c]));
    }
    row += batch.num_rows;
  }
  // One RecordBatch reused for random access, last batch first, so its decompressed buffers are
  // reused both larger and smaller than needed: the same values every time.
  RecordBatch reused;
  for (size_t b = batch_rows.size(); b-- > 0;) {
    ASSERT_TRUE(reader->ReadBatchAt(written.locations[b].message_offset, &reused).ok());
    ASSERT_EQ(reused.columns.size(), contents->batches[b].columns.size());
    for (size_t c = 0; c < reused.columns.size(); ++c) {
      EXPECT_EQ(testing::ColumnToJson(reused.columns[c]),
                testing::ColumnToJson(contents->batches[b].columns[c]))
          << "batch " << b;
    }
  }
  // Image struct: nulls in the parent, in the path child, and the PNG prefix.
  const RecordBatch& first = contents->batches[0];
  EXPECT_TRUE(first.columns[0].IsNull(3));
  EXPECT_EQ(first.columns[0].null_count, 3);  // rows 3, 8, 13
  EXPECT_EQ(first.columns[0].children[0].GetString(5), "\x89PNGxxxxx");
  EXPECT_EQ(first.columns[0].children[1].GetString(5), "p5");
  EXPECT_TRUE(first.columns[0].children[1].IsNull(4));
  // A column without nulls has no validity buffer.
  EXPECT_EQ(first.columns[4].null_count, 0);
  EXPECT_TRUE(first.columns[4].validity.empty());
  EXPECT_EQ(first.columns[24].null_count, 17);  // null type
}

INSTANTIATE_TEST_SUITE_P(ArrowWriter, RoundTrip,
                         ::testing::Values(Compression::kNone, Compression::kZstd,
                                           Compression::kLz4Frame),
                         [](const auto& param_info) {
                           switch (param_info.param) {
                             case Compression::kZstd:
                               return std::string("Zstd");
                             case Compression::kLz4Frame:
                               return std::string("Lz4Frame");
                             default:
                               return std::string("None");
                           }
                         });

TEST(ArrowWriter, BufferLocationsPointAtTheBytesInTheFile) {
  const Written written = WriteAllTypes("locations", Compression::kNone, {12});
  ASSERT_EQ(written.locations.size(), 1u);
  auto file = ReadFile(written.path);
  ASSERT_TRUE(file.ok());
  const BatchLocation& location = written.locations[0];
  // IPC order: image(validity), image.bytes(validity, offsets, values), ...
  ASSERT_GE(location.buffers.size(), 4u);
  const BufferLocation& values = location.buffers[3];
  std::string expected;
  for (int64_t r = 0; r < 12; ++r) {
    if (r % 5 != 3) expected += "\x89PNG" + std::string(static_cast<size_t>(r % 7), 'x');
  }
  ASSERT_EQ(values.length, expected.size());
  ASSERT_LE(values.offset + values.length, file->size());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(file->data() + values.offset), values.length),
            expected);
  for (const BufferLocation& buffer : location.buffers) EXPECT_EQ(buffer.offset % 8, 0u);
  EXPECT_EQ(location.body_offset + location.body_length + 8, file->size());  // + EOS
  const uint8_t eos[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0};
  EXPECT_EQ(std::memcmp(file->data() + file->size() - 8, eos, 8), 0);
}

// A reused (longer, stale) output buffer is neither cleared nor shown: the view is exactly the
// declared length, every byte of it written by the codec, and a codec that produces fewer bytes
// than declared is an error even though the stale bytes would fill the gap.
TEST(ArrowCompression, ReusedBufferViewIsExactlyTheDecompressedBytes) {
  std::vector<uint8_t> raw(3000);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<uint8_t>(i * 7 % 13);
  for (CompressionCodec codec : {CompressionCodec::kZstd, CompressionCodec::kLz4Frame}) {
    std::vector<uint8_t> framed;
    ASSERT_TRUE(CompressBuffer(codec, raw, &framed).ok());
    int64_t declared = 0;
    std::memcpy(&declared, framed.data(), sizeof(declared));
    ASSERT_EQ(declared, 3000);  // compressible: not stored raw
    std::vector<uint8_t> out(5000, 0xAA);
    const uint8_t* block = out.data();
    Result<std::span<const uint8_t>> view = DecompressBuffer(codec, framed, &out);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    EXPECT_EQ(view->data(), block);  // reused, not reallocated
    EXPECT_EQ(std::vector<uint8_t>(view->begin(), view->end()), raw);
    declared = 3001;  // one byte more than the frame holds
    std::memcpy(framed.data(), &declared, sizeof(declared));
    EXPECT_EQ(DecompressBuffer(codec, framed, &out).status().code(), StatusCode::kCorruption);
  }
}

TEST(ArrowWriter, EmptyStreamHasSchemaAndEos) {
  const std::string path = JoinPath(testing::MakeTempDir("empty"), "empty.arrow");
  auto writer = StreamWriter::Create(path, AllTypesSchema());
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->Close().ok());
  auto file = ReadFile(path);
  ASSERT_TRUE(file.ok());
  auto contents = testing::ReadStream(*file, path);
  ASSERT_TRUE(contents.ok()) << contents.status().ToString();
  EXPECT_TRUE(contents->batches.empty());
  EXPECT_EQ(contents->schema, AllTypesSchema());
}

TEST(ArrowWriter, RejectsMismatchedColumns) {
  Schema schema;
  schema.fields = {MakeField("a", TypeId::kInt64), MakeField("b", TypeId::kString)};
  const std::string path = JoinPath(testing::MakeTempDir("mismatch"), "m.arrow");
  auto writer = StreamWriter::Create(path, schema);
  ASSERT_TRUE(writer.ok());
  std::vector<ArrayBuilder> builders = ArrayBuilder::ForSchema(schema);
  ASSERT_TRUE(builders[0].AppendInt(1).ok());
  EXPECT_EQ(writer->WriteBatch(builders).status().code(), StatusCode::kInvalidArgument);
  std::vector<ArrayBuilder> wrong;
  wrong.emplace_back(MakeField("a", TypeId::kInt32));
  wrong.emplace_back(MakeField("b", TypeId::kString));
  EXPECT_EQ(writer->WriteBatch(wrong).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(builders[1].AppendString("x").ok());
  EXPECT_TRUE(writer->WriteBatch(builders).ok());
  EXPECT_TRUE(writer->Close().ok());
  EXPECT_FALSE(writer->WriteBatch(builders).ok());
}

TEST(ArrowWriter, RejectsInvalidSchema) {
  Schema schema;
  Field list = MakeField("l", TypeId::kList);  // no child
  schema.fields = {list};
  auto writer = StreamWriter::Create(JoinPath(testing::MakeTempDir("bad"), "b.arrow"), schema);
  EXPECT_EQ(writer.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(writer.status().message().find("'l'"), std::string::npos);
}

TEST(ArrowBuilder, ChecksTypesRangesAndNesting) {
  ArrayBuilder i8(MakeField("x", TypeId::kInt8));
  EXPECT_EQ(i8.AppendInt(128).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(i8.AppendInt(-129).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(i8.AppendInt(-128).ok());
  EXPECT_EQ(i8.AppendString("no").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(i8.AppendDouble(1.0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(i8.length(), 1);

  ArrayBuilder u32(MakeField("u", TypeId::kUInt32));
  EXPECT_EQ(u32.AppendInt(-1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(u32.AppendUInt(1ull << 32).code(), StatusCode::kInvalidArgument);

  ArrayBuilder fsb(MakeFixedSizeBinary("d", 3));
  EXPECT_EQ(fsb.AppendString("four").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(fsb.AppendString("abc").ok());

  ArrayBuilder fsl(MakeFixedSizeList("v", MakeField("item", TypeId::kFloat32), 2));
  ASSERT_TRUE(fsl.child(0).AppendDouble(1).ok());
  EXPECT_EQ(fsl.FinishList().code(), StatusCode::kInvalidArgument);  // needs 2 values
  ASSERT_TRUE(fsl.child(0).AppendDouble(2).ok());
  EXPECT_TRUE(fsl.FinishList().ok());

  ArrayBuilder list(MakeList("l", MakeField("item", TypeId::kInt64)));
  ASSERT_TRUE(list.child(0).AppendInt(1).ok());
  EXPECT_EQ(list.CheckConsistent().code(), StatusCode::kInvalidArgument);  // no FinishList
  ASSERT_TRUE(list.FinishList().ok());
  EXPECT_TRUE(list.CheckConsistent().ok());

  ArrayBuilder st(
      MakeStruct("s", {MakeField("a", TypeId::kInt64), MakeField("b", TypeId::kInt64)}));
  ASSERT_TRUE(st.child(0).AppendInt(1).ok());
  EXPECT_EQ(st.AppendStruct().code(), StatusCode::kInvalidArgument);  // b missing
  ASSERT_TRUE(st.child(1).AppendInt(2).ok());
  EXPECT_TRUE(st.AppendStruct().ok());
  EXPECT_TRUE(st.AppendNull().ok());
  EXPECT_EQ(st.child(0).length(), 2);
  EXPECT_GT(st.total_bytes(), 0);
  st.Reset();
  EXPECT_EQ(st.length(), 0);
  EXPECT_EQ(st.child(1).length(), 0);
}

TEST(ArrowSchema, TypeToStringMatchesPyarrow) {
  EXPECT_EQ(TypeToString(MakeStruct(
                "s", {MakeField("bytes", TypeId::kBinary), MakeField("path", TypeId::kString)})),
            "struct<bytes: binary, path: string>");
  EXPECT_EQ(TypeToString(MakeList("l", MakeField("item", TypeId::kInt64))), "list<item: int64>");
  EXPECT_EQ(TypeToString(MakeFixedSizeList("f", MakeField("item", TypeId::kFloat32), 2)),
            "fixed_size_list<item: float>[2]");
  EXPECT_EQ(TypeToString(MakeList("l", MakeField("item", TypeId::kInt64, false))),
            "list<item: int64 not null>");
  EXPECT_EQ(TypeToString(MakeTimestamp("t", TimeUnit::kNano)), "timestamp[ns]");
}

}  // namespace
}  // namespace docfeed::internal::arrow
