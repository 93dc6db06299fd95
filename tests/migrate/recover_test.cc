// Unit tests of the migration's recovery and padding logic (src/migrate/recover.h) and schema
// classification (source.h). End-to-end checks against the real transformers processor and
// `datasets` are in tests/python/test_migrate.py.
#include "migrate/recover.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "imaging/donut.h"
#include "imaging/normalize.h"
#include "migrate/source.h"

namespace docfeed::internal::migrate {
namespace {

NormalizeTable TableFor(const NormalizeCandidate& c) {
  DonutConfig config;
  config.mean = c.mean;
  config.std = c.std;
  return MakeNormalizeTable(config).value();
}

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

TEST(GridInverter, RecoversEveryValueOfEveryChannelInEveryType) {
  for (const NormalizeCandidate& cand : DefaultCandidates()) {
    const NormalizeTable table = TableFor(cand);
    const GridInverter inv = GridInverter::Create(cand).value();
    for (int c = 0; c < 3; ++c) {
      std::vector<float> f32(table.f32[c].begin(), table.f32[c].end());
      std::vector<double> f64(f32.begin(), f32.end());
      std::vector<uint16_t> f16(table.f16[c].begin(), table.f16[c].end());
      const std::vector<std::pair<FloatType, std::vector<uint8_t>>> inputs = {
          {FloatType::kFloat32, Bytes(f32)},
          {FloatType::kFloat64, Bytes(f64)},
          {FloatType::kFloat16, Bytes(f16)}};
      for (const auto& [type, bytes] : inputs) {
        std::vector<uint8_t> out(256 * 3, 77);
        const RecoveryStats s = inv.Recover(c, type, bytes.data(), 256, out.data() + 1, 3);
        EXPECT_EQ(s.off_grid, 0u) << cand.name << " " << FloatTypeName(type);
        EXPECT_EQ(s.max_deviation, 0);
        for (int v = 0; v < 256; ++v) ASSERT_EQ(out[1 + 3 * v], v) << FloatTypeName(type);
        EXPECT_EQ(out[0], 77);  // the other channels' bytes are untouched
      }
    }
  }
}

TEST(GridInverter, ReadsUnalignedValues) {
  const NormalizeCandidate cand = DefaultCandidates()[0];
  const NormalizeTable table = TableFor(cand);
  std::vector<uint8_t> bytes(1 + 4 * 256);
  std::memcpy(bytes.data() + 1, table.f32[2].data(), 4 * 256);
  std::vector<uint8_t> out(256);
  const GridInverter inv = GridInverter::Create(cand).value();
  EXPECT_EQ(inv.Recover(2, FloatType::kFloat32, bytes.data() + 1, 256, out.data(), 1).off_grid, 0u);
  for (int v = 0; v < 256; ++v) ASSERT_EQ(out[v], v);
}

TEST(GridInverter, ReportsOffGridValuesWithTheNearestPixel) {
  const NormalizeCandidate cand = DefaultCandidates()[1];  // ImageNet
  const NormalizeTable table = TableFor(cand);
  const GridInverter inv = GridInverter::Create(cand).value();
  std::vector<float> values = {table.f32[1][10], std::nextafter(table.f32[1][200], 10.0f),
                               table.f32[1][30] + 0.004f, table.f32[1][0]};
  std::vector<uint8_t> out(values.size());
  const auto bytes = Bytes(values);
  const RecoveryStats s = inv.Recover(1, FloatType::kFloat32, bytes.data(), 4, out.data(), 1);
  EXPECT_EQ(s.off_grid, 2u);
  EXPECT_EQ(s.first_off_grid, 1);
  EXPECT_EQ(s.first_off_grid_nearest, 200);
  EXPECT_EQ(s.first_off_grid_value, values[1]);
  EXPECT_NEAR(s.max_deviation, 0.004, 1e-6);
  EXPECT_EQ(out, (std::vector<uint8_t>{10, 200, 30, 0}));
}

TEST(GridInverter, NonFiniteValuesAreOffGridWithInfiniteDeviation) {
  const NormalizeCandidate cand = DefaultCandidates()[0];
  const GridInverter inv = GridInverter::Create(cand).value();
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity(), 1e30f, -7.0f}) {
    const auto bytes = Bytes(std::vector<float>{bad});
    uint8_t out = 0;
    const RecoveryStats s = inv.Recover(0, FloatType::kFloat32, bytes.data(), 1, &out, 1);
    EXPECT_EQ(s.off_grid, 1u) << bad;
    if (!std::isfinite(bad)) {
      EXPECT_TRUE(std::isinf(s.max_deviation)) << bad;
    }
  }
}

TEST(GridInverter, Float16OffGridBitsTakeTheSlowPath) {
  const NormalizeCandidate cand = DefaultCandidates()[0];
  const NormalizeTable table = TableFor(cand);
  const GridInverter inv = GridInverter::Create(cand).value();
  const uint16_t off = static_cast<uint16_t>(table.f16[0][128] + 1);  // next float16 up
  const auto bytes = Bytes(std::vector<uint16_t>{table.f16[0][5], off});
  uint8_t out[2] = {};
  const RecoveryStats s = inv.Recover(0, FloatType::kFloat16, bytes.data(), 2, out, 1);
  EXPECT_EQ(s.off_grid, 1u);
  EXPECT_EQ(s.first_off_grid, 1);
  EXPECT_EQ(out[0], 5);
  EXPECT_EQ(out[1], 128);
}

TEST(GridInverter, HalfToFloatMatchesKnownValues) {
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xbc00), -1.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7c00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00)));
}

TEST(GridInverter, RefusesAZeroStd) {
  NormalizeCandidate bad{"user", {0.5, 0.5, 0.5}, {0.5, 0.0, 0.5}};
  EXPECT_FALSE(GridInverter::Create(bad).ok());
}

std::vector<uint8_t> Canvas(int h, int w) { return std::vector<uint8_t>(size_t(h) * w * 3, 0); }

void Set(std::vector<uint8_t>& px, int w, int y, int x, int c, uint8_t v) {
  px[(size_t(y) * w + x) * 3 + c] = v;
}

TEST(TightContentBox, FindsTheBoxOfNonBlackPixels) {
  auto px = Canvas(10, 8);
  EXPECT_EQ(TightContentBox(px.data(), 10, 8, 3), (Box{0, 0, 0, 0}));
  Set(px, 8, 3, 2, 2, 1);  // one channel non-zero is content
  EXPECT_EQ(TightContentBox(px.data(), 10, 8, 3), (Box{3, 2, 1, 1}));
  Set(px, 8, 7, 6, 0, 255);
  Set(px, 8, 5, 1, 1, 9);
  EXPECT_EQ(TightContentBox(px.data(), 10, 8, 3), (Box{3, 1, 5, 6}));
  Set(px, 8, 0, 0, 0, 1);
  Set(px, 8, 9, 7, 0, 1);
  EXPECT_EQ(TightContentBox(px.data(), 10, 8, 3), (Box{0, 0, 10, 8}));
}

// Brute force: the smallest box containing [first, first + size) in `extent` whose start is
// (extent - length) // 2.
std::pair<int, int> BruteCentre(int first, int size, int extent) {
  for (int length = size; length <= extent; ++length) {
    const int start = (extent - length) / 2;
    if (start <= first && start + length >= first + size) return {start, length};
  }
  return {-1, -1};
}

TEST(CentredBox, IsTheSmallestCentredBoxHoldingTheContent) {
  for (int extent = 1; extent <= 14; ++extent) {
    for (int first = 0; first < extent; ++first) {
      for (int size = 1; first + size <= extent; ++size) {
        const Box tight{first, 0, size, 1};
        const Box box = CentredBox(tight, extent, 1);
        const auto [start, length] = BruteCentre(first, size, extent);
        ASSERT_EQ(box.top, start) << extent << " " << first << " " << size;
        ASSERT_EQ(box.height, length) << extent << " " << first << " " << size;
        ASSERT_TRUE(IsCentred(box, extent, 1));
        // The horizontal axis follows the same rule.
        const Box t{0, first, 1, size};
        const Box b = CentredBox(t, 1, extent);
        ASSERT_EQ(b.left, start);
        ASSERT_EQ(b.width, length);
      }
    }
  }
}

TEST(CentredBox, KeepsAnAlreadyCentredBoxAndTakesTheWholeCanvasWhenEmpty) {
  // The processor's centred placements: 1098 x 1553 in 1200 x 1553, and an odd remainder.
  EXPECT_EQ(CentredBox({0, 51, 1553, 1098}, 1553, 1200), (Box{0, 51, 1553, 1098}));
  EXPECT_EQ(CentredBox({476, 0, 600, 1200}, 1553, 1200), (Box{476, 0, 600, 1200}));
  EXPECT_EQ(CentredBox({0, 0, 0, 0}, 20, 16), (Box{0, 0, 20, 16}));
  EXPECT_FALSE(IsCentred({0, 10, 20, 4}, 20, 16));
}

arrow::Field FloatList3(const std::string& name, arrow::TypeId leaf) {
  using arrow::MakeField;
  using arrow::MakeList;
  return MakeList(name, MakeList("item", MakeList("item", MakeField("item", leaf))));
}

TEST(InspectSchema, ClassifiesTheTensorAndTheKeptColumns) {
  arrow::Schema schema;
  schema.fields.push_back(FloatList3("pixel_values", arrow::TypeId::kFloat16));
  schema.fields.back().metadata = {
      {"ARROW:extension:name", "datasets.features.features.Array3DExtensionType"}};
  schema.fields.push_back(
      arrow::MakeList("labels", arrow::MakeField("item", arrow::TypeId::kInt64)));
  schema.fields.push_back(arrow::MakeField("target_sequence", arrow::TypeId::kString));
  schema.fields.push_back(arrow::MakeField("id", arrow::TypeId::kInt32));
  EXPECT_EQ(InspectSchema(schema, "f", "pixel_values", {}).status().code(),
            StatusCode::kUnsupported);  // int32 cannot be kept as it is
  const SourceLayout layout = InspectSchema(schema, "f", "pixel_values", {"id"}).value();
  EXPECT_EQ(layout.pixel_column, 0);
  EXPECT_EQ(layout.float_type, FloatType::kFloat16);
  EXPECT_TRUE(layout.array3d);
  ASSERT_EQ(layout.columns.size(), 2u);
  EXPECT_EQ(layout.columns[0].type, ColumnType::kInt64List);
  EXPECT_EQ(layout.columns[1].type, ColumnType::kString);
  EXPECT_EQ(layout.kept_columns, (std::vector<int>{1, 2}));
}

TEST(InspectSchema, RefusesTensorsOfOtherTypesAndNamesTheColumn) {
  arrow::Schema ints;
  ints.fields.push_back(FloatList3("pixel_values", arrow::TypeId::kInt64));
  const Status s = InspectSchema(ints, "data-0.arrow", "pixel_values", {}).status();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("data-0.arrow"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("int64"), std::string::npos) << s.ToString();

  arrow::Schema flat;
  flat.fields.push_back(
      arrow::MakeList("pixel_values", arrow::MakeField("item", arrow::TypeId::kFloat32)));
  EXPECT_EQ(InspectSchema(flat, "f", "pixel_values", {}).status().code(), StatusCode::kUnsupported);
  arrow::Schema none;
  none.fields.push_back(arrow::MakeField("target_sequence", arrow::TypeId::kString));
  EXPECT_EQ(InspectSchema(none, "f", "pixel_values", {}).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace docfeed::internal::migrate
