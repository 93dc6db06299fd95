// Properties of the Idefics3 geometry, the prepared page and the tile layout that hold for every
// size; the pixel values themselves are compared with transformers in
// tests/python/test_hf_idefics3_parity.py.
#include "imaging/idefics3.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "imaging/donut.h"

namespace docfeed::internal {
namespace {

// SmolDocling's settings (longest_edge 2048, max_image_size 512) on an A4 scan at 200 dpi:
// 1654 x 2339 -> 1448 x 2048 (int(2048 * 1654 / 2339) = 1448, even) -> 1536 x 2048 -> 4 x 3.
TEST(Idefics3Geometry, FollowsTheProcessorOnAnA4Page) {
  const Idefics3Config config;
  Result<Idefics3Geometry> g = ComputeIdefics3Geometry(2339, 1654, config);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->resized_height, 2048);
  EXPECT_EQ(g->resized_width, 1448);
  EXPECT_EQ(g->grid_height, 2048);
  EXPECT_EQ(g->grid_width, 1536);
  EXPECT_EQ(g->rows, 4);
  EXPECT_EQ(g->cols, 3);
}

// The short side is truncated and then made even: 1000 x 333 -> int(2048 / (1000 / 333)) = 681,
// odd -> 682. Small pages are enlarged (the longest edge always becomes longest_edge).
TEST(Idefics3Geometry, MakesTheShortSideEvenAndEnlargesSmallPages) {
  const Idefics3Config config;
  Result<Idefics3Geometry> g = ComputeIdefics3Geometry(333, 1000, config);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->resized_width, 2048);
  EXPECT_EQ(g->resized_height, 682);
  g = ComputeIdefics3Geometry(1, 1, config);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->resized_height, 2048);
  EXPECT_EQ(g->rows, 4);
  EXPECT_EQ(g->cols, 4);
  EXPECT_EQ(ComputeIdefics3Geometry(0, 5, config).status().code(), StatusCode::kInvalidArgument);
}

// A page that fits one tile (longest_edge == max_image_size) has rows = cols = 0: one tile.
TEST(Idefics3Geometry, OneTilePages) {
  Idefics3Config config;
  config.longest_edge = 512;
  Result<Idefics3Geometry> g = ComputeIdefics3Geometry(300, 400, config);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->rows, 0);
  EXPECT_EQ(g->cols, 0);
  EXPECT_EQ(g->grid_height, 512);
  int32_t h = 0, w = 0;
  Idefics3PreparedSize(*g, config, &h, &w);
  EXPECT_EQ(h, 512);
  EXPECT_EQ(w, 512);
  Result<Idefics3Grid> grid = Idefics3GridOf(h, w, config);
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(Idefics3Tiles(grid->rows, grid->cols), 1);
}

// Every geometry stays within Idefics3MaxTiles, and its prepared size maps back to its rows and
// cols, over a sweep of sizes and settings (odd longest edges, the 4096 cap, no splitting).
TEST(Idefics3MaxTiles, BoundsEverySizeAndPreparedSizesRoundTrip) {
  std::vector<Idefics3Config> configs(5);
  configs[1].longest_edge = 1456;
  configs[1].max_image_size = 364;
  configs[2].longest_edge = 1001;
  configs[2].max_image_size = 100;
  configs[3].longest_edge = 8000;
  configs[4].do_image_splitting = false;
  const std::vector<int64_t> sides = {1, 2, 3, 17, 99, 364, 511, 512, 513, 1000, 1653, 2339, 5000};
  for (const Idefics3Config& config : configs) {
    for (int64_t h : sides) {
      for (int64_t w : sides) {
        Result<Idefics3Geometry> g = ComputeIdefics3Geometry(h, w, config);
        ASSERT_TRUE(g.ok()) << h << "x" << w;
        EXPECT_LE(Idefics3Tiles(g->rows, g->cols), Idefics3MaxTiles(config)) << h << "x" << w;
        int32_t ph = 0, pw = 0;
        Idefics3PreparedSize(*g, config, &ph, &pw);
        Result<Idefics3Grid> grid = Idefics3GridOf(ph, pw, config);
        ASSERT_TRUE(grid.ok()) << h << "x" << w << ": " << grid.status().ToString();
        EXPECT_EQ(grid->rows, g->rows);
        EXPECT_EQ(grid->cols, g->cols);
      }
    }
  }
}

TEST(Idefics3GridOf, RefusesSizesNoGeometryGives) {
  const Idefics3Config config;
  EXPECT_EQ(Idefics3GridOf(1024, 512, config).status().code(), StatusCode::kCorruption);  // 1 x 1
  EXPECT_EQ(Idefics3GridOf(1000, 1024, config).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(Idefics3GridOf(512 * 40, 1024, config).status().code(), StatusCode::kCorruption);
  EXPECT_TRUE(Idefics3GridOf(1536, 1024, config).ok());  // 2 x 2
}

// The prepared page holds the grid on top and the global image below it, and the tiles come out
// row-major, then the global one; a page whose pixels encode their tile shows the order.
TEST(Idefics3Tile, WritesGridTilesRowMajorThenTheGlobalImage) {
  Idefics3Config config;
  config.max_image_size = 4;
  config.longest_edge = 8;
  const int32_t s = 4, rows = 2, cols = 2;
  const int32_t height = (rows + 1) * s, width = cols * s;
  std::vector<uint8_t> pixels(static_cast<size_t>(height) * width * 3);
  for (int32_t y = 0; y < height; ++y) {
    for (int32_t x = 0; x < width; ++x) {
      for (int32_t c = 0; c < 3; ++c) {
        const int tile = (y / s) * cols + x / s;
        pixels[(y * width + x) * 3 + c] =
            static_cast<uint8_t>(tile * 40 + (y % s) * 8 + (x % s) * 2 + c % 2);
      }
    }
  }
  Result<NormalizeTable> table = MakeIdefics3Table(config);
  ASSERT_TRUE(table.ok());
  const int64_t tiles = Idefics3Tiles(rows, cols);
  std::vector<uint8_t> out(static_cast<size_t>(tiles * Idefics3TileValues(config)));
  ASSERT_TRUE(Idefics3Tile({pixels.data(), width, height, 3, width * 3}, config, *table,
                           DType::kUint8, OutputLayout::kChw, out.data())
                  .ok());
  size_t i = 0;
  for (int t = 0; t < tiles; ++t) {  // tile 4 (the global image) is the band's first tile
    for (int32_t c = 0; c < 3; ++c) {
      for (int32_t y = 0; y < s; ++y) {
        for (int32_t x = 0; x < s; ++x, ++i) {
          EXPECT_EQ(out[i], t * 40 + y * 8 + x * 2 + c % 2) << "element " << i;
        }
      }
    }
  }
  EXPECT_EQ(i, out.size());
  // kHwc: the same tiles, each S x S x 3.
  ASSERT_TRUE(Idefics3Tile({pixels.data(), width, height, 3, width * 3}, config, *table,
                           DType::kUint8, OutputLayout::kHwc, out.data())
                  .ok());
  i = 0;
  for (int t = 0; t < tiles; ++t) {
    for (int32_t y = 0; y < s; ++y) {
      for (int32_t x = 0; x < s; ++x) {
        for (int32_t c = 0; c < 3; ++c, ++i) {
          EXPECT_EQ(out[i], t * 40 + y * 8 + x * 2 + c % 2) << "element " << i;
        }
      }
    }
  }
  // float32: the normalization table of each value, a gray page replicated to all channels.
  std::vector<uint8_t> gray(static_cast<size_t>(s) * s, 255);
  std::vector<float> values(static_cast<size_t>(Idefics3TileValues(config)));
  ASSERT_TRUE(Idefics3Tile({gray.data(), s, s, 1, s}, config, *table, DType::kFloat32,
                           OutputLayout::kChw, values.data())
                  .ok());
  for (float v : values) EXPECT_EQ(v, 1.0f);
}

// An RGBA page is resized with its alpha and composited onto white at the end (4.x), giving 3
// channels; a fully transparent page is white.
TEST(Idefics3Resize, CompositesRgbaOntoWhiteAfterResizing) {
  Idefics3Config config;
  config.longest_edge = 16;
  config.max_image_size = 8;
  Image rgba;
  rgba.width = 10;
  rgba.height = 6;
  rgba.channels = 4;
  rgba.pixels.assign(rgba.stride_bytes() * 6, 0);  // transparent black
  Image page;
  const Status status = Idefics3Resize(rgba, ResampleFilter::kLanczos, config, &page);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(page.channels, 3);
  Result<Idefics3Grid> grid = Idefics3GridOf(page.height, page.width, config);
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->rows, 2);  // 10 x 6 -> 16 x 10 (int(16 / (10 / 6)) = 9, made even) -> 16 x 16
  EXPECT_EQ(grid->cols, 2);
  for (int32_t y = 0; y < page.height; ++y) {  // the grid and the global tile, not the band's rest
    for (int32_t x = 0; x < (y < 2 * 8 ? 16 : 8) * 3; ++x) {
      ASSERT_EQ(page.pixels[y * page.stride_bytes() + x], 255) << y << "," << x;
    }
  }
}

// The page is written into the caller's image, whose buffer may hold an earlier, larger page:
// every byte must be what a fresh image gets, the band right of the global image 0 included.
TEST(Idefics3Resize, ReusedOutputGetsTheSameBytesAsAFreshOne) {
  Idefics3Config config;
  config.longest_edge = 64;
  config.max_image_size = 16;
  std::mt19937 rng(3);
  for (int32_t channels : {1, 3, 4}) {
    for (const auto& [width, height] : {std::pair{50, 20}, std::pair{20, 50}, std::pair{12, 12}}) {
      Image input;
      input.width = width;
      input.height = height;
      input.channels = channels;
      input.pixels.resize(input.stride_bytes() * static_cast<size_t>(height));
      for (uint8_t& v : input.pixels) v = static_cast<uint8_t>(rng());
      Image fresh;
      ASSERT_TRUE(Idefics3Resize(input, ResampleFilter::kLanczos, config, &fresh).ok());
      Image reused;
      reused.width = 64;
      reused.height = 80;
      reused.channels = 3;
      reused.pixels.assign(reused.stride_bytes() * 80, 0xAB);
      ASSERT_TRUE(Idefics3Resize(input, ResampleFilter::kLanczos, config, &reused).ok());
      EXPECT_EQ(reused.width, fresh.width);
      EXPECT_EQ(reused.height, fresh.height);
      EXPECT_EQ(reused.channels, fresh.channels);
      EXPECT_EQ(reused.pixels, fresh.pixels) << width << "x" << height << " " << channels;
    }
  }
}

// 4.x keeps RGBA's alpha for the resizes, refuses CMYK (read as RGBA by the processor) and
// takes every other mode as image.convert("RGB") (gray stays one channel); 5.x converts first.
TEST(ToIdefics3Input, KeepsRgbaFor4xAndConvertsTheRest) {
  Idefics3Config config;
  Image rgba;
  rgba.width = rgba.height = 2;
  rgba.channels = 4;
  rgba.pixels.assign(16, 0);
  Result<Idefics3Input> in = ToIdefics3Input(rgba, "RGBA", config, std::nullopt);
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->image.channels, 4);
  EXPECT_EQ(in->filter, ResampleFilter::kLanczos);
  Image opaque = rgba;  // alpha 255 everywhere: the same bytes as RGB, so taken as RGB
  for (size_t i = 3; i < opaque.pixels.size(); i += 4) opaque.pixels[i] = 255;
  opaque.pixels[0] = 9;
  in = ToIdefics3Input(opaque, "RGBA", config, std::nullopt);
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->image.channels, 3);
  EXPECT_EQ(in->image.pixels[0], 9);
  Image rgb = rgba;
  rgb.channels = 3;
  rgb.pixels.assign(12, 0);
  Result<Idefics3Input> cmyk = ToIdefics3Input(rgb, "CMYK", config, std::nullopt);
  EXPECT_EQ(cmyk.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(cmyk.status().message().find("CMYK"), std::string::npos);
  Image la;
  la.width = la.height = 2;
  la.channels = 2;
  la.pixels = {10, 0, 20, 0, 30, 0, 40, 255};
  in = ToIdefics3Input(la, "LA", config, std::nullopt);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(in->image.channels, 1);  // convert("RGB") drops alpha: the gray values stay
  EXPECT_EQ(in->image.pixels[0], 10);
  config.hf_version = 5;
  in = ToIdefics3Input(la, "LA", config, std::nullopt);
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->image.pixels[0], 255);  // composited onto white
  in = ToIdefics3Input(rgba, "RGBA", config, std::nullopt);
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->image.channels, 3);
}

TEST(ValidateIdefics3Config, NamesTheField) {
  Idefics3Config config;
  config.max_image_size = 0;
  EXPECT_NE(ValidateIdefics3Config(config).message().find("max_image_size"), std::string::npos);
  config = Idefics3Config{};
  config.do_resize = false;
  EXPECT_NE(ValidateIdefics3Config(config).message().find("do_resize"), std::string::npos);
  config = Idefics3Config{};
  config.std[1] = 0;
  EXPECT_EQ(ValidateIdefics3Config(config).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace docfeed::internal
