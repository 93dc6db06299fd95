// The bounds-checked FlatBuffers reader and the builder, and the IPC metadata codec on top.
#include "format/arrow/flatbuf.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "format/arrow/ipc_metadata.h"

namespace docfeed::internal::arrow::flatbuf {
namespace {

// A root table with: slot 0 int64, slot 1 string, slot 2 vector of two sub-tables (each with
// slot 0 int32), slot 4 uint8. Slot 3 is absent.
std::vector<uint8_t> BuildSample() {
  Builder builder;
  std::vector<Builder::Ref> children;
  for (int32_t value : {7, -9}) {
    builder.StartTable();
    builder.AddScalar<int32_t>(0, value);
    children.push_back(builder.EndTable());
  }
  const Builder::Ref vector = builder.CreateRefVector(children);
  const Builder::Ref text = builder.CreateString("hello");
  builder.StartTable();
  builder.AddScalar<int64_t>(0, int64_t{1} << 40);
  builder.AddRef(1, text);
  builder.AddRef(2, vector);
  builder.AddScalar<uint8_t>(4, 3);
  return builder.Finish(builder.EndTable());
}

TEST(ArrowFlatbuf, BuilderOutputReadsBack) {
  const std::vector<uint8_t> buffer = BuildSample();
  EXPECT_EQ(buffer.size() % 8, 0u);
  auto root = Table::Root(buffer);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(root->GetScalar<int64_t>(0, 0).value(), int64_t{1} << 40);
  EXPECT_EQ(root->GetString(1).value().value(), "hello");
  EXPECT_FALSE(root->HasField(3));
  EXPECT_EQ(root->GetScalar<int16_t>(3, 42).value(), 42);  // default for an absent field
  EXPECT_EQ(root->GetScalar<int16_t>(100, 5).value(), 5);  // slot beyond the vtable
  EXPECT_EQ(root->GetScalar<uint8_t>(4, 0).value(), 3);
  auto vector = root->GetVector(2, 4);
  ASSERT_TRUE(vector.ok());
  ASSERT_EQ(vector->size(), 2u);
  EXPECT_EQ(vector->TableAt(0).value().GetScalar<int32_t>(0, 0).value(), 7);
  EXPECT_EQ(vector->TableAt(1).value().GetScalar<int32_t>(0, 0).value(), -9);
  EXPECT_FALSE(root->GetTable(3).value().has_value());
}

TEST(ArrowFlatbuf, EveryTruncationAndFlipIsBoundsChecked) {
  const std::vector<uint8_t> original = BuildSample();
  auto read_all = [](std::span<const uint8_t> bytes) {
    auto root = Table::Root(bytes);
    if (!root.ok()) return;
    (void)root->GetScalar<int64_t>(0, 0);
    auto text = root->GetString(1);
    if (text.ok() && text->has_value()) {
      volatile size_t sum = 0;
      for (char c : **text) sum = sum + static_cast<size_t>(c);
    }
    auto vector = root->GetVector(2, 4);
    if (!vector.ok()) return;
    for (size_t i = 0; i < vector->size(); ++i) {
      auto table = vector->TableAt(i);
      if (table.ok()) (void)table->GetScalar<int32_t>(0, 0);
    }
  };
  for (size_t length = 0; length <= original.size(); ++length) {
    std::vector<uint8_t> prefix(original.begin(),
                                original.begin() + static_cast<std::ptrdiff_t>(length));
    read_all(prefix);
  }
  for (size_t i = 0; i < original.size(); ++i) {
    for (int pattern : {0x01, 0x80, 0xFF}) {
      std::vector<uint8_t> mutant = original;
      mutant[i] = static_cast<uint8_t>(mutant[i] ^ pattern);
      read_all(mutant);
    }
  }
}

TEST(ArrowFlatbuf, RejectsOutOfBoundsStructures) {
  // Root offset beyond the buffer.
  const std::vector<uint8_t> bad_root = {0xF0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(Table::Root(bad_root).status().code(), StatusCode::kCorruption);
  // Table whose soffset points before the buffer start.
  const std::vector<uint8_t> bad_vtable = {4, 0, 0, 0, 0x10, 0, 0, 0};
  EXPECT_EQ(Table::Root(bad_vtable).status().code(), StatusCode::kCorruption);
  // Vector with a huge element count.
  Builder builder;
  const Builder::Ref vec = builder.CreateRefVector({});
  builder.StartTable();
  builder.AddRef(0, vec);
  std::vector<uint8_t> buffer = builder.Finish(builder.EndTable());
  auto root = Table::Root(buffer);
  ASSERT_TRUE(root.ok());
  ASSERT_EQ(root->GetVector(0, 4).value().size(), 0u);
  // Find the vector's zero length (the last 4 bytes here) and make it huge.
  for (size_t i = buffer.size() - 4; i < buffer.size(); ++i) buffer[i] = 0xFF;
  auto huge = Table::Root(buffer);
  ASSERT_TRUE(huge.ok());
  EXPECT_EQ(huge->GetVector(0, 4).status().code(), StatusCode::kCorruption);
}

TEST(ArrowIpcMetadata, SchemaMessageRoundTrips) {
  Schema schema;
  schema.fields = {MakeStruct("image", {MakeField("bytes", TypeId::kBinary),
                                        MakeField("path", TypeId::kString)}),
                   MakeFixedSizeList("state", MakeField("item", TypeId::kFloat32), 2),
                   MakeTimestamp("t", TimeUnit::kMilli, "Europe/Paris", false)};
  schema.fields[1].metadata = {{"k", "v"}};
  schema.metadata = {{"huggingface", "{\"info\": {}}"}};
  const std::vector<uint8_t> message = EncodeSchemaMessage(schema);
  auto decoded = DecodeMessage(message);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->version, kMetadataV5);
  EXPECT_EQ(decoded->type, MessageType::kSchema);
  auto back = DecodeSchema(decoded->header);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, schema);
}

TEST(ArrowIpcMetadata, RecordBatchMessageRoundTrips) {
  RecordBatchMeta batch;
  batch.length = 3;
  batch.nodes = {{3, 1}, {3, 0}};
  batch.buffers = {{0, 1}, {8, 24}, {32, 0}};
  batch.codec = CompressionCodec::kZstd;
  const std::vector<uint8_t> message = EncodeRecordBatchMessage(batch, 40);
  auto decoded = DecodeMessage(message);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->body_length, 40);
  auto back = DecodeRecordBatch(decoded->header);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->length, 3);
  ASSERT_EQ(back->nodes.size(), 2u);
  EXPECT_EQ(back->nodes[0].null_count, 1);
  ASSERT_EQ(back->buffers.size(), 3u);
  EXPECT_EQ(back->buffers[1].offset, 8);
  EXPECT_EQ(back->buffers[1].length, 24);
  EXPECT_EQ(back->codec, CompressionCodec::kZstd);
}

}  // namespace
}  // namespace docfeed::internal::arrow::flatbuf
