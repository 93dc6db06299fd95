// Pix2Struct's patches form (preset.h EncodeStoredOutput / FinishStoredOutput, CheckStored): the
// stored rows load to exactly Finish's output for the page (the same bytes, zero rows included),
// damaged or foreign rows are refused, and a loader with other settings is refused with the
// re-pack command. tests/python/test_hf_pix2struct_stored_patches.py compares the rows with
// transformers' processor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "preset/preset.h"

namespace docfeed::internal {
namespace {

std::unique_ptr<const Preset> MakeOrDie(int32_t max_patches, int32_t ph, int32_t pw,
                                        int32_t hf_version = 4) {
  PresetParams params;
  params.name = kPresetPix2Struct;
  params.pix2struct.max_patches = max_patches;
  params.pix2struct.patch_height = ph;
  params.pix2struct.patch_width = pw;
  params.pix2struct.hf_version = hf_version;
  Result<std::unique_ptr<const Preset>> preset = MakePreset(params);
  EXPECT_TRUE(preset.ok()) << preset.status().ToString();
  return std::move(*preset);
}

Image Page(int32_t width, int32_t height, int32_t channels) {
  Image image;
  image.width = width;
  image.height = height;
  image.channels = channels;
  image.pixels.resize(image.stride_bytes() * static_cast<size_t>(height));
  for (size_t i = 0; i < image.pixels.size(); ++i) {
    image.pixels[i] = static_cast<uint8_t>((i * 37 + i / 7) & 0xFF);
  }
  return image;
}

PreprocessInfo PatchesInfo(int32_t max_patches, int32_t ph, int32_t pw, int32_t hf_version = 4) {
  PreprocessInfo info;
  info.preset = kPresetPix2Struct;
  info.stored_form = kStoredFormPatches;
  info.max_patches = max_patches;
  info.patch_height = ph;
  info.patch_width = pw;
  info.hf_version = hf_version;
  return info;
}

TEST(Pix2StructStoredOutput, LoadsToFinishsBytesForEveryPage) {
  const std::unique_ptr<const Preset> preset = MakeOrDie(48, 8, 4);
  const size_t bytes = preset->SampleBytes(DType::kFloat32);
  for (const Image& page : {Page(97, 61, 3), Page(33, 200, 1), Page(3, 2, 3), Page(640, 20, 3)}) {
    std::vector<uint8_t> want(bytes), got(bytes, 0xAB);  // got starts dirty: every byte written
    ASSERT_TRUE(
        preset->Finish(ViewOf(page), {}, DType::kFloat32, OutputLayout::kChw, want.data()).ok());
    Result<Preset::StoredOutput> stored = preset->EncodeStoredOutput(ViewOf(page));
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    EXPECT_EQ(stored->width, 2 + 3 * 8 * 4);
    EXPECT_GE(stored->height, 1);
    EXPECT_LE(stored->height, 48);
    Result<Placement> placed =
        preset->FinishStoredOutput(stored->bytes, DType::kFloat32, got.data());
    ASSERT_TRUE(placed.ok()) << placed.status().ToString();
    EXPECT_EQ(std::memcmp(got.data(), want.data(), bytes), 0) << page.width << "x" << page.height;
    // The stored rows are the real ones: the next row of Finish's output is a zero row.
    const size_t row_bytes = static_cast<size_t>(stored->width) * sizeof(float);
    const size_t real = static_cast<size_t>(stored->height) * row_bytes;
    if (real < bytes) {
      EXPECT_TRUE(std::all_of(want.begin() + static_cast<ptrdiff_t>(real), want.end(),
                              [](uint8_t b) { return b == 0; }));
    }
    // The placement is the resized page the rows cover: rows * ph x cols * pw.
    Result<FloatRows> rows = DecodePfm(stored->bytes);
    ASSERT_TRUE(rows.ok());
    const float* last = rows->values.data() + rows->values.size() - rows->width;
    EXPECT_EQ(placed->height, static_cast<int32_t>(last[0]) * 8);
    EXPECT_EQ(placed->width, static_cast<int32_t>(last[1]) * 4);
  }
}

TEST(Pix2StructStoredOutput, RefusesRowsThatCannotBeItsOutput) {
  const std::unique_ptr<const Preset> preset = MakeOrDie(16, 4, 4);
  const int32_t width = 2 + 3 * 4 * 4;
  std::vector<uint8_t> out(preset->SampleBytes(DType::kFloat32));
  struct Case {
    std::vector<float> rows;
    int32_t width, height;
    std::string message;
  };
  std::vector<float> grid(static_cast<size_t>(width) * 6, 0.5f);  // 2 x 3 grid, ids below
  for (int r = 0; r < 6; ++r) {
    grid[static_cast<size_t>(r * width)] = static_cast<float>(r / 3 + 1);
    grid[static_cast<size_t>(r * width) + 1] = static_cast<float>(r % 3 + 1);
  }
  std::vector<float> wrong_ids = grid;
  wrong_ids[static_cast<size_t>(5 * width)] = 3.0f;  // 3 x 3 is not 6 rows
  std::vector<float> nan_ids = grid;
  nan_ids[static_cast<size_t>(5 * width)] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> huge_ids = grid;
  huge_ids[static_cast<size_t>(5 * width) + 1] = 3.0e9f;
  std::vector<float> fraction = grid;
  fraction[static_cast<size_t>(5 * width) + 1] = 3.5f;
  const std::vector<Case> cases = {
      {wrong_ids, width, 6, "do not make a grid of 6 rows"},
      {nan_ids, width, 6, "do not make a grid"},
      {huge_ids, width, 6, "do not make a grid"},
      {fraction, width, 6, "do not make a grid"},
      {std::vector<float>(static_cast<size_t>(width + 1) * 2, 1.0f), width + 1, 2,
       "not at most 16 rows of 50"},
      {std::vector<float>(static_cast<size_t>(width) * 17, 1.0f), width, 17, "17 rows"},
  };
  for (const Case& c : cases) {
    Result<std::vector<uint8_t>> pfm = EncodePfm(c.rows.data(), c.width, c.height);
    ASSERT_TRUE(pfm.ok());
    const Status st = preset->FinishStoredOutput(*pfm, DType::kFloat32, out.data()).status();
    EXPECT_EQ(st.code(), StatusCode::kCorruption) << c.message << ": " << st.ToString();
    EXPECT_NE(st.message().find(c.message), std::string::npos) << st.ToString();
  }
  Result<std::vector<uint8_t>> good = EncodePfm(grid.data(), width, 6);
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(preset->FinishStoredOutput(*good, DType::kFloat32, out.data()).ok());
  EXPECT_EQ(preset->FinishStoredOutput(*good, DType::kBfloat16, out.data()).status().code(),
            StatusCode::kInvalidArgument);
  const std::vector<uint8_t> ppm = {'P', '5', '\n', '1', ' ', '1', '\n', '2', '5', '5', '\n', 0};
  EXPECT_EQ(preset->FinishStoredOutput(ppm, DType::kFloat32, out.data()).status().code(),
            StatusCode::kCorruption);
}

TEST(Pix2StructStoredOutput, CheckStoredWantsTheSameSettings) {
  const std::unique_ptr<const Preset> preset = MakeOrDie(64, 16, 8, 5);
  EXPECT_TRUE(preset->CheckStored(PatchesInfo(64, 16, 8, 5), "ds").ok());
  for (const PreprocessInfo& other :
       {PatchesInfo(32, 16, 8, 5), PatchesInfo(64, 8, 16, 5), PatchesInfo(64, 16, 8, 4)}) {
    const Status st = preset->CheckStored(other, "/data/ds");
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
    for (const char* part : {"/data/ds holds the pix2struct flattened_patches rows",
                             "loader was asked for max_patches 64, patch size 16x8, "
                             "transformers 5.x",
                             "re-pack with --preprocess pix2struct --stored-form patches "
                             "--max-patches 64 --patch-size 16x8 --hf-version 5"}) {
      EXPECT_NE(st.message().find(part), std::string::npos) << part << "\n" << st.ToString();
    }
  }
  // The page form still serves any max_patches of the same generation.
  PreprocessInfo page;
  page.preset = kPresetPix2Struct;
  page.hf_version = 5;
  EXPECT_TRUE(preset->CheckStored(page, "ds").ok());
  // The other presets have no stored output.
  PresetParams donut;
  donut.name = "donut";
  Result<std::unique_ptr<const Preset>> d = MakePreset(donut);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)->EncodeStoredOutput(ViewOf(Page(4, 4, 3))).status().code(),
            StatusCode::kUnsupported);
}

// The packer's preset for a patches-form record is made for the recorded settings.
TEST(Pix2StructStoredOutput, PresetForStoredUsesTheRecordedSettings) {
  Result<std::unique_ptr<const Preset>> preset = PresetForStored(PatchesInfo(100, 12, 10));
  ASSERT_TRUE(preset.ok()) << preset.status().ToString();
  EXPECT_EQ((*preset)->output_shape().height, 100);
  EXPECT_EQ((*preset)->output_shape().width, 2 + 3 * 12 * 10);
}

}  // namespace
}  // namespace docfeed::internal
