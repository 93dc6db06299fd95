// Forged datasets whose checksums were all recomputed (issue #14): `verify` and the read path
// cross-check what a forger cannot keep consistent. The index codec byte against the stored
// bytes' signature, a manifest's preprocessing claim against the stored pages, and each index
// range against the Arrow row it claims to be. The references are the packed source files, not
// an earlier docfeed output.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "base/file.h"
#include "base/hash.h"
#include "format/dataset.h"
#include "format/index.h"
#include "format/manifest.h"
#include "format/verify.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

class ForgeryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::MakeSmallFolder(dir_.Join("src"));
    PackOptions o;
    o.source = dir_.Join("src");
    o.output = out_;
    o.threads = 1;
    ASSERT_TRUE(Pack(o).ok());
    ASSERT_TRUE(VerifyDataset(out_).ok());
  }

  // Rewrites the manifest through `edit`, recomputing its own checksum.
  void EditManifest(const std::function<void(Manifest&)>& edit) {
    const std::string path = JoinPath(out_, kManifestFileName);
    Result<Manifest> m = DecodeManifest(*ReadTextFile(path), path);
    ASSERT_TRUE(m.ok());
    edit(*m);
    ASSERT_TRUE(WriteTextFile(path, EncodeManifest(*m)).ok());
  }

  // Rewrites the index records through `edit`, recomputing the index footer and the manifest's
  // size and checksum of the index.
  void EditIndex(const std::function<void(std::vector<IndexRecord>&)>& edit) {
    const std::string path = JoinPath(out_, kIndexFileName);
    const std::vector<uint8_t> bytes = *ReadFile(path);
    Result<IndexView> view = IndexView::Open(bytes, path);
    ASSERT_TRUE(view.ok());
    std::vector<IndexRecord> records;
    for (uint64_t i = 0; i < view->size(); ++i) records.push_back(view->Get(i));
    edit(records);
    const std::vector<uint8_t> forged = EncodeIndex(records);
    ASSERT_TRUE(Env::Default()->WriteFile(path, forged).ok());
    EditManifest([&](Manifest& m) {
      for (FileEntry& f : m.other_files) {
        if (f.name != kIndexFileName) continue;
        f.size_bytes = forged.size();
        f.xxh3 = Hash64(forged);
      }
    });
  }

  // The problems verify reports; empty when it passes.
  std::string Problems() {
    Result<VerifyReport> report = VerifyDatasetReport(out_);
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    std::string all;
    for (const std::string& p : report->problems) all += p + "\n";
    return all;
  }

  testing::TempDir dir_;
  const std::string out_ = dir_.Join("out");
};

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(ForgeryTest, CodecByteAgainstTheStoredSignature) {
  EditIndex([](std::vector<IndexRecord>& r) { r[1].codec = 9; });
  const std::string problems = Problems();
  EXPECT_TRUE(Has(problems, "sample 1: index codec 9")) << problems;
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out_);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  Result<SampleBytes> s = (*ds)->ReadSample(1, false);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Has(s.status().ToString(), "index codec 9")) << s.status().ToString();
  EXPECT_TRUE((*ds)->ReadSample(0, false).ok());
  // Another real codec that is not the stored one.
  EditIndex([](std::vector<IndexRecord>& r) {
    r[1].codec = 9;
    r[0].codec = r[0].codec == static_cast<uint8_t>(StoredCodec::kPng)
                     ? static_cast<uint8_t>(StoredCodec::kWebp)
                     : static_cast<uint8_t>(StoredCodec::kPng);
  });
  EXPECT_TRUE(Has(Problems(), "sample 0: index codec")) << Problems();
}

TEST_F(ForgeryTest, FalsePreprocessingClaim) {
  EditManifest([](Manifest& m) { m.preprocess = {kPreprocessDonut, 2000, 2000, false}; });
  const std::string problems = Problems();
  EXPECT_TRUE(Has(problems, "field codec is \"keep\", but a preprocessed dataset stores ppm"))
      << problems;
  EXPECT_TRUE(Has(problems, "the manifest says the images were preprocessed")) << problems;
  // Also with the manifest's codec field forged to match.
  EditManifest([](Manifest& m) { m.codec = "ppm"; });
  EXPECT_TRUE(Has(Problems(), "not the PPM/PGM that preprocessing stores")) << Problems();
}

// Nougat's pages are the PIL processors' only: a record claiming another backend is refused
// when the dataset is opened, naming the field.
TEST_F(ForgeryTest, NougatPreprocessingWithAnotherBackend) {
  EditManifest([](Manifest& m) {
    m.preprocess = {kPreprocessNougat, 2000, 2000, false, 5, "torchvision"};
    m.codec = "ppm";
  });
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out_);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kUnsupported) << ds.status().ToString();
  EXPECT_TRUE(Has(ds.status().ToString(), "preprocess.backend")) << ds.status().ToString();
  EXPECT_TRUE(Has(ds.status().ToString(), "nougat")) << ds.status().ToString();
}

// Idefics3 prepared pages (tiles of 4) under a record forged to say tiles of 3: verify names
// the pages that are no tile grid for the recorded max_image_size. A record claiming another
// backend is refused on open, as Nougat's.
TEST_F(ForgeryTest, FalseIdefics3Claim) {
  PackOptions o;
  o.source = dir_.Join("src");
  o.output = out_;
  o.threads = 1;
  o.overwrite = true;
  o.encode.preprocess.preset = kPreprocessIdefics3;
  o.encode.preprocess.longest_edge = 16;
  o.encode.preprocess.max_image_size = 4;
  o.encode.preprocess.do_image_splitting = true;
  ASSERT_TRUE(Pack(o).ok());
  EXPECT_EQ(Problems(), "");
  EditManifest([](Manifest& m) { m.preprocess.max_image_size = 3; });
  const std::string problems = Problems();
  EXPECT_TRUE(Has(problems, "is not an Idefics3 prepared page for max_image_size 3")) << problems;
  EditManifest([](Manifest& m) {
    m.preprocess.max_image_size = 4;
    m.preprocess.backend = "torchvision";
  });
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out_);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kUnsupported) << ds.status().ToString();
  EXPECT_TRUE(Has(ds.status().ToString(), "preprocess.backend")) << ds.status().ToString();
  EXPECT_TRUE(Has(ds.status().ToString(), "idefics3")) << ds.status().ToString();
}

// Pix2Struct's stored patches (max_patches 8, 2 x 2 patches: rows of 14 values) under forged
// records: a smaller max_patches or another patch size is named by verify for every sample whose
// rows it cannot hold; a page-form claim over the same samples is refused (they are not PPM),
// and so is the patches form's manifest codec forged back to ppm.
TEST_F(ForgeryTest, FalsePix2StructPatchesClaim) {
  PackOptions o;
  o.source = dir_.Join("src");
  o.output = out_;
  o.threads = 1;
  o.overwrite = true;
  o.encode.preprocess.preset = kPreprocessPix2Struct;
  o.encode.preprocess.stored_form = kStoredFormPatches;
  o.encode.preprocess.max_patches = 8;
  o.encode.preprocess.patch_height = 2;
  o.encode.preprocess.patch_width = 2;
  ASSERT_TRUE(Pack(o).ok());
  EXPECT_EQ(Problems(), "");
  EditManifest([](Manifest& m) { m.preprocess.max_patches = 1; });
  std::string problems = Problems();
  EXPECT_TRUE(Has(problems, "is not Pix2Struct's stored patches (a pfm of 1 to 1 rows of 14"))
      << problems;
  EditManifest([](Manifest& m) {
    m.preprocess.max_patches = 8;
    m.preprocess.patch_width = 3;
  });
  EXPECT_TRUE(Has(Problems(), "rows of 20 values")) << Problems();
  EditManifest([](Manifest& m) {
    m.preprocess.patch_width = 2;
    m.codec = "ppm";
  });
  EXPECT_TRUE(Has(Problems(),
                  "field codec is \"ppm\", but a patches-form Pix2Struct dataset "
                  "stores pfm"))
      << Problems();
  EditManifest([](Manifest& m) {
    m.preprocess.stored_form.clear();
    m.preprocess.max_patches = m.preprocess.patch_height = m.preprocess.patch_width = 0;
  });
  EXPECT_TRUE(Has(Problems(), "not the PPM/PGM that preprocessing stores")) << Problems();
}

// Sample 2's record given sample 0's image range, size, geometry and checksum (both are in the
// one record batch): the image-only read would serve sample 0's pixels as sample 2.
TEST_F(ForgeryTest, IndexRangeAgainstTheArrowRow) {
  const std::vector<uint8_t> sample0 = *ReadFile(dir_.Join("src/a.png"));
  EditIndex([](std::vector<IndexRecord>& r) {
    ASSERT_EQ(r[0].batch_offset, r[2].batch_offset);
    IndexRecord forged = r[0];
    forged.row = r[2].row;
    forged.label_length = r[2].label_length;
    forged.label_hash = r[2].label_hash;
    r[2] = forged;
  });
  EXPECT_TRUE(Has(Problems(), "sample 2")) << Problems();  // verify already caught this one
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out_);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  ASSERT_EQ(*(*ds)->ReadImage(0), sample0);
  for (bool labels : {false, true}) {
    Result<SampleBytes> s = (*ds)->ReadSample(2, labels);
    ASSERT_FALSE(s.ok()) << "sample 2 served sample 0's bytes (labels " << labels << ")";
    EXPECT_EQ(s.status().code(), StatusCode::kCorruption);
    EXPECT_TRUE(Has(s.status().ToString(), "is not the row's image")) << s.status().ToString();
  }
  // The whole record copied: the batch list says that row holds sample 0, not 2.
  EditIndex([](std::vector<IndexRecord>& r) { r[2] = r[0]; });
  Result<std::unique_ptr<Dataset>> again = Dataset::Open(out_);
  ASSERT_TRUE(again.ok());
  Result<SampleBytes> s = (*again)->ReadSample(2, false);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Has(s.status().ToString(), "is not this sample")) << s.status().ToString();
}

}  // namespace
}  // namespace docfeed::internal
