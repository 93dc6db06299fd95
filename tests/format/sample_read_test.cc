// Dataset::ReadSample (the loader's read) against ReadImage + ReadLabels for every body
// compression, with and without preprocessing; checksum failures; and the manifest's
// `preprocess` / `original_column` fields (absent in datasets packed before them).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "base/hash.h"
#include "codec/codec.h"
#include "format/dataset.h"
#include "format/index.h"
#include "format/manifest.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::TempDir;

class ReadSampleTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
 protected:
  void SetUp() override {
    testing::MakeSmallFolder(dir_.Join("src"));
    PackOptions o;
    o.source = dir_.Join("src");
    o.output = dir_.Join("out");
    o.threads = 1;
    o.compression = std::get<0>(GetParam());
    if (std::get<1>(GetParam())) {
      o.encode.preprocess = {kPreprocessDonut, 10, 8, false};
      o.encode.keep_original = true;
    }
    Result<PackSummary> summary = Pack(o);
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    Result<std::unique_ptr<Dataset>> ds = Dataset::Open(dir_.Join("out"));
    ASSERT_TRUE(ds.ok()) << ds.status().ToString();
    ds_ = std::move(ds).value();
  }

  TempDir dir_;
  std::unique_ptr<Dataset> ds_;
};

TEST_P(ReadSampleTest, EqualsReadImageAndReadLabels) {
  ASSERT_EQ(ds_->size(), 4u);
  for (uint64_t id = 0; id < ds_->size(); ++id) {
    Result<std::vector<uint8_t>> image = ds_->ReadImage(id);
    Result<std::vector<Value>> labels = ds_->ReadLabels(id);
    ASSERT_TRUE(image.ok() && labels.ok());
    Result<SampleBytes> with = ds_->ReadSample(id, true);
    ASSERT_TRUE(with.ok()) << with.status().ToString();
    EXPECT_TRUE(std::equal(with->image.begin(), with->image.end(), image->begin(), image->end()))
        << id;
    EXPECT_EQ(with->labels, *labels) << id;
    // Moving keeps the image view valid (it points into the mapping or into `owned`).
    SampleBytes moved = std::move(with).value();
    EXPECT_TRUE(std::equal(moved.image.begin(), moved.image.end(), image->begin(), image->end()))
        << id;
    if (!moved.owned.empty()) {
      EXPECT_GE(moved.image.data(), moved.owned.data());
      EXPECT_LE(moved.image.data() + moved.image.size(), moved.owned.data() + moved.owned.size());
    }
    Result<SampleBytes> without = ds_->ReadSample(id, false);
    ASSERT_TRUE(without.ok()) << without.status().ToString();
    EXPECT_TRUE(without->labels.empty());
    EXPECT_TRUE(
        std::equal(without->image.begin(), without->image.end(), image->begin(), image->end()));
  }
  EXPECT_EQ(ds_->ReadSample(4, false).status().code(), StatusCode::kInvalidArgument);
}

// One scratch for every read (the loader's per-worker buffers), in an order where samples of
// different sizes follow each other: each read gives exactly that sample's bytes and labels.
TEST_P(ReadSampleTest, ReusedScratchGivesTheSameBytes) {
  ReadScratch scratch;
  for (uint64_t id : {3, 0, 2, 1, 3, 1, 0}) {
    Result<std::vector<uint8_t>> image = ds_->ReadImage(id);
    ASSERT_TRUE(image.ok());
    Result<SampleBytes> s = ds_->ReadSample(id, id % 2 == 0, &scratch);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_TRUE(s->owned.empty());
    EXPECT_TRUE(std::equal(s->image.begin(), s->image.end(), image->begin(), image->end())) << id;
    if (id % 2 == 0) {
      EXPECT_EQ(s->labels, *ds_->ReadLabels(id)) << id;
    }
  }
  EXPECT_FALSE(ds_->ReadSample(9, false, &scratch).ok());
  EXPECT_TRUE(ds_->ReadSample(2, false, &scratch).ok());
}

// Bytes fetched ahead (a remote dataset's prefetcher): an image read in place from the part the
// caller checked is not hashed again, and only from there. A byte flipped after the check shows
// which: trusted inside the checked part, caught by the image checksum outside it.
TEST_P(ReadSampleTest, OnlyAnImageInsideTheCheckedPartSkipsItsChecksum) {
  const bool in_place = std::get<0>(GetParam()) == "none";  // else the image is decompressed
  for (uint64_t id = 0; id < ds_->size(); ++id) {
    Result<SamplePlan> plan = ds_->PlanSample(id, true);
    ASSERT_TRUE(plan.ok());
    const FileRange range = plan->range;
    std::vector<uint8_t> bytes(range.length);
    ASSERT_TRUE(ds_->data_file(range.file).ReadAt(range.offset, bytes).ok());
    FetchedRange fetched{range.file, range.offset, bytes, range.offset, range.length};
    ReadScratch scratch;
    Result<SampleBytes> read = ds_->ReadSample(id, true, &scratch, &fetched);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(std::vector<uint8_t>(read->image.begin(), read->image.end()), *ds_->ReadImage(id));
    if (!in_place) continue;
    const IndexRecord r = ds_->record(id);
    bytes[r.image_offset - range.offset + r.image_length / 2] ^= 0x5A;
    EXPECT_TRUE(ds_->ReadSample(id, true, &scratch, &fetched).ok()) << id;
    for (const auto& [offset, length] :
         {std::pair<uint64_t, uint64_t>{0, 0},
          {range.offset, r.image_offset + r.image_length - 1 - range.offset},
          {r.image_offset + 1, range.end() - r.image_offset - 1}}) {
      fetched.checked_offset = offset;
      fetched.checked_length = length;
      Result<SampleBytes> outside = ds_->ReadSample(id, true, &scratch, &fetched);
      ASSERT_FALSE(outside.ok()) << id << " " << offset << "+" << length;
      EXPECT_NE(outside.status().message().find("image bytes do not match their checksum"),
                std::string::npos)
          << outside.status().ToString();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Bodies, ReadSampleTest,
                         ::testing::Combine(::testing::Values("none", "zstd", "lz4_frame"),
                                            ::testing::Bool()));

// Flips one byte of sample 0's stored image (uncompressed body, located by the index).
TEST(ReadSampleCorruptionTest, ImageChecksumMismatchNamesFileAndSample) {
  TempDir dir;
  testing::MakeSmallFolder(dir.Join("src"));
  PackOptions o;
  o.source = dir.Join("src");
  o.output = dir.Join("out");
  o.encode.preprocess = {kPreprocessDonut, 10, 8, false};
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  uint64_t offset = 0;
  std::string file;
  {
    Result<std::unique_ptr<Dataset>> ds = Dataset::Open(dir.Join("out"));
    ASSERT_TRUE(ds.ok());
    const IndexRecord r = (*ds)->record(0);
    offset = r.image_offset + r.image_length - 1;  // the last pixel byte
    file = JoinPath(dir.Join("out"), (*ds)->manifest().data_files[r.file_index].name);
  }
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    const char c = static_cast<char>(f.get() ^ 0x5A);
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(c);
  }
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(dir.Join("out"));
  ASSERT_TRUE(ds.ok());
  Result<SampleBytes> sample = (*ds)->ReadSample(0, false);
  ASSERT_FALSE(sample.ok());
  EXPECT_EQ(sample.status().code(), StatusCode::kCorruption);
  EXPECT_NE(sample.status().message().find("sample 0: image bytes do not match"), std::string::npos)
      << sample.status().ToString();
  EXPECT_TRUE((*ds)->ReadSample(1, true).ok());
}

// Sets an edited manifest's self-checksum the way a writer would (docs/format.md, section 4).
void Reseal(std::string& text) {
  const std::string key = "\"manifest_xxh3\": \"";
  const size_t sum = text.rfind(key) + key.size();
  text.replace(sum, 16, "0000000000000000");
  text.replace(sum, 16,
               Hex64(Hash64({reinterpret_cast<const uint8_t*>(text.data()), text.size()})));
}

TEST(ManifestPreprocessTest, RoundTripsAndIsAbsentForOriginals) {
  Manifest m;
  m.created_by = "test";
  std::string text = EncodeManifest(m);
  EXPECT_EQ(text.find("\"preprocess\""), std::string::npos);
  EXPECT_EQ(text.find("\"original_column\""), std::string::npos);
  Result<Manifest> back = DecodeManifest(text, "docfeed.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_FALSE(back->preprocess.preprocessed());
  m.preprocess = {kPreprocessDonut, 1553, 1200, true};
  m.original_column = kOriginalColumn;
  back = DecodeManifest(EncodeManifest(m), "docfeed.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->preprocess, m.preprocess);
  EXPECT_EQ(back->original_column, kOriginalColumn);
}

// docfeed.pack(processor=...)'s record: absent by default, an object kept as its JSON text, and
// anything but an object refused.
TEST(ManifestChatLabelsTest, RoundTripsAndANonObjectIsRefused) {
  Manifest m;
  EXPECT_EQ(EncodeManifest(m).find("\"chat_labels\""), std::string::npos);
  m.chat_labels = R"({"pad_token_id": 1, "longest": 70, "columns": ["input_ids"]})";
  std::string text = EncodeManifest(m);
  Result<Manifest> back = DecodeManifest(text, "docfeed.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->chat_labels, R"({"pad_token_id":1,"longest":70,"columns":["input_ids"]})");
  const std::string object = "\"chat_labels\": {";
  const size_t at = text.find(object);
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, object.size(), "\"chat_labels\": [1], \"x\": {");
  Reseal(text);
  back = DecodeManifest(text, "x/docfeed.json");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kCorruption);
  EXPECT_NE(back.status().message().find("chat_labels is not a JSON object"), std::string::npos)
      << back.status().ToString();
}

TEST(ManifestPreprocessTest, UnknownPresetAndBadSizeAreRefused) {
  Manifest m;
  m.preprocess = {"layoutlmv3", 10, 10, false};
  Result<Manifest> back = DecodeManifest(EncodeManifest(m), "x/docfeed.json");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(back.status().message().find("x/docfeed.json"), std::string::npos);
  EXPECT_NE(back.status().message().find("layoutlmv3"), std::string::npos);
  m.preprocess = {kPreprocessDonut, 0, 10, false};
  back = DecodeManifest(EncodeManifest(m), "x/docfeed.json");
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("preprocess"), std::string::npos);
}

TEST(ManifestPreprocessTest, QwenSettingsRoundTripAndBadOnesAreRefused) {
  Manifest m;
  m.preprocess.preset = kPreprocessQwen25VL;
  m.preprocess.min_pixels = 3136;
  m.preprocess.max_pixels = 1003520;
  m.preprocess.patch_size = 14;
  m.preprocess.merge_size = 2;
  m.preprocess.hf_version = 5;
  m.preprocess.backend = "torchvision";
  const std::string text = EncodeManifest(m);
  EXPECT_EQ(text.find("\"height\""), std::string::npos) << text;  // Donut's fields are absent
  Result<Manifest> back = DecodeManifest(text, "docfeed.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->preprocess, m.preprocess);
  m.preprocess.max_pixels = 100;  // below min_pixels
  back = DecodeManifest(EncodeManifest(m), "x/docfeed.json");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kCorruption);
  EXPECT_NE(back.status().message().find("max_pixels 100"), std::string::npos);
  m.preprocess.max_pixels = 1003520;
  m.preprocess.hf_version = 4;  // torchvision needs 5
  back = DecodeManifest(EncodeManifest(m), "x/docfeed.json");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kUnsupported);
}

// `pack --preprocess idefics3`'s record: its own fields instead of Donut's size, round-tripped;
// bad sizes (Corruption), another backend (Unsupported) and a missing field refused, naming it;
// the records of the other presets, written before these fields existed, parse as they did.
TEST(ManifestPreprocessTest, Idefics3SettingsRoundTripAndBadOnesAreRefused) {
  Manifest m;
  m.preprocess.preset = kPreprocessIdefics3;
  m.preprocess.longest_edge = 1456;
  m.preprocess.max_image_size = 364;
  m.preprocess.do_image_splitting = true;
  m.preprocess.hf_version = 5;
  std::string text = EncodeManifest(m);
  EXPECT_EQ(text.find("\"height\""), std::string::npos) << text;  // Donut's fields are absent
  EXPECT_NE(text.find("\"longest_edge\": 1456"), std::string::npos) << text;
  EXPECT_NE(text.find("\"do_image_splitting\": true"), std::string::npos) << text;
  Result<Manifest> back = DecodeManifest(text, "docfeed.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->preprocess, m.preprocess);
  m.preprocess.do_image_splitting = false;
  back = DecodeManifest(EncodeManifest(m), "docfeed.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->preprocess, m.preprocess);

  m.preprocess.max_image_size = 0;
  back = DecodeManifest(EncodeManifest(m), "x/docfeed.json");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kCorruption);
  EXPECT_NE(back.status().message().find("max_image_size 0"), std::string::npos)
      << back.status().ToString();
  m.preprocess.max_image_size = 364;
  m.preprocess.backend = "torchvision";
  back = DecodeManifest(EncodeManifest(m), "x/docfeed.json");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(back.status().message().find("preprocess.backend"), std::string::npos);
  EXPECT_NE(back.status().message().find("idefics3"), std::string::npos);

  m.preprocess.backend = "pil";
  text = EncodeManifest(m);
  const std::string field = "\"longest_edge\": 1456,";
  const size_t at = text.find(field);
  ASSERT_NE(at, std::string::npos) << text;
  text.erase(at, field.size());
  Reseal(text);
  back = DecodeManifest(text, "x/docfeed.json");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kCorruption);
  EXPECT_NE(back.status().message().find("longest_edge"), std::string::npos)
      << back.status().ToString();

  // A Donut record as docfeed wrote it before the Idefics3 fields (and hf_version) existed.
  Manifest donut;
  donut.preprocess = {kPreprocessDonut, 1553, 1200, true};
  text = EncodeManifest(donut);
  const std::string first = "\"align_long_axis\": true", last = "\"backend\": \"pil\"";
  const size_t from = text.find(first), to = text.find(last);
  ASSERT_TRUE(from != std::string::npos && to != std::string::npos && from < to) << text;
  text.erase(from + first.size(), to + last.size() - from - first.size());
  ASSERT_EQ(text.find("longest_edge"), std::string::npos) << text;
  Reseal(text);
  back = DecodeManifest(text, "docfeed.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
  EXPECT_EQ(back->preprocess, donut.preprocess);
}

// `pack --preprocess pix2struct` records the generation only: the page is stored at its own size.
TEST(ManifestPreprocessTest, Pix2StructRecordHasNoSizes) {
  Manifest m;
  m.preprocess.preset = kPreprocessPix2Struct;
  m.preprocess.hf_version = 5;
  std::string text = EncodeManifest(m);
  for (const char* absent : {"\"height\"", "\"width\"", "\"min_pixels\"", "\"longest_edge\""}) {
    EXPECT_EQ(text.find(absent), std::string::npos) << absent << "\n" << text;
  }
  EXPECT_NE(text.find("\"preset\": \"pix2struct\""), std::string::npos) << text;
  Result<Manifest> back = DecodeManifest(text, "docfeed.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->preprocess, m.preprocess);

  for (const auto& [version, backend] :
       {std::pair{5, std::string("torchvision")}, std::pair{6, std::string("pil")}}) {
    m.preprocess.hf_version = version;
    m.preprocess.backend = backend;
    back = DecodeManifest(EncodeManifest(m), "x/docfeed.json");
    ASSERT_FALSE(back.ok()) << version << " " << backend;
    EXPECT_EQ(back.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(back.status().message().find("pix2struct"), std::string::npos)
        << back.status().ToString();
  }
}

// `--stored-form patches` records the form and the settings the rows were made for; the page
// form (and every manifest written before the key existed) has no key.
TEST(ManifestPreprocessTest, Pix2StructPatchesFormRoundTripsAndIsValidated) {
  Manifest m;
  m.preprocess.preset = kPreprocessPix2Struct;
  m.preprocess.stored_form = kStoredFormPatches;
  m.preprocess.max_patches = 512;
  m.preprocess.patch_height = 16;
  m.preprocess.patch_width = 8;
  std::string text = EncodeManifest(m);
  EXPECT_NE(text.find("\"stored_form\": \"patches\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"max_patches\": 512"), std::string::npos) << text;
  Result<Manifest> back = DecodeManifest(text, "docfeed.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->preprocess, m.preprocess);
  EXPECT_TRUE(back->preprocess.patches_form());

  // Written "page" explicitly, the record reads as the page form (as without the key).
  std::string page = text;
  page.replace(page.find("\"patches\""), 9, "\"page\"");
  Reseal(page);
  back = DecodeManifest(page, "x/docfeed.json");
  ASSERT_FALSE(back.ok());  // max_patches has no meaning for the page
  EXPECT_EQ(back.status().code(), StatusCode::kCorruption) << back.status().ToString();

  struct Bad {
    std::string from, to;
    StatusCode code;
    std::string message;
  };
  for (const Bad& bad :
       {Bad{"\"patches\"", "\"tiles\"", StatusCode::kUnsupported, "tiles"},
        Bad{"\"max_patches\": 512", "\"max_patches\": 0", StatusCode::kCorruption, "max_patches 0"},
        Bad{"\"patch_width\": 8", "\"patch_width\": 257", StatusCode::kCorruption, "16x257"},
        Bad{"\"max_patches\": 512,", "", StatusCode::kCorruption, "without max_patches"}}) {
    std::string broken = text;
    const size_t at = broken.find(bad.from);
    ASSERT_NE(at, std::string::npos) << bad.from;
    broken.replace(at, bad.from.size(), bad.to);
    Reseal(broken);
    back = DecodeManifest(broken, "x/docfeed.json");
    ASSERT_FALSE(back.ok()) << broken;
    EXPECT_EQ(back.status().code(), bad.code) << back.status().ToString();
    EXPECT_NE(back.status().message().find(bad.message), std::string::npos)
        << back.status().ToString();
  }

  // The page form writes no key: its manifests are what they were before the patches form.
  m.preprocess.stored_form.clear();
  m.preprocess.max_patches = m.preprocess.patch_height = m.preprocess.patch_width = 0;
  EXPECT_EQ(EncodeManifest(m).find("stored_form"), std::string::npos);

  // Only Pix2Struct has a stored form.
  Manifest donut;
  donut.preprocess = {kPreprocessDonut, 1553, 1200, true};
  std::string donut_text = EncodeManifest(donut);
  donut_text.insert(donut_text.find("\"height\""), "\"stored_form\": \"patches\", ");
  Reseal(donut_text);
  back = DecodeManifest(donut_text, "x/docfeed.json");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kUnsupported) << back.status().ToString();
}

// The index's codec byte 6 is a float PFM, checked against the stored bytes' signature.
TEST(StoredCodecTest, PfmHasItsOwnByte) {
  const float value = 0.5f;
  Result<std::vector<uint8_t>> pfm = EncodePfm(&value, 1, 1);
  ASSERT_TRUE(pfm.ok());
  EXPECT_EQ(static_cast<int>(StoredCodec::kPfm), 6);
  EXPECT_EQ(StoredCodecName(StoredCodec::kPfm), "pfm");
  EXPECT_TRUE(CheckStoredCodec(6, *pfm).ok());
  const Status ppm_byte = CheckStoredCodec(static_cast<uint8_t>(StoredCodec::kPpm), *pfm);
  EXPECT_EQ(ppm_byte.code(), StatusCode::kCorruption);
  EXPECT_NE(ppm_byte.message().find("stored bytes are pfm"), std::string::npos)
      << ppm_byte.ToString();
  const std::vector<uint8_t> ppm = {'P', '5', '\n', '1', ' ', '1', '\n', '2', '5', '5', '\n', 0};
  EXPECT_EQ(CheckStoredCodec(6, ppm).code(), StatusCode::kCorruption);
}

TEST(ManifestNormalizationTest, RoundTripsAndIsAbsentByDefault) {
  Manifest m;
  const std::string plain = EncodeManifest(m);
  EXPECT_EQ(plain.find("\"normalization\""), std::string::npos);
  Result<Manifest> back = DecodeManifest(plain, "docfeed.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_FALSE(back->normalization.has_value());
  m.normalization = NormalizationInfo{{0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}};
  const std::string text = EncodeManifest(m);
  EXPECT_NE(text.find("\"mean\": [\n   0.485,"), std::string::npos) << text;
  back = DecodeManifest(text, "docfeed.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->normalization, m.normalization);  // doubles round-trip exactly
}

TEST(ManifestNormalizationTest, ZeroStdAndShortListsAreRefused) {
  Manifest m;
  m.normalization = NormalizationInfo{{0.5, 0.5, 0.5}, {0.5, 0.0, 0.5}};
  Result<Manifest> back = DecodeManifest(EncodeManifest(m), "x/docfeed.json");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kCorruption);
  EXPECT_NE(back.status().message().find("normalization.std[1]"), std::string::npos)
      << back.status().ToString();
  EXPECT_NE(back.status().message().find("x/docfeed.json"), std::string::npos);
  // A list of 2: edit the text and fix the self-checksum the way a writer would.
  m.normalization = NormalizationInfo{};
  std::string text = EncodeManifest(m);
  const std::string three = "\"mean\": [\n   0.5,\n   0.5,\n   0.5\n  ]";
  const size_t at = text.find(three);
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, three.size(), "\"mean\": [0.5, 0.5]");
  Reseal(text);
  back = DecodeManifest(text, "x/docfeed.json");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kCorruption);
  EXPECT_NE(back.status().message().find("normalization.mean is not a list of 3"),
            std::string::npos)
      << back.status().ToString();
}

// The arithmetic of a migration of transformers 5 torchvision tensors: written only when it is
// not numpy's (older manifests read back equal), read back, and an unknown one refused.
TEST(ManifestNormalizationTest, TheTorchvisionArithmeticRoundTripsAndUnknownOnesAreRefused) {
  Manifest m;
  m.normalization = NormalizationInfo{};
  EXPECT_EQ(EncodeManifest(m).find("\"backend\""), std::string::npos);
  m.normalization->backend = "torchvision";
  const std::string text = EncodeManifest(m);
  Result<Manifest> back = DecodeManifest(text, "docfeed.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->normalization, m.normalization);
  m.normalization->backend = "cv2";
  back = DecodeManifest(EncodeManifest(m), "x/docfeed.json");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(back.status().message().find("normalization.backend"), std::string::npos)
      << back.status().ToString();
  EXPECT_NE(back.status().message().find("x/docfeed.json"), std::string::npos);
}

// The manifest_fuzz find: a count written as 1e47 was converted to uint64_t with undefined
// behaviour; -1, 1.5 and true were read as 2^64-1, 1 and 1. Each is now Corruption naming the file
// and the field.
TEST(ManifestNumbersTest, ACountThatIsNotAnExactIntegerIsRefusedNamingTheField) {
  Manifest m;
  m.num_samples = 4;
  m.data_files.push_back(
      {"data-00000-of-00001.arrow", 10, 1, 4, {{Region::Kind::kSchema, 0, 10, 0, 0, 0}}});
  const std::string good = EncodeManifest(m);
  ASSERT_TRUE(DecodeManifest(good, "x/docfeed.json").ok());
  for (const char* field : {"\"num_samples\": 4", "\"num_rows\": 4"}) {
    for (const char* bad : {"1e47", "-1", "1.5", "4.0", "true", "99999999999999999999"}) {
      std::string text = good;
      const size_t at = text.find(field);
      ASSERT_NE(at, std::string::npos) << text;
      std::string edited = field;
      edited.replace(edited.size() - 1, 1, bad);
      text.replace(at, std::strlen(field), edited);
      Reseal(text);
      Result<Manifest> back = DecodeManifest(text, "x/docfeed.json");
      ASSERT_FALSE(back.ok()) << edited;
      EXPECT_EQ(back.status().code(), StatusCode::kCorruption) << edited;
      const std::string why(back.status().message());
      EXPECT_NE(why.find("x/docfeed.json"), std::string::npos) << why;
      const std::string name = std::string(field).substr(1, std::string(field).find('"', 1) - 1);
      EXPECT_NE(why.find(name), std::string::npos) << edited << ": " << why;
    }
  }
}

}  // namespace
}  // namespace docfeed::internal
