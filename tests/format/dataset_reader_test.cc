// docfeed::DatasetReader (docfeed/dataset.h) through the public API only: datasets packed with
// docfeed::PackFrom from known bytes, read back by id. References are the source files' own
// bytes (pack --codec keep stores them verbatim) and the PGM/PPM raster parsed here from the
// header format.md specifies, never an earlier docfeed output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "docfeed/dataset.h"
#include "docfeed/image.h"
#include "docfeed/pack.h"
#include "docfeed/preprocess.h"
#include "testing/temp_dir.h"

namespace docfeed {
namespace {

using testing::TempDir;

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// A w x h image with `channels` channels whose bytes depend on position and `seed`.
Image Pattern(int32_t w, int32_t h, int32_t channels, int seed) {
  Image image{.width = w, .height = h, .channels = channels, .pixels = {}};
  image.pixels.resize(static_cast<size_t>(w) * static_cast<size_t>(h) *
                      static_cast<size_t>(channels));
  for (size_t i = 0; i < image.pixels.size(); ++i) {
    image.pixels[i] = static_cast<uint8_t>(i * 7 + static_cast<size_t>(seed) * 31);
  }
  return image;
}

class ListedImages final : public SampleSource {
 public:
  explicit ListedImages(std::vector<std::vector<uint8_t>> files) : files_(std::move(files)) {}
  Result<std::vector<uint8_t>> ReadImage(size_t i) override { return files_[i]; }
  std::string Where(size_t i) const override { return "image " + std::to_string(i); }
  std::string Name() const override { return "the test images"; }
  const std::vector<uint8_t>& file(size_t i) const { return files_[i]; }
  size_t size() const { return files_.size(); }

 private:
  std::vector<std::vector<uint8_t>> files_;
};

std::string Rows(size_t n, const char* extension) {
  std::string rows;
  for (size_t i = 0; i < n; ++i) {
    rows += "{\"file_name\": \"f" + std::to_string(i) + extension +
            "\", \"n\": " + std::to_string(i) + "}\n";
  }
  return rows;
}

// PNGs of several shapes and channel counts, made with the public encoder.
ListedImages PngImages() {
  const int32_t shapes[][3] = {{9, 7, 3}, {5, 3, 1}, {4, 6, 4}, {12, 2, 2}, {3, 3, 3}};
  std::vector<std::vector<uint8_t>> files;
  int seed = 0;
  for (const auto& s : shapes) {
    Result<std::vector<uint8_t>> png = EncodePng(Pattern(s[0], s[1], s[2], seed++));
    EXPECT_TRUE(png.ok()) << png.status().ToString();
    files.push_back(std::move(png).value());
  }
  return ListedImages(std::move(files));
}

class DatasetReaderTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DatasetReaderTest, ReadsTheStoredFilesByIdForEveryCompression) {
  TempDir dir;
  ListedImages images = PngImages();
  PackOptions o;
  o.output = dir.Join("ds");
  o.threads = 2;
  o.compression = GetParam();
  o.max_file_bytes = 300;  // several data files and record batches
  ASSERT_TRUE(PackFrom(Rows(images.size(), ".png"), images, o).ok());
  Result<std::unique_ptr<DatasetReader>> reader = DatasetReader::Open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  ASSERT_EQ((*reader)->size(), images.size());
  EXPECT_FALSE((*reader)->preprocessed());
  const int32_t shapes[][3] = {{9, 7, 3}, {5, 3, 1}, {4, 6, 4}, {12, 2, 2}, {3, 3, 3}};
  for (uint64_t id : {4u, 0u, 3u, 1u, 2u, 0u}) {  // any order
    Result<StoredSample> s = (*reader)->Read(id);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    // A move keeps the views valid (they point into the mapping or into `storage`).
    const StoredSample moved = std::move(s).value();
    EXPECT_EQ(std::vector<uint8_t>(moved.bytes.begin(), moved.bytes.end()), images.file(id)) << id;
    EXPECT_EQ(moved.codec, "png");
    EXPECT_EQ(moved.width, shapes[id][0]);
    EXPECT_EQ(moved.height, shapes[id][1]);
    EXPECT_EQ(moved.channels, shapes[id][2]);
    EXPECT_EQ(moved.orientation, 1);
    EXPECT_TRUE(moved.pixels.empty());
  }
  EXPECT_EQ((*reader)->Read(images.size()).status().code(), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Compressions, DatasetReaderTest,
                         ::testing::Values("none", "zstd", "lz4_frame"));

// The EXIF orientation the packer recorded (6: rotate 90 degrees clockwise) comes back with the
// untouched file.
TEST(DatasetReader, ReportsTheRecordedExifOrientation) {
  TempDir dir;
  const std::vector<uint8_t> jpeg =
      ReadBytes(std::string(DOCFEED_TEST_DATA_DIR) + "/images/gen/orientation6.jpg");
  ASSERT_FALSE(jpeg.empty());
  ListedImages images({jpeg});
  PackOptions o;
  o.output = dir.Join("ds");
  ASSERT_TRUE(PackFrom(Rows(1, ".jpg"), images, o).ok());
  Result<std::unique_ptr<DatasetReader>> reader = DatasetReader::Open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  Result<StoredSample> s = (*reader)->Read(0);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->codec, "jpeg");
  EXPECT_EQ(s->orientation, 6);
  EXPECT_EQ(std::vector<uint8_t>(s->bytes.begin(), s->bytes.end()), jpeg);
}

// Parses "P5|P6 <w> <h> 255" followed by one whitespace byte (docs/format.md, the stored
// pages), returning the raster's offset; -1 if the header is not of that form.
long RasterOffset(const std::vector<uint8_t>& file, int32_t* w, int32_t* h, int32_t* channels) {
  const std::string head(file.begin(),
                         file.begin() + std::min<long>(static_cast<long>(file.size()), 64));
  int maxval = 0;
  int consumed = 0;
  char magic = 0;
  if (std::sscanf(head.c_str(), "P%c %d %d %d%n", &magic, w, h, &maxval, &consumed) != 4 ||
      maxval != 255 || (magic != '5' && magic != '6')) {
    return -1;
  }
  *channels = magic == '5' ? 1 : 3;
  return consumed + 1;
}

// A page a preprocessed pack stored: PGM/PPM whose header agrees with the index record, and whose
// raster the reader views inside the stored bytes.
void ExpectStoredPpm(const StoredSample& s, uint64_t id) {
  EXPECT_EQ(s.codec, "ppm") << id;
  const std::vector<uint8_t> file(s.bytes.begin(), s.bytes.end());
  int32_t w = 0, h = 0, channels = 0;
  const long offset = RasterOffset(file, &w, &h, &channels);
  ASSERT_GT(offset, 0) << id;
  EXPECT_EQ(w, s.width) << id;
  EXPECT_EQ(h, s.height) << id;
  EXPECT_EQ(channels, s.channels) << id;
  EXPECT_EQ(s.pixels.data(), s.bytes.data() + offset) << id;
}

// Pages stored by `--preprocess donut` (and nougat, the same record): the raster is viewed
// inside the stored bytes, no larger than the size the manifest records.
class PreprocessedPages : public ::testing::TestWithParam<const char*> {};
INSTANTIATE_TEST_SUITE_P(DatasetReader, PreprocessedPages,
                         ::testing::Values(kPackPresetDonut, kPackPresetNougat));

TEST_P(PreprocessedPages, ViewsThePixels) {
  TempDir dir;
  ListedImages images = PngImages();
  PackOptions o;
  o.output = dir.Join("ds");
  o.preprocess.preset = GetParam();
  o.preprocess.height = 10;
  o.preprocess.width = 8;
  o.compression = kPreprocessedDefaultCompression;
  ASSERT_TRUE(PackFrom(Rows(images.size(), ".png"), images, o).ok());
  Result<std::unique_ptr<DatasetReader>> reader = DatasetReader::Open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_TRUE((*reader)->preprocessed());
  Result<DatasetInfo> info = ReadDatasetInfo(o.output);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->preset, GetParam());
  for (uint64_t id = 0; id < (*reader)->size(); ++id) {
    Result<StoredSample> s = (*reader)->Read(id);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ExpectStoredPpm(*s, id);
    EXPECT_LE(s->height, 10);
    EXPECT_LE(s->width, 8);
    ASSERT_EQ(s->pixels.size(), static_cast<size_t>(s->width) * static_cast<size_t>(s->height) *
                                    static_cast<size_t>(s->channels));
  }
}

// Pages stored by `--preprocess idefics3`: each is the tile grid with the global image's band
// below it, (rows + 1) x cols tiles of max_image_size for the rows and cols the processor's
// arithmetic gives the source's size (Preset::GridOf, checked against transformers by the
// Python tests), or the one tile; the manifest records the settings.
class Idefics3Pages : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(DatasetReader, Idefics3Pages, ::testing::Bool());

TEST_P(Idefics3Pages, AreTheTileGridsOfTheirSettings) {
  TempDir dir;
  ListedImages images = PngImages();
  const int32_t shapes[][2] = {{9, 7}, {5, 3}, {4, 6}, {12, 2}, {3, 3}};  // width, height
  PackOptions o;
  o.output = dir.Join("ds");
  o.preprocess.preset = kPackPresetIdefics3;
  o.preprocess.longest_edge = 16;
  o.preprocess.max_image_size = 4;
  o.preprocess.do_image_splitting = GetParam();
  o.preprocess.hf_version = 5;
  o.compression = kPreprocessedDefaultCompression;
  ASSERT_TRUE(PackFrom(Rows(images.size(), ".png"), images, o).ok());
  Result<DatasetInfo> info = ReadDatasetInfo(o.output);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->preset, kPackPresetIdefics3);
  EXPECT_EQ(info->longest_edge, 16);
  EXPECT_EQ(info->max_image_size, 4);
  EXPECT_EQ(info->do_image_splitting, GetParam());
  EXPECT_EQ(info->hf_version, 5);
  EXPECT_EQ(info->height, 0);  // Donut's fields are not Idefics3's
  PresetOptions preset;
  preset.name = "idefics3";
  preset.idefics3.longest_edge = 16;
  preset.idefics3.max_image_size = 4;
  preset.idefics3.do_image_splitting = GetParam();
  Result<Preset> made = Preset::Create(preset);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Result<std::unique_ptr<DatasetReader>> reader = DatasetReader::Open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_TRUE((*reader)->preprocessed());
  int grids = 0;
  for (uint64_t id = 0; id < (*reader)->size(); ++id) {
    Result<StoredSample> s = (*reader)->Read(id);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Result<PageGrid> grid = made->GridOf(shapes[id][1], shapes[id][0]);
    ASSERT_TRUE(grid.ok()) << grid.status().ToString();
    const bool one_tile = grid->rows == 0;
    EXPECT_EQ(s->height, one_tile ? 4 : (grid->rows + 1) * 4) << id;
    EXPECT_EQ(s->width, one_tile ? 4 : grid->cols * 4) << id;
    grids += one_tile ? 0 : 1;
    ExpectStoredPpm(*s, id);
    EXPECT_TRUE(s->channels == 1 || s->channels == 3) << id;  // 5.x composites alpha onto white
  }
  EXPECT_EQ(grids, GetParam() ? 5 : 0);
}

TEST(DatasetReader, ErrorsNameWhatIsWrong) {
  TempDir dir;
  Result<std::unique_ptr<DatasetReader>> missing = DatasetReader::Open(dir.Join("none"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  // One flipped byte inside a stored image (uncompressed body): that sample's read fails with
  // Corruption naming the data file and the sample; the others still read.
  ListedImages images = PngImages();
  PackOptions o;
  o.output = dir.Join("ds");
  ASSERT_TRUE(PackFrom(Rows(images.size(), ".png"), images, o).ok());
  const std::string data = o.output + "/data-00000-of-00001.arrow";
  std::vector<uint8_t> bytes = ReadBytes(data);
  const std::vector<uint8_t>& target = images.file(2);
  auto at = std::search(bytes.begin(), bytes.end(), target.begin(), target.end());
  ASSERT_NE(at, bytes.end());
  at[static_cast<long>(target.size() / 2)] ^= 0x40;
  std::ofstream(data, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  Result<std::unique_ptr<DatasetReader>> reader = DatasetReader::Open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  Result<StoredSample> bad = (*reader)->Read(2);
  ASSERT_EQ(bad.status().code(), StatusCode::kCorruption);
  EXPECT_NE(bad.status().message().find("data-00000-of-00001.arrow"), std::string::npos)
      << bad.status().ToString();
  EXPECT_NE(bad.status().message().find("sample 2"), std::string::npos) << bad.status().ToString();
  EXPECT_TRUE((*reader)->Read(1).ok());
}

}  // namespace
}  // namespace docfeed
