// StreamReader on corrupt input: every byte flipped (several patterns), every truncation, empty
// and garbage input, and huge declared lengths. The reader must return a clean error or data,
// never crash or read out of bounds (run under the asan preset as well).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/file.h"
#include "format/arrow/builder.h"
#include "format/arrow/reader.h"
#include "format/arrow/writer.h"
#include "test_util.h"

namespace docfeed::internal::arrow {
namespace {

struct Outcome {
  int ok = 0;
  int errors = 0;
};

// Reads everything, touching every value; returns whether the whole stream read cleanly.
// Each attempt gets its own exactly-sized heap copy so that ASan flags any overread.
bool ReadEverything(std::vector<uint8_t> bytes) {
  auto reader = StreamReader::Open(bytes, "mutant.arrow");
  if (!reader.ok()) {
    EXPECT_NE(reader.status().message().find("mutant.arrow"), std::string::npos);
    return false;
  }
  std::vector<uint64_t> offsets;
  while (true) {
    RecordBatch batch;
    auto more = reader->Next(&batch);
    if (!more.ok()) {
      EXPECT_NE(more.status().message().find("mutant.arrow"), std::string::npos);
      return false;
    }
    if (!*more) break;
    for (const ArrayView& column : batch.columns) testing::TouchAllValues(column);
    offsets.push_back(batch.message_offset);
  }
  for (uint64_t offset : offsets) {
    auto again = reader->ReadBatchAt(offset);
    if (!again.ok()) return false;
    for (const ArrayView& column : again->columns) testing::TouchAllValues(column);
  }
  return true;
}

Outcome FlipEveryByte(const std::vector<uint8_t>& original) {
  Outcome outcome;
  for (int pattern : {0x01, 0x10, 0x80, 0xFF}) {
    for (size_t i = 0; i < original.size(); ++i) {
      std::vector<uint8_t> mutant = original;
      mutant[i] = static_cast<uint8_t>(mutant[i] ^ pattern);
      (ReadEverything(std::move(mutant)) ? outcome.ok : outcome.errors)++;
    }
  }
  return outcome;
}

Outcome TruncateEverywhere(const std::vector<uint8_t>& original) {
  Outcome outcome;
  for (size_t length = 0; length < original.size(); ++length) {
    std::vector<uint8_t> prefix(original.begin(),
                                original.begin() + static_cast<std::ptrdiff_t>(length));
    (ReadEverything(std::move(prefix)) ? outcome.ok : outcome.errors)++;
  }
  return outcome;
}

Schema SmallSchema() {
  Schema schema;
  schema.fields = {
      MakeStruct("image",
                 {MakeField("bytes", TypeId::kBinary), MakeField("path", TypeId::kString)}),
      MakeField("id", TypeId::kInt64),
      MakeField("flag", TypeId::kBool),
      MakeList("tags", MakeField("item", TypeId::kInt32)),
      MakeFixedSizeList("xy", MakeField("item", TypeId::kFloat32), 2),
      MakeField("big", TypeId::kLargeString),
  };
  schema.metadata = {{"huggingface", "{}"}};
  return schema;
}

// A small stream with two batches and nulls in every column.
std::vector<uint8_t> WriteSmallStream(const std::string& name, Compression compression,
                                      std::vector<BatchLocation>* locations = nullptr) {
  const std::string path = JoinPath(testing::MakeTempDir(name), "small.arrow");
  auto writer = StreamWriter::Create(path, SmallSchema(), compression);
  EXPECT_TRUE(writer.ok());
  std::vector<ArrayBuilder> b = ArrayBuilder::ForSchema(SmallSchema());
  for (int batch = 0; batch < 2; ++batch) {
    for (int64_t r = 0; r < 5; ++r) {
      const bool null = r == 2;
      if (null) {
        EXPECT_TRUE(b[0].AppendNull().ok());
      } else {
        EXPECT_TRUE(
            b[0].child(0).AppendString("\x89PNG" + std::string(static_cast<size_t>(r), 'z')).ok());
        EXPECT_TRUE(b[0].child(1).AppendNull().ok());
        EXPECT_TRUE(b[0].AppendStruct().ok());
      }
      EXPECT_TRUE((null ? b[1].AppendNull() : b[1].AppendInt(r * 7)).ok());
      EXPECT_TRUE((null ? b[2].AppendNull() : b[2].AppendBool(r % 2 == 0)).ok());
      for (int64_t j = 0; j < r; ++j) EXPECT_TRUE(b[3].child(0).AppendInt(j).ok());
      EXPECT_TRUE((null ? b[3].AppendNull() : b[3].FinishList()).ok());
      if (null) {
        EXPECT_TRUE(b[4].AppendNull().ok());
      } else {
        EXPECT_TRUE(b[4].child(0).AppendDouble(1.5).ok());
        EXPECT_TRUE(b[4].child(0).AppendDouble(-2.0).ok());
        EXPECT_TRUE(b[4].FinishList().ok());
      }
      EXPECT_TRUE((null ? b[5].AppendNull() : b[5].AppendString("s" + std::to_string(r))).ok());
    }
    auto location = writer->WriteBatch(b);
    EXPECT_TRUE(location.ok());
    if (locations != nullptr && location.ok()) locations->push_back(*location);
  }
  EXPECT_TRUE(writer->Close().ok());
  auto bytes = ReadFile(path);
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? *bytes : std::vector<uint8_t>();
}

std::vector<uint8_t> Fixture(const std::string& relative) {
  auto bytes = ReadFile(testing::ArrowDataPath(relative));
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<uint8_t>();
}

class Corruption : public ::testing::TestWithParam<std::string> {
 protected:
  std::vector<uint8_t> Input() const {
    const std::string& name = GetParam();
    if (name == "written_none") return WriteSmallStream(name, Compression::kNone);
    if (name == "written_zstd") return WriteSmallStream(name, Compression::kZstd);
    if (name == "written_lz4") return WriteSmallStream(name, Compression::kLz4Frame);
    if (name == "tiny_text") {
      return Fixture("stochasticai-xTuring/tiny_text_dataset/data-00000-of-00001.arrow");
    }
    return Fixture("huggingface-datasets/cache-071f8664cd4c4be34f5ad90bd847cbc8.arrow");
  }
};

TEST_P(Corruption, EveryByteFlippedNeverCrashes) {
  const std::vector<uint8_t> original = Input();
  ASSERT_TRUE(ReadEverything(original));
  const Outcome outcome = FlipEveryByte(original);
  EXPECT_GT(outcome.errors, 0);
  RecordProperty("mutants_ok", outcome.ok);
  RecordProperty("mutants_rejected", outcome.errors);
}

TEST_P(Corruption, EveryTruncationNeverCrashes) {
  const std::vector<uint8_t> original = Input();
  const Outcome outcome = TruncateEverywhere(original);
  // Prefixes that end exactly at a message boundary are valid streams; all others are errors.
  EXPECT_GT(outcome.errors, static_cast<int>(original.size()) - 8);
}

INSTANTIATE_TEST_SUITE_P(ArrowReader, Corruption,
                         ::testing::Values("written_none", "written_zstd", "written_lz4",
                                           "tiny_text", "legacy_v4"));

TEST(ArrowReader, RejectsEmptyAndGarbage) {
  EXPECT_EQ(StreamReader::Open({}, "empty.arrow").status().code(), StatusCode::kCorruption);
  std::mt19937 rng(42);
  for (size_t size : {1u, 3u, 4u, 7u, 8u, 16u, 100u, 1000u, 4096u}) {
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<uint8_t> garbage(size);
      for (uint8_t& b : garbage) b = static_cast<uint8_t>(rng());
      ReadEverything(garbage);
      // Garbage behind a plausible prefix reaches the flatbuffer parser.
      if (size >= 8) {
        const uint32_t marker = 0xFFFFFFFF;
        const auto length = static_cast<uint32_t>(size - 8);
        std::memcpy(garbage.data(), &marker, 4);
        std::memcpy(garbage.data() + 4, &length, 4);
        ReadEverything(garbage);
      }
    }
  }
}

TEST(ArrowReader, RejectsHugeMetadataAndBodyLengths) {
  std::vector<uint8_t> huge_metadata = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0, 0, 0, 0};
  auto opened = StreamReader::Open(huge_metadata, "huge.arrow");
  EXPECT_EQ(opened.status().code(), StatusCode::kCorruption);
  EXPECT_NE(opened.status().message().find("huge.arrow"), std::string::npos);

  // A batch whose Buffer entry claims a huge length: patch the second batch's values buffer
  // length inside the flatbuffer by searching for its (offset, length) pair.
  std::vector<BatchLocation> locations;
  std::vector<uint8_t> bytes = WriteSmallStream("huge_body", Compression::kNone, &locations);
  ASSERT_EQ(locations.size(), 2u);
  const BatchLocation& loc = locations[1];
  const int64_t buffer_offset = static_cast<int64_t>(loc.buffers[3].offset - loc.body_offset);
  const int64_t buffer_length = static_cast<int64_t>(loc.buffers[3].length);
  uint8_t needle[16];
  std::memcpy(needle, &buffer_offset, 8);
  std::memcpy(needle + 8, &buffer_length, 8);
  auto begin = bytes.begin() + static_cast<std::ptrdiff_t>(loc.message_offset);
  auto end = bytes.begin() + static_cast<std::ptrdiff_t>(loc.body_offset);
  auto found = std::search(begin, end, needle, needle + 16);
  ASSERT_NE(found, end);
  const int64_t huge = int64_t{1} << 60;
  std::memcpy(&*found + 8, &huge, 8);
  auto reader = StreamReader::Open(bytes, "patched.arrow");
  ASSERT_TRUE(reader.ok());
  RecordBatch batch;
  ASSERT_TRUE(reader->Next(&batch).ok());
  auto second = reader->Next(&batch);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kCorruption);
  const std::string message(second.status().message());
  EXPECT_NE(message.find("patched.arrow: record batch 1"), std::string::npos) << message;
  EXPECT_NE(message.find("column 'image.bytes'"), std::string::npos) << message;
}

TEST(ArrowReader, RejectsHugeDecompressedLengths) {
  std::vector<BatchLocation> locations;
  const std::vector<uint8_t> original =
      WriteSmallStream("huge_zstd", Compression::kZstd, &locations);
  ASSERT_FALSE(locations.empty());
  // Every non-empty compressed buffer starts with its int64 uncompressed length.
  for (int64_t declared : {int64_t{1} << 40, int64_t{100} << 20, int64_t{-5}, int64_t{3}}) {
    for (const BufferLocation& buffer : locations[0].buffers) {
      if (buffer.length == 0) continue;
      std::vector<uint8_t> bytes = original;
      std::memcpy(bytes.data() + buffer.offset, &declared, 8);
      auto reader = StreamReader::Open(bytes, "bomb.arrow");
      ASSERT_TRUE(reader.ok());
      RecordBatch batch;
      auto next = reader->Next(&batch);
      int64_t stored;
      std::memcpy(&stored, original.data() + buffer.offset, 8);
      if (stored == -1 && declared != -1) {
        // Stored raw: the patched prefix now claims compressed data.
        EXPECT_FALSE(next.ok() && declared > (int64_t{1} << 30));
        continue;
      }
      ASSERT_FALSE(next.ok()) << "declared " << declared;
      EXPECT_EQ(next.status().code(), StatusCode::kCorruption);
    }
  }
}

}  // namespace
}  // namespace docfeed::internal::arrow
