// docfeed pack of an image folder holding multi-page TIFFs (src/pack/document_pages.h): by
// default (PackPages::kAuto) a TIFF is one image stored as it is; with kAll every page is a
// sample and with kFirst its first page, with the `page` / `pages` columns. A page of a
// multi-page TIFF is stored as a PNG whose pixels are checked against Pillow's, recorded in
// tests/data/tiff/expected.json by make_tiff_cases.py; a one-page TIFF keeps its bytes. Rows
// naming pages, and bad files and pages named by file and page, follow the PDF rules.
// tests/python/test_pack_tiff_pages.py checks the same against Pillow and `datasets` directly.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/file.h"
#include "base/hash.h"
#include "codec/codec.h"
#include "format/dataset.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::TempDir;

std::string Case(const std::string& name) {
  return std::string(DOCFEED_TEST_DATA_DIR) + "/tiff/cases/" + name;
}

// Pillow's XXH3-64 of page `page` (0-based) of case `file`, after its orientation
// (tests/data/tiff/expected.json).
std::string PillowPageHash(const std::string& file, size_t page) {
  const nlohmann::json expected = nlohmann::json::parse(
      *ReadTextFile(std::string(DOCFEED_TEST_DATA_DIR) + "/tiff/expected.json"));
  for (const nlohmann::json& entry : expected["cases"]) {
    if (entry["file"] == file) return entry["pages"].at(page)["xxh3"].get<std::string>();
  }
  ADD_FAILURE() << "no expected.json entry for " << file;
  return "";
}

std::string HexHash(const std::vector<uint8_t>& pixels) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(Hash64(pixels)));  // NOLINT(google-runtime-int)
  return buf;
}

class TiffPagesTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(CreateDirectory(src_).ok()); }

  void Copy(const std::string& fixture, const std::string& as) {
    testing::WriteBytes(JoinPath(src_, as), *ReadFile(Case(fixture)));
  }
  void Metadata(const std::string& text) {
    ASSERT_TRUE(WriteTextFile(JoinPath(src_, "metadata.jsonl"), text).ok());
  }
  PackOptions Options(PackPages pages) const {
    PackOptions o;
    o.source = src_;
    o.output = out_;
    o.threads = 2;
    o.overwrite = true;
    o.documents.pages = pages;
    return o;
  }
  std::unique_ptr<Dataset> Open() const {
    Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out_);
    DOCFEED_CHECK(ds.ok());
    return std::move(ds).value();
  }
  // The (page, pages) values of every sample; 0 for null.
  static std::vector<std::pair<int64_t, int64_t>> PageValues(const Dataset& ds) {
    const std::vector<ColumnSpec>& columns = ds.manifest().columns;
    std::vector<std::pair<int64_t, int64_t>> out;
    for (uint64_t id = 0; id < ds.size(); ++id) {
      std::vector<Value> values = *ds.ReadLabels(id);
      std::pair<int64_t, int64_t> p;
      for (size_t i = 0; i < columns.size(); ++i) {
        const int64_t* v = std::get_if<int64_t>(&values[i]);
        if (columns[i].name == "page") p.first = v ? *v : 0;
        if (columns[i].name == "pages") p.second = v ? *v : 0;
      }
      out.push_back(p);
    }
    return out;
  }

  TempDir dir_;
  std::string src_ = dir_.Join("src");
  std::string out_ = dir_.Join("out");
};

using Pages = std::vector<std::pair<int64_t, int64_t>>;

TEST_F(TiffPagesTest, AutoKeepsATiffAsOneImage) {
  Copy("multipage_tiffcp.tif", "scan.tif");
  Result<PackSummary> summary = Pack(Options(PackPages::kAuto));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 1u);
  EXPECT_EQ(summary->tiff_documents, 0u);
  std::unique_ptr<Dataset> ds = Open();
  EXPECT_TRUE(ds->manifest().columns.empty());  // no page / pages columns
  EXPECT_EQ(*ds->ReadImage(0), *ReadFile(Case("multipage_tiffcp.tif")));
}

TEST_F(TiffPagesTest, AllGivesEveryPageAsPillowDecodesIt) {
  Copy("multipage_tiffcp.tif", "a.tif");  // pages "1", "L", "RGB"
  Copy("multipage_lzw.tif", "b.TIFF");    // RGB, L, then a page of another size
  Copy("orientation6_lzw.tif", "c.tif");  // one page: kept as it is
  testing::WriteBytes(JoinPath(src_, "d.png"), *EncodePng(testing::Gradient(9, 7, 3, 1)));
  Result<PackSummary> summary = Pack(Options(PackPages::kAll));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 8u);
  EXPECT_EQ(summary->tiff_documents, 3u);
  EXPECT_EQ(summary->tiff_pages, 7u);
  EXPECT_EQ(summary->pdf_documents, 0u);
  EXPECT_EQ(summary->pdf_dpi, 0);
  EXPECT_EQ(summary->stored_codecs.at("png"), 7u);  // six pages and d.png
  EXPECT_EQ(summary->stored_codecs.at("tiff"), 1u);
  std::unique_ptr<Dataset> ds = Open();
  EXPECT_FALSE(ds->manifest().pdf.rendered());
  EXPECT_EQ(PageValues(*ds),
            (Pages{{1, 3}, {2, 3}, {3, 3}, {1, 3}, {2, 3}, {3, 3}, {1, 1}, {0, 0}}));
  for (uint64_t id = 0; id < 6; ++id) {
    const std::string file = id < 3 ? "multipage_tiffcp.tif" : "multipage_lzw.tif";
    SCOPED_TRACE(file + " page " + std::to_string(id % 3));
    const std::vector<uint8_t> stored = *ds->ReadImage(id);
    ASSERT_EQ(SniffCodec(stored), ImageCodec::kPng);
    Result<Image> page = DecodeImage(stored);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    EXPECT_EQ(HexHash(page->pixels), PillowPageHash(file, id % 3));
    EXPECT_EQ(ds->record(id).width, static_cast<uint32_t>(page->width));
  }
  // Its Orientation tag travels with it: Pillow and the loader turn it when they load it.
  EXPECT_EQ(*ds->ReadImage(6), *ReadFile(Case("orientation6_lzw.tif")));
}

TEST_F(TiffPagesTest, FirstPageOnlyAndRowsNamingPages) {
  Copy("multipage_tiffcp.tif", "a.tif");
  Copy("multipage_lzw.tif", "b.tif");
  Metadata(R"({"file_name": "a.tif", "ground_truth": "first of a"})"
           "\n"
           R"({"file_name": "b.tif", "page": 3, "ground_truth": "third of b"})"
           "\n"
           R"({"file_name": "b.tif", "page": 2, "ground_truth": "second of b"})"
           "\n");
  Result<PackSummary> summary = Pack(Options(PackPages::kFirst));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  std::unique_ptr<Dataset> ds = Open();
  EXPECT_EQ(PageValues(*ds), (Pages{{1, 3}, {3, 3}, {2, 3}}));
  Result<Image> third = DecodeImage(*ds->ReadImage(1));
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(HexHash(third->pixels), PillowPageHash("multipage_lzw.tif", 2));
  // The same rows under kAll: a's row names every page.
  ASSERT_TRUE(Pack(Options(PackPages::kAll)).ok());
  EXPECT_EQ(PageValues(*Open()), (Pages{{1, 3}, {2, 3}, {3, 3}, {3, 3}, {2, 3}}));
}

TEST_F(TiffPagesTest, BadRowsAreNamedAndRejected) {
  Copy("multipage_lzw.tif", "b.tif");
  testing::WriteBytes(JoinPath(src_, "p.png"), *EncodePng(testing::Gradient(9, 7, 3, 1)));
  Metadata(R"({"file_name": "b.tif"})"
           "\n"
           R"({"file_name": "b.tif", "page": 2})"
           "\n"
           R"({"file_name": "b.tif", "page": 4})"
           "\n"
           R"({"file_name": "p.png", "page": 1})"
           "\n");
  PackOptions o = Options(PackPages::kAll);
  Result<PackSummary> failed = Pack(o);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().ToString().find(
                "b.tif (metadata.jsonl line 2): page 2 is also named by metadata.jsonl line 1"),
            std::string::npos)
      << failed.status().ToString();
  o.skip_bad = true;
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 3u);
  EXPECT_EQ(summary->rejected, 3u);
  const std::string rejects = *ReadTextFile(JoinPath(out_, kRejectsFileName));
  EXPECT_NE(rejects.find(R"("file_name":"b.tif","metadata_line":2,"page":2)"), std::string::npos)
      << rejects;
  EXPECT_NE(rejects.find("page 4 is not a page of this 3-page TIFF"), std::string::npos) << rejects;
  EXPECT_NE(rejects.find("a page (1) is given, but the file is not a PDF or TIFF document"),
            std::string::npos)
      << rejects;
}

TEST_F(TiffPagesTest, AutoSaysHowToPackATiffPage) {
  // With a PDF in the folder, `page` is the page column; a row naming a TIFF page under auto
  // is refused with what to do instead of packing the first page under the wrong number.
  testing::WriteBytes(JoinPath(src_, "doc.pdf"),
                      *ReadFile(std::string(DOCFEED_TEST_DATA_DIR) + "/pdf/invoice.pdf"));
  Copy("multipage_lzw.tif", "b.tif");
  Metadata(R"({"file_name": "doc.pdf", "page": 1})"
           "\n"
           R"({"file_name": "b.tif", "page": 2})"
           "\n");
  PackOptions o = Options(PackPages::kAuto);
  o.documents.dpi = 20;
  Result<PackSummary> failed = Pack(o);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().ToString().find(
                "b.tif (metadata.jsonl line 2): a page (2) is given, but the file is not a PDF "
                "document (TIFF pages are samples only with --pages all or --pages 1)"),
            std::string::npos)
      << failed.status().ToString();
  o.documents.pages = PackPages::kAll;
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->pdf_documents, 1u);
  EXPECT_EQ(summary->tiff_documents, 1u);
  EXPECT_EQ(PageValues(*Open()), (Pages{{1, 3}, {2, 3}}));
}

TEST_F(TiffPagesTest, ContentDecidesAndBrokenFilesAreNamed) {
  // A PNG named *.tif is an image; a TIFF that is not a *.tif file is never split; a file whose
  // header is not a readable TIFF is one reject without a page.
  testing::WriteBytes(JoinPath(src_, "png.tif"), *EncodePng(testing::Gradient(5, 4, 3, 2)));
  Copy("multipage_lzw.tif", "tiff.png");
  std::vector<uint8_t> broken = *ReadFile(Case("multipage_lzw.tif"));
  broken.resize(12);
  testing::WriteBytes(JoinPath(src_, "z_broken.tif"), broken);
  PackOptions o = Options(PackPages::kAll);
  Result<PackSummary> failed = Pack(o);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().ToString().find("z_broken.tif"), std::string::npos)
      << failed.status().ToString();
  o.skip_bad = true;
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 2u);
  EXPECT_EQ(summary->rejected, 1u);
  EXPECT_EQ(summary->tiff_documents, 0u);
  std::unique_ptr<Dataset> ds = Open();
  EXPECT_EQ(PageValues(*ds), (Pages{{0, 0}, {0, 0}}));
  EXPECT_EQ(*ds->ReadImage(1), *ReadFile(Case("multipage_lzw.tif")));
  const std::string rejects = *ReadTextFile(JoinPath(out_, kRejectsFileName));
  EXPECT_EQ(rejects.rfind(R"({"file_name":"z_broken.tif","error":"Corruption: )", 0), 0u)
      << rejects;
}

}  // namespace
}  // namespace docfeed::internal
