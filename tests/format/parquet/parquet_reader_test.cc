// Unit tests of the Parquet reader's pieces (the Thrift compact protocol, the RLE/bit-packing
// hybrid) against the byte layouts their specifications give, and of FileReader on a file
// `datasets` wrote (tests/data/parquet/images.parquet), whole and damaged at every byte. The
// comparisons with pyarrow over every type and layout are tests/python/test_parquet_reader.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/file.h"
#include "base/mem_env.h"
#include "format/parquet/column_chunk.h"
#include "format/parquet/reader.h"
#include "format/parquet/thrift_compact.h"

namespace docfeed::internal::parquet {
namespace {

using T = ThriftType;

TEST(Hybrid, BitPackedRunFromTheSpecification) {
  // Parquet's Encodings.md: the values 0..7 with bit width 3 bit-packed are 10001000 11000110
  // 11111010; one group of 8 values: header (1 << 1) | 1.
  std::vector<uint32_t> out;
  ASSERT_TRUE(DecodeHybrid(std::vector<uint8_t>{0x03, 0x88, 0xC6, 0xFA}, 3, 8, &out).ok());
  EXPECT_EQ(out, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Only the first values of the last group count.
  ASSERT_TRUE(DecodeHybrid(std::vector<uint8_t>{0x03, 0x88, 0xC6, 0xFA}, 3, 5, &out).ok());
  EXPECT_EQ(out, (std::vector<uint32_t>{0, 1, 2, 3, 4}));
}

TEST(Hybrid, RleRunsAndTheirWidths) {
  std::vector<uint32_t> out;
  // At width 13 every RLE value takes two bytes (little-endian): five 3s, two 0x1234.
  ASSERT_TRUE(
      DecodeHybrid(std::vector<uint8_t>{0x0A, 0x03, 0x00, 0x04, 0x34, 0x12}, 13, 7, &out).ok());
  EXPECT_EQ(out, (std::vector<uint32_t>{3, 3, 3, 3, 3, 0x1234, 0x1234}));
  // Width 0: every value is 0, no value bytes.
  ASSERT_TRUE(DecodeHybrid(std::vector<uint8_t>{0x08}, 0, 4, &out).ok());
  EXPECT_EQ(out, (std::vector<uint32_t>{0, 0, 0, 0}));
}

TEST(Hybrid, RunningOutOfBytesOrAValueTooWideIsCorruption) {
  std::vector<uint32_t> out;
  EXPECT_EQ(DecodeHybrid(std::vector<uint8_t>{0x0A, 0x03}, 2, 6, &out).code(),
            StatusCode::kCorruption);  // 5 values, 6 wanted
  EXPECT_EQ(DecodeHybrid(std::vector<uint8_t>{0x03, 0x88}, 3, 8, &out).code(),
            StatusCode::kCorruption);  // a group needs 3 bytes
  EXPECT_EQ(DecodeHybrid(std::vector<uint8_t>{0x02, 0x07}, 2, 1, &out).code(),
            StatusCode::kCorruption);  // 7 is wider than 2 bits
  EXPECT_EQ(DecodeHybrid(std::vector<uint8_t>{}, 1, 1, &out).code(), StatusCode::kCorruption);
}

TEST(CompactProtocol, FieldsDeltasLongIdsListsAndSkipping) {
  // struct { 1: i32 -3, 2: string "ab", 3: bool true, 5: list<i32> [1, 2],
  //          300: i64 7 (long form: delta 0, zigzag i16), 301: struct { 1: i32 1 } (skipped) }
  const std::vector<uint8_t> bytes = {
      0x15, 0x05,              // field 1 (delta 1), i32, zigzag(-3) = 5
      0x18, 0x02, 'a',  'b',   // field 2, binary, length 2
      0x11,                    // field 3, bool true
      0x29, 0x25, 0x02, 0x04,  // field 5 (delta 2), list: 2 x i32, zigzag 1, 2
      0x06, 0xD8, 0x04, 0x0E,  // field (delta 0) i64, id zigzag(300) = 600 = 0xD8 0x04; value 7
      0x1C, 0x15, 0x02, 0x00,  // field 301 (delta 1), struct { 1: i32 1 }
      0x00};                   // stop
  CompactReader r(bytes);
  ASSERT_TRUE(r.BeginStruct().ok());
  int16_t id;
  T type;
  ASSERT_TRUE(r.ReadFieldHeader(&id, &type).ok());
  EXPECT_EQ(id, 1);
  EXPECT_EQ(*r.ReadI32(type), -3);
  ASSERT_TRUE(r.ReadFieldHeader(&id, &type).ok());
  EXPECT_EQ(id, 2);
  EXPECT_EQ(*r.ReadBinary(type), "ab");
  ASSERT_TRUE(r.ReadFieldHeader(&id, &type).ok());
  EXPECT_EQ(id, 3);
  EXPECT_TRUE(*r.ReadBool(type));
  ASSERT_TRUE(r.ReadFieldHeader(&id, &type).ok());
  EXPECT_EQ(id, 5);
  T element;
  int64_t n;
  ASSERT_TRUE(r.ReadListHeader(type, &element, &n).ok());
  ASSERT_EQ(n, 2);
  EXPECT_EQ(*r.ReadI32(element), 1);
  EXPECT_EQ(*r.ReadI32(element), 2);
  ASSERT_TRUE(r.ReadFieldHeader(&id, &type).ok());
  EXPECT_EQ(id, 300);
  EXPECT_EQ(*r.ReadI64(type), 7);
  ASSERT_TRUE(r.ReadFieldHeader(&id, &type).ok());
  EXPECT_EQ(id, 301);
  ASSERT_TRUE(r.Skip(type).ok());
  ASSERT_TRUE(r.ReadFieldHeader(&id, &type).ok());
  EXPECT_EQ(type, T::kStop);
  r.EndStruct();
  EXPECT_EQ(r.position(), bytes.size());
}

TEST(CompactProtocol, HostileBytesAreCorruption) {
  // A list claiming more elements than bytes, a varint past 10 bytes, nesting past the cap.
  const std::vector<uint8_t> long_list = {0xF5, 0xFF, 0xFF, 0x03};
  CompactReader list(long_list);
  T e;
  int64_t n;
  EXPECT_EQ(list.ReadListHeader(T::kList, &e, &n).code(), StatusCode::kCorruption);
  const std::vector<uint8_t> varint(12, 0xFF);
  CompactReader v(varint);
  EXPECT_EQ(v.ReadI64(T::kI64).status().code(), StatusCode::kCorruption);
  const std::vector<uint8_t> deep(100, 0x1C);  // struct inside struct inside ...
  CompactReader d(deep);
  EXPECT_EQ(d.Skip(T::kStruct).code(), StatusCode::kCorruption);
}

std::string TestFile() { return std::string(DOCFEED_TEST_DATA_DIR) + "/parquet/images.parquet"; }

Result<FileReader> OpenIn(MemEnv& env, const std::vector<uint8_t>& bytes) {
  DOCFEED_RETURN_IF_ERROR(env.WriteFile("/f.parquet", bytes));
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                           env.NewRandomAccessFile("/f.parquet"));
  return FileReader::Open(std::move(file), "/f.parquet");
}

TEST(FileReader, ReadsTheFileDatasetsWrote) {
  MemEnv env;
  Result<FileReader> reader = OpenIn(env, ReadFile(TestFile()).value());
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  ASSERT_EQ(reader->schema().fields.size(), 2u);
  EXPECT_EQ(arrow::TypeToString(reader->schema().fields[0]), "struct<bytes: binary, path: string>");
  EXPECT_NE(reader->schema().FindMetadata("huggingface"), nullptr);
  ASSERT_EQ(reader->num_row_groups(), 2);
  const std::vector<std::string> names = {"gray4.png", "subsampling444.jpg", "palette4.png",
                                          "orientation8.webp"};
  const size_t both[] = {0, 1};
  int64_t row = 0;
  for (int g = 0; g < 2; ++g) {
    RowGroupBatch batch;
    ASSERT_TRUE(reader->ReadRowGroup(g, both, &batch).ok());
    ASSERT_EQ(batch.num_rows, 2);
    for (int64_t i = 0; i < batch.num_rows; ++i, ++row) {
      const std::string& name = names[static_cast<size_t>(row)];
      const auto bytes = batch.columns[0].children[0].GetBinary(i);
      EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.end()),
                ReadFile(std::string(DOCFEED_TEST_DATA_DIR) + "/images/gen/" + name).value());
      EXPECT_EQ(batch.columns[0].children[1].GetString(i), name);
      EXPECT_EQ(batch.columns[1].GetString(i), "page " + std::to_string(row));
    }
  }
}

TEST(FileReader, EveryTruncationAndEveryDamagedByteIsAStatusNeverACrash) {
  // Under ASan (make test-asan) an out-of-bounds read here fails the test.
  const std::vector<uint8_t> good = ReadFile(TestFile()).value();
  const size_t both[] = {0, 1};
  auto read_all = [&](const std::vector<uint8_t>& bytes) -> Status {
    MemEnv env;
    DOCFEED_ASSIGN_OR_RETURN(FileReader reader, OpenIn(env, bytes));
    for (int g = 0; g < reader.num_row_groups(); ++g) {
      RowGroupBatch batch;
      DOCFEED_RETURN_IF_ERROR(reader.ReadRowGroup(g, both, &batch));
    }
    return Status::Ok();
  };
  ASSERT_TRUE(read_all(good).ok());
  for (size_t n = 0; n < good.size(); n += 7) {
    const Status s =
        read_all(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<long>(n)));
    EXPECT_FALSE(s.ok()) << "truncated to " << n;
    EXPECT_NE(s.ToString().find("/f.parquet"), std::string::npos) << s.ToString();
  }
  int failures = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<uint8_t> bad = good;
    bad[i] ^= 0xFF;
    failures += read_all(bad).ok() ? 0 : 1;
  }
  // Damage inside compressed image bytes goes unseen (pyarrow writes no page CRCs, and the
  // codecs do not check), so only some damaged files fail; none may crash.
  EXPECT_GT(failures, 0);
}

}  // namespace
}  // namespace docfeed::internal::parquet
