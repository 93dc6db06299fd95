// StreamReader on real files written by Hugging Face `datasets` (tests/data/arrow/SOURCES.md).
// Expected schemas, row counts and values come from that provenance file and from pyarrow.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/file.h"
#include "format/arrow/reader.h"
#include "test_util.h"

namespace docfeed::internal::arrow {
namespace {

using testing::ArrowDataPath;
using testing::ReadStream;
using testing::StreamContents;

struct Opened {
  MappedFile file;
  StreamContents contents;
};

Opened OpenFixture(const std::string& relative) {
  Opened opened;
  auto file = MappedFile::Open(ArrowDataPath(relative));
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return opened;
  opened.file = std::move(file).value();
  auto contents = ReadStream(opened.file.bytes(), relative);
  EXPECT_TRUE(contents.ok()) << contents.status().ToString();
  if (contents.ok()) opened.contents = std::move(contents).value();
  return opened;
}

std::vector<std::string> SchemaStrings(const Schema& schema) {
  std::vector<std::string> out;
  for (const Field& field : schema.fields) {
    out.push_back(field.name + ": " + TypeToString(field) + (field.nullable ? "" : " not null"));
  }
  return out;
}

int64_t TotalRows(const StreamContents& contents) {
  int64_t rows = 0;
  for (const RecordBatch& batch : contents.batches) rows += batch.num_rows;
  return rows;
}

TEST(ArrowFixtures, PushtImageSchemaRowsAndPngs) {
  const Opened opened =
      OpenFixture("huggingface-lerobot/pusht_image/train/data-00000-of-00001.arrow");
  const StreamContents& c = opened.contents;
  EXPECT_EQ(
      SchemaStrings(c.schema),
      (std::vector<std::string>{"observation.image: struct<bytes: binary, path: string>",
                                "observation.state: fixed_size_list<item: float>[2]",
                                "action: fixed_size_list<item: float>[2]", "episode_index: int64",
                                "frame_index: int64", "timestamp: float", "next.reward: float",
                                "next.done: bool", "next.success: bool", "index: int64"}));
  ASSERT_NE(c.schema.FindMetadata("huggingface"), nullptr);
  EXPECT_NE(c.schema.FindMetadata("huggingface")->find("\"Image\""), std::string::npos);
  ASSERT_EQ(c.batches.size(), 1u);
  const RecordBatch& batch = c.batches[0];
  ASSERT_EQ(batch.num_rows, 161);
  EXPECT_FALSE(batch.compressed);
  EXPECT_EQ(batch.message_offset % 8, 0u);
  const ArrayView& image = batch.columns[0];
  const ArrayView& bytes = image.children[0];
  const ArrayView& path = image.children[1];
  int64_t total_bytes = 0;
  for (int64_t i = 0; i < batch.num_rows; ++i) {
    ASSERT_TRUE(image.IsValid(i));
    const auto png = bytes.GetBinary(i);
    ASSERT_GE(png.size(), 8u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(png.data()), 8), "\x89PNG\r\n\x1a\n");
    total_bytes += static_cast<int64_t>(png.size());
    EXPECT_TRUE(path.IsNull(i));
  }
  EXPECT_EQ(bytes.GetBinary(0).size(), 1078u);
  EXPECT_EQ(total_bytes, 186411);
  // Uncompressed: the PNG bytes are views into the mapped file.
  const uint8_t* file_begin = opened.file.bytes().data();
  EXPECT_GE(bytes.GetBinary(0).data(), file_begin + batch.body_offset);
  const ArrayView& state = batch.columns[1];
  EXPECT_EQ(state.GetListRange(160), std::make_pair(int64_t{320}, int64_t{322}));
  EXPECT_EQ(state.children[0].GetDouble(0), 222.0);
  EXPECT_EQ(state.children[0].GetDouble(1), 97.0);
  EXPECT_FLOAT_EQ(static_cast<float>(state.children[0].GetDouble(321)), 360.7481994628906f);
  EXPECT_EQ(batch.columns[3].GetInt64(0), 0);  // episode_index
  EXPECT_EQ(batch.columns[3].GetInt64(160), 0);
  EXPECT_EQ(batch.columns[4].GetInt64(160), 160);    // frame_index
  EXPECT_EQ(batch.columns[5].GetDouble(160), 16.0);  // timestamp
  EXPECT_FALSE(batch.columns[7].GetBool(0));         // next.done
  EXPECT_TRUE(batch.columns[7].GetBool(160));
  EXPECT_EQ(batch.columns[9].GetInt64(160), 160);  // index
}

TEST(ArrowFixtures, PushtVideoFrameStruct) {
  const Opened opened = OpenFixture("huggingface-lerobot/pusht/train/data-00000-of-00001.arrow");
  const StreamContents& c = opened.contents;
  ASSERT_EQ(c.schema.fields.size(), 10u);
  EXPECT_EQ(TypeToString(c.schema.fields[0]), "struct<path: string, timestamp: float>");
  EXPECT_EQ(TotalRows(c), 161);
  const ArrayView& frame = c.batches[0].columns[0];
  EXPECT_EQ(frame.children[0].GetString(0), "videos/observation.image_episode_000000.mp4");
  EXPECT_EQ(frame.children[1].GetDouble(160), 16.0);
  EXPECT_NE(c.schema.FindMetadata("huggingface")->find("VideoFrame"), std::string::npos);
}

TEST(ArrowFixtures, TinyTextDataset) {
  const Opened opened =
      OpenFixture("stochasticai-xTuring/tiny_text_dataset/data-00000-of-00001.arrow");
  const StreamContents& c = opened.contents;
  EXPECT_EQ(SchemaStrings(c.schema),
            (std::vector<std::string>{"text: string", "target: string", "instruction: string"}));
  ASSERT_EQ(TotalRows(c), 2);
  const RecordBatch& batch = c.batches[0];
  EXPECT_EQ(batch.columns[0].GetString(0), "first text");
  EXPECT_EQ(batch.columns[0].GetString(1), "second text");
  EXPECT_EQ(batch.columns[2].GetString(1), "second instruction");
  EXPECT_NE(c.schema.FindMetadata("huggingface"), nullptr);
}

TEST(ArrowFixtures, TrecSubset) {
  const Opened opened = OpenFixture("SylphAI-Inc-AdalFlow/data/train/data-00000-of-00001.arrow");
  const StreamContents& c = opened.contents;
  EXPECT_EQ(SchemaStrings(c.schema),
            (std::vector<std::string>{"text: string", "coarse_label: int64", "fine_label: int64"}));
  ASSERT_EQ(TotalRows(c), 600);
  ASSERT_EQ(c.batches.size(), 1u);
  const RecordBatch& batch = c.batches[0];
  EXPECT_EQ(batch.columns[0].GetString(0), "What made Jane Goodall famous ?");
  EXPECT_EQ(batch.columns[0].GetString(599), "What is the oldest website on the Internet ?");
  EXPECT_EQ(batch.columns[1].GetInt64(0), 2);
  EXPECT_EQ(batch.columns[1].GetInt64(599), 4);
  EXPECT_EQ(batch.columns[2].GetInt64(0), 27);
  EXPECT_EQ(batch.columns[2].GetInt64(599), 35);
  ASSERT_NE(c.schema.FindMetadata("huggingface"), nullptr);
  EXPECT_NE(c.schema.FindMetadata("huggingface")->find("ClassLabel"), std::string::npos);
}

TEST(ArrowFixtures, LegacyV4Cache) {
  const Opened opened =
      OpenFixture("huggingface-datasets/cache-071f8664cd4c4be34f5ad90bd847cbc8.arrow");
  const StreamContents& c = opened.contents;
  EXPECT_EQ(SchemaStrings(c.schema),
            (std::vector<std::string>{"filename: string not null", "name: string not null",
                                      "id: int64 not null"}));
  EXPECT_EQ(c.schema.FindMetadata("huggingface"), nullptr);
  ASSERT_EQ(TotalRows(c), 30);
  const RecordBatch& batch = c.batches[0];
  EXPECT_EQ(batch.columns[0].GetString(0), "my_name-train_0");
  EXPECT_EQ(batch.columns[0].GetString(29), "my_name-train_29");
  for (int64_t i = 0; i < 30; ++i) EXPECT_EQ(batch.columns[2].GetInt64(i), i);
}

TEST(ArrowFixtures, ReadBatchAtMatchesSequentialRead) {
  const Opened opened = OpenFixture("SylphAI-Inc-AdalFlow/data/train/data-00000-of-00001.arrow");
  ASSERT_EQ(opened.contents.batches.size(), 1u);
  auto reader = StreamReader::Open(opened.file.bytes(), "trec");
  ASSERT_TRUE(reader.ok());
  const RecordBatch& sequential = opened.contents.batches[0];
  auto random = reader->ReadBatchAt(sequential.message_offset);
  ASSERT_TRUE(random.ok()) << random.status().ToString();
  EXPECT_EQ(random->body_offset, sequential.body_offset);
  EXPECT_EQ(testing::ColumnToJson(random->columns[0]),
            testing::ColumnToJson(sequential.columns[0]));
  // Offset 0 is the schema message, not a batch.
  EXPECT_FALSE(reader->ReadBatchAt(0).ok());
}

}  // namespace
}  // namespace docfeed::internal::arrow
