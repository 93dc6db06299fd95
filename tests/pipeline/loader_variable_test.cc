// The loader with a variable-size preset (Qwen2-VL, Idefics3): each batch's pages' outputs follow
// one another from the buffer's start (Idefics3: each padded to the batch's largest; the worker
// that finishes a batch packs them), whatever the number of threads, and equal what the public
// Preset gives for each page on its own. Pages of different sizes make the outputs differ in
// length. Runs under TSan and ASan with the others.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "docfeed/preprocess.h"
#include "loader_testing.h"
#include "pipeline/loader.h"

namespace docfeed::internal {
namespace {

using testing::PackPages;
using testing::TempDir;
using testing::TestOptions;

struct Outputs {
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<uint8_t>> pixels;
};

Outputs Drain(const LoaderOptions& o) {
  Outputs out;
  Result<std::unique_ptr<Loader>> loader = Loader::Create(o);
  EXPECT_TRUE(loader.ok()) << loader.status().ToString();
  if (!loader.ok()) return out;
  while (true) {
    Result<Batch> b = (*loader)->Next();
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok() || !b->valid()) break;
    out.ids.emplace_back(b->sample_ids(), b->sample_ids() + b->size());
    const auto* p = static_cast<const uint8_t*>(b->pixels());
    out.pixels.emplace_back(p, p + b->pixel_bytes());
  }
  return out;
}

LoaderOptions QwenOptions(const std::string& path, int threads) {
  LoaderOptions o = TestOptions(path, threads);
  o.preset.name = "qwen2-vl";
  o.preset.qwen_vl.min_pixels = 28 * 28;
  o.preset.qwen_vl.max_pixels = 28 * 28 * 9;
  return o;
}

// Each batch's pixels are its pages' outputs (the public Preset's, page by page) end to end;
// with `padded` (Idefics3) each followed by zeros up to the batch's largest output.
void ExpectPagesInOrder(const LoaderOptions& o, const Outputs& got, bool padded = false) {
  Result<docfeed::Preset> preset = docfeed::Preset::Create(o.preset);
  ASSERT_TRUE(preset.ok()) << preset.status().ToString();
  ASSERT_TRUE(preset->variable_size());
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(o.path);
  ASSERT_TRUE(ds.ok());
  ReadScratch scratch;
  for (size_t k = 0; k < got.ids.size(); ++k) {
    std::vector<std::vector<uint8_t>> pages;
    for (int64_t id : got.ids[k]) {
      Result<SampleBytes> sample = (*ds)->ReadSample(static_cast<uint64_t>(id), false, &scratch);
      ASSERT_TRUE(sample.ok()) << sample.status().ToString();
      Image page;
      ASSERT_TRUE(preset->Prepare(sample->image, {}, &page).ok());
      std::vector<uint8_t> one(preset->SampleBytes(o.dtype));
      Result<Placement> placed = preset->Finish(page, {}, o.dtype, o.layout, one.data());
      ASSERT_TRUE(placed.ok());
      one.resize(preset->OutputBytes(*placed, o.dtype));
      pages.push_back(std::move(one));
    }
    size_t largest = 0;
    for (const auto& page : pages) largest = std::max(largest, page.size());
    std::vector<uint8_t> want;
    for (const auto& page : pages) {
      want.insert(want.end(), page.begin(), page.end());
      if (padded) want.insert(want.end(), largest - page.size(), 0);
    }
    EXPECT_EQ(got.pixels[k], want) << "batch " << k;
  }
}

TEST(LoaderVariableSize, BatchesPackEachPagesOutputInOrder) {
  TempDir tmp;
  const std::string path = tmp.Join("pages.docfeed");
  PackPages(tmp.path(), path, 11, 30, false, false, 17);  // 30x30 .. 204x115: many grids
  const LoaderOptions o = QwenOptions(path, 3);
  const Outputs got = Drain(o);
  ASSERT_EQ(got.ids.size(), 4u);  // 3 + 3 + 3 + 2 (partial)
  ExpectPagesInOrder(o, got);
  std::set<size_t> sizes;  // the pages really differ: batches of equal counts differ in bytes
  for (const auto& p : got.pixels) sizes.insert(p.size());
  EXPECT_GE(sizes.size(), 3u);
  // The same bytes with one thread and with four, and in bfloat16.
  for (int threads : {1, 4}) {
    const Outputs again = Drain(QwenOptions(path, threads));
    EXPECT_EQ(again.ids, got.ids) << threads << " threads";
    EXPECT_EQ(again.pixels, got.pixels) << threads << " threads";
  }
  LoaderOptions bf16 = QwenOptions(path, 2);
  bf16.dtype = DType::kBfloat16;
  ExpectPagesInOrder(bf16, Drain(bf16));
}

// Slots are sized for the dataset's largest page (from the index), not for the largest page the
// settings allow: with the checkpoints' max_pixels that is 65,536 patches (308 MB in float32).
TEST(LoaderVariableSize, SlotsAreSizedForTheDatasetsLargestPage) {
  TempDir tmp;
  const std::string path = tmp.Join("pages.docfeed");
  PackPages(tmp.path(), path, 5, 30, false, false, 17);
  LoaderOptions o = QwenOptions(path, 2);
  o.preset.qwen_vl.max_pixels = QwenVLConfig{}.max_pixels;
  Result<std::unique_ptr<Loader>> loader = Loader::Create(o);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  Result<docfeed::Preset> preset = docfeed::Preset::Create(o.preset);
  ASSERT_TRUE(preset.ok());
  // The largest page (102 x 63 pixels: 112 x 56 after smart_resize, 8 x 4 patches).
  const size_t slot = (*loader)->batch_pixel_bytes() / o.batch_size;
  EXPECT_EQ(slot, size_t{8 * 4} * 1176 * sizeof(float));
  EXPECT_LT(slot, preset->SampleBytes(DType::kFloat32) / 1000);
  const Outputs got = Drain(o);
  ASSERT_EQ(got.ids.size(), 2u);
  ExpectPagesInOrder(o, got);
}

TEST(LoaderVariableSize, ASkippedSampleIsReplacedAndTheBatchStaysPacked) {
  TempDir tmp;
  const std::string path = tmp.Join("pages.docfeed");
  PackPages(tmp.path(), path, 8, 30, false, false, 17);
  testing::DamageSample(path, 3);
  LoaderOptions o = QwenOptions(path, 2);
  o.on_error = BadSamplePolicy::kSkip;
  const Outputs got = Drain(o);
  ASSERT_EQ(got.ids.size(), 3u);  // 3 + 3 + 2: the bad sample's slot is filled by another
  for (const auto& ids : got.ids) {
    for (int64_t id : ids) EXPECT_NE(id, 3);
  }
  ExpectPagesInOrder(o, got);
}

LoaderOptions Idefics3Options(const std::string& path, int threads) {
  LoaderOptions o = TestOptions(path, threads);
  o.preset.name = "idefics3";
  o.preset.idefics3.longest_edge = 64;
  o.preset.idefics3.max_image_size = 16;
  return o;
}

// Idefics3's tile counts follow the pages' aspect ratios: batches hold each page's tiles in
// order, padded with zero tiles to the batch's most (the processor's layout), the same with any
// thread count, and a slot holds the dataset's largest page's tiles.
TEST(LoaderVariableSize, Idefics3TilesPadToTheBatchsMost) {
  TempDir tmp;
  const std::string path = tmp.Join("pages.docfeed");
  PackPages(tmp.path(), path, 11, 30, false, false, 17);
  const LoaderOptions o = Idefics3Options(path, 3);
  const Outputs got = Drain(o);
  ASSERT_EQ(got.ids.size(), 4u);
  ExpectPagesInOrder(o, got, /*padded=*/true);
  std::set<size_t> sizes;
  for (const auto& p : got.pixels) sizes.insert(p.size());
  EXPECT_GE(sizes.size(), 2u);
  const Outputs one = Drain(Idefics3Options(path, 1));
  EXPECT_EQ(one.ids, got.ids);
  EXPECT_EQ(one.pixels, got.pixels);
  Result<std::unique_ptr<Loader>> loader = Loader::Create(o);
  ASSERT_TRUE(loader.ok());
  Result<docfeed::Preset> preset = docfeed::Preset::Create(o.preset);
  ASSERT_TRUE(preset.ok());
  // 64 / 16 = 4 tiles a side at most (plus the global image), and no page here is square.
  const size_t slot = (*loader)->batch_pixel_bytes() / o.batch_size;
  EXPECT_LE(slot, size_t{4 * 4 + 1} * 3 * 16 * 16 * sizeof(float));
  EXPECT_LT(slot, preset->SampleBytes(DType::kFloat32));
}

}  // namespace
}  // namespace docfeed::internal
