// pack --preprocess donut: every stored page is exactly DonutResize's output for that source
// (after EXIF orientation and ToDonutInput, as the on-the-fly path runs them), stored as PGM/PPM
// in 1-row compressed batches, with the preprocessing recorded in the manifest. DonutResize's
// own parity with transformers is tested in tests/python/test_donut_parity.py, and Pillow's
// reading of the stored pages in tests/python/test_preprocessed.py.
#include <gtest/gtest.h>

#include "codec/codec.h"
#include "format/dataset.h"
#include "format/verify.h"
#include "imaging/donut.h"
#include "pack/image_folder.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::TempDir;

const std::string kSampleDocs = std::string(DOCFEED_TEST_DATA_DIR) + "/sample-docs";

PackOptions PreprocessOptions(const std::string& src, const std::string& out, int32_t height,
                              int32_t width, bool align) {
  PackOptions o;
  o.source = src;
  o.output = out;
  o.threads = 2;
  o.compression = kPreprocessedDefaultCompression;
  o.encode.preprocess = {kPreprocessDonut, height, width, align};
  o.encode.keep_original = true;
  return o;
}

// The deterministic Donut stages computed directly from the source file.
Image ExpectedResized(const std::vector<uint8_t>& source, const DonutConfig& config) {
  Result<ImageInfo> info = ProbeImage(source);
  EXPECT_TRUE(info.ok());
  Result<Image> decoded = DecodeImage(source);
  EXPECT_TRUE(decoded.ok());
  Result<Image> input = ToDonutInput(ApplyOrientation(*decoded, info->exif_orientation), config);
  EXPECT_TRUE(input.ok());
  Result<Image> resized = DonutResize(*input, config);
  EXPECT_TRUE(resized.ok()) << resized.status().ToString();
  return resized.ok() ? std::move(resized).value() : Image{};
}

void ExpectStoredPagesAreDonutResize(const std::string& src, const std::string& out,
                                     const DonutConfig& config) {
  Result<ImageFolder> folder = ScanImageFolder(src);
  ASSERT_TRUE(folder.ok());
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  ASSERT_EQ((*ds)->size(), folder->samples.size());
  for (uint64_t i = 0; i < (*ds)->size(); ++i) {
    const std::string& name = folder->samples[i].relative_path;
    Result<SampleBytes> sample = (*ds)->ReadSample(i, /*with_labels=*/true);
    ASSERT_TRUE(sample.ok()) << name << ": " << sample.status().ToString();
    Result<ImageView> view = ViewPpm(sample->image);
    ASSERT_TRUE(view.ok()) << name << ": " << view.status().ToString();
    const Image expected = ExpectedResized(*ReadFile(JoinPath(src, name)), config);
    ASSERT_EQ(view->width, expected.width) << name;
    ASSERT_EQ(view->height, expected.height) << name;
    ASSERT_EQ(view->channels, expected.channels) << name;
    EXPECT_TRUE(std::equal(expected.pixels.begin(), expected.pixels.end(), view->data)) << name;
    const IndexRecord r = (*ds)->record(i);
    EXPECT_EQ(r.codec, static_cast<uint8_t>(StoredCodec::kPpm)) << name;
    EXPECT_EQ(r.width, static_cast<uint32_t>(expected.width)) << name;
    EXPECT_EQ(r.channels, static_cast<uint8_t>(expected.channels)) << name;
    EXPECT_EQ(sample->labels, folder->samples[i].values) << name;
  }
}

TEST(PreprocessPackTest, StoresExactlyDonutResizeForEverySampleDoc) {
  TempDir dir;
  const std::string out = dir.Join("out");
  // A small target size keeps the test quick; the sources are full-size pages (grayscale and
  // RGB, JPEG and PNG), so every resize path (shrink, thumbnail) runs.
  Result<PackSummary> summary = Pack(PreprocessOptions(kSampleDocs, out, 388, 300, false));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->stored_codecs.at("ppm"), summary->samples);
  DonutConfig config;
  config.height = 388;
  config.width = 300;
  ExpectStoredPagesAreDonutResize(kSampleDocs, out, config);
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out);
  ASSERT_TRUE(ds.ok());
  const Manifest& m = (*ds)->manifest();
  EXPECT_EQ(m.preprocess, (PreprocessInfo{kPreprocessDonut, 388, 300, false}));
  EXPECT_EQ(m.original_column, kOriginalColumn);
  EXPECT_EQ(m.compression, "lz4_frame");
  for (const FileEntry& f : m.data_files) {
    for (const Region& region : f.regions) {
      if (region.kind == Region::Kind::kBatch) {
        EXPECT_EQ(region.num_rows, 1u) << f.name;
      }
    }
  }
  const Status verified = VerifyDataset(out);
  EXPECT_TRUE(verified.ok()) << verified.ToString();
}

TEST(PreprocessPackTest, AlignLongAxisAndUncompressedBodies) {
  TempDir dir;
  testing::MakeSmallFolder(dir.Join("src"));
  PackOptions o = PreprocessOptions(dir.Join("src"), dir.Join("out"), 6, 12, true);
  o.compression = "none";
  o.encode.keep_original = false;
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  DonutConfig config;
  config.height = 6;
  config.width = 12;
  config.align_long_axis = true;
  ExpectStoredPagesAreDonutResize(dir.Join("src"), dir.Join("out"), config);
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(dir.Join("out"));
  ASSERT_TRUE(ds.ok());
  EXPECT_TRUE((*ds)->manifest().preprocess.align_long_axis);
  EXPECT_TRUE((*ds)->manifest().original_column.empty());
}

// The processor generation travels into the stored pages and the manifest.
TEST(PreprocessPackTest, Transformers5TorchvisionPagesAreRecorded) {
  TempDir dir;
  testing::MakeSmallFolder(dir.Join("src"));
  PackOptions o = PreprocessOptions(dir.Join("src"), dir.Join("out"), 6, 12, false);
  o.encode.preprocess.hf_version = 5;
  o.encode.preprocess.backend = "torchvision";
  o.encode.keep_original = false;
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  DonutConfig config;
  config.height = 6;
  config.width = 12;
  config.hf_version = 5;
  config.backend = DonutBackend::kTorchvision;
  ExpectStoredPagesAreDonutResize(dir.Join("src"), dir.Join("out"), config);
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(dir.Join("out"));
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ((*ds)->manifest().preprocess.hf_version, 5);
  EXPECT_EQ((*ds)->manifest().preprocess.backend, "torchvision");
}

TEST(PreprocessPackTest, UnknownBackendIsRefused) {
  TempDir dir;
  testing::MakeSmallFolder(dir.Join("src"));
  PackOptions o = PreprocessOptions(dir.Join("src"), dir.Join("out"), 6, 12, false);
  o.encode.preprocess.backend = "torchvision";  // with hf_version 4
  Result<PackSummary> summary = Pack(o);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(summary.status().message().find("torchvision"), std::string::npos);
}

TEST(PreprocessPackTest, KeepOriginalNeedsPreprocess) {
  TempDir dir;
  testing::MakeSmallFolder(dir.Join("src"));
  PackOptions o;
  o.source = dir.Join("src");
  o.output = dir.Join("out");
  o.encode.keep_original = true;
  Result<PackSummary> summary = Pack(o);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(summary.status().message().find("--keep-original needs --preprocess"),
            std::string::npos);
}

TEST(PreprocessPackTest, UnknownPresetIsRefusedBeforeWriting) {
  TempDir dir;
  testing::MakeSmallFolder(dir.Join("src"));
  PackOptions o = PreprocessOptions(dir.Join("src"), dir.Join("out"), 8, 8, false);
  o.encode.preprocess.preset = "layoutlmv3";
  Result<PackSummary> summary = Pack(o);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("unknown preprocessing"), std::string::npos)
      << summary.status().ToString();
  EXPECT_FALSE(PathExists(dir.Join("out")));
}

}  // namespace
}  // namespace docfeed::internal
