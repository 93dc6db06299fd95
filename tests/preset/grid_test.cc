// docfeed::Preset::GridOf and ProbePageSize, the public functions docfeed.pack(processor=...)
// counts a page's image tokens with. The grids are the processors' own numbers (worked out in
// the comments); tests/python/test_hf_idefics3_labels.py and test_hf_qwen_vl_labels.py compare
// the resulting input_ids with transformers' processors.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "docfeed/image.h"
#include "docfeed/preprocess.h"

namespace docfeed {
namespace {

PageGrid GridOrDie(const PresetOptions& options, int32_t height, int32_t width) {
  Result<Preset> preset = Preset::Create(options);
  EXPECT_TRUE(preset.ok()) << preset.status().ToString();
  Result<PageGrid> grid = preset->GridOf(height, width);
  EXPECT_TRUE(grid.ok()) << grid.status().ToString();
  return grid.ok() ? *grid : PageGrid{};
}

// SmolDocling's settings on an A4 scan at 200 dpi: 1654 x 2339 -> 1448 x 2048 -> 1536 x 2048 in
// 512-pixel tiles: 4 rows, 3 columns (imaging/idefics3_test.cc has the steps).
TEST(PresetGridOf, Idefics3GivesTheProcessorsRowsAndCols) {
  PresetOptions options;
  options.name = "idefics3";
  const PageGrid g = GridOrDie(options, 2339, 1654);
  EXPECT_EQ(g.temporal, 1);
  EXPECT_EQ(g.rows, 4);
  EXPECT_EQ(g.cols, 3);
  // A page within one tile is not split: rows = cols = 0, the global image alone.
  options.idefics3.longest_edge = 512;
  const PageGrid small = GridOrDie(options, 400, 300);
  EXPECT_EQ(small.rows, 0);
  EXPECT_EQ(small.cols, 0);
  options.idefics3.longest_edge = 2048;
  options.idefics3.do_image_splitting = false;
  const PageGrid unsplit = GridOrDie(options, 2339, 1654);
  EXPECT_EQ(unsplit.rows, 0);
  EXPECT_EQ(unsplit.cols, 0);
}

// Qwen2-VL's defaults (factor 28, min_pixels 3136, max_pixels 12845056): 1000 x 750 rounds to
// 1008 x 756 (36 and 27 times 28), within the bounds, so 72 x 54 patches of 14.
TEST(PresetGridOf, QwenGivesImageGridThw) {
  PresetOptions options;
  options.name = "qwen2.5-vl";
  const PageGrid g = GridOrDie(options, 1000, 750);
  EXPECT_EQ(g.temporal, 1);
  EXPECT_EQ(g.rows, 72);
  EXPECT_EQ(g.cols, 54);
  // An aspect ratio over 200 is smart_resize's ValueError.
  Result<Preset> preset = Preset::Create(options);
  ASSERT_TRUE(preset.ok());
  EXPECT_EQ(preset->GridOf(10, 2100).status().code(), StatusCode::kInvalidArgument);
}

TEST(PresetGridOf, PresetsWithoutTokensRefuse) {
  for (const char* name : {"donut", "nougat", "pix2struct"}) {
    PresetOptions options;
    options.name = name;
    Result<Preset> preset = Preset::Create(options);
    ASSERT_TRUE(preset.ok()) << name << ": " << preset.status().ToString();
    const Result<PageGrid> grid = preset->GridOf(100, 100);
    EXPECT_EQ(grid.status().code(), StatusCode::kInvalidArgument) << name;
  }
}

TEST(ProbePageSize, ReadsTheHeaderAndRefusesWhatIsNotAnImage) {
  Image image;
  image.width = 7;
  image.height = 3;
  image.channels = 3;
  image.pixels.assign(7 * 3 * 3, 128);
  Result<std::vector<uint8_t>> png = EncodePng(image);
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  Result<PageSize> size = ProbePageSize(*png);
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(size->height, 3);
  EXPECT_EQ(size->width, 7);
  const std::vector<uint8_t> junk = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'};
  EXPECT_FALSE(ProbePageSize(junk).ok());
}

}  // namespace
}  // namespace docfeed
