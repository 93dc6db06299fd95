// docfeed pack of an image folder holding PDF documents (src/pack/document_pages.h): one sample
// per page in file order then page order, the `page` / `pages` columns, metadata.jsonl rows
// naming a document or one page, --pages 1, and bad documents or pages named by file and page. The
// pixels of a stored page are checked against PdfDocument, whose output tests/pdf compares with
// pdftoppm; tests/python/test_pack_pdf.py compares packed pages with pdftoppm directly.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/file.h"
#include "codec/codec.h"
#include "format/dataset.h"
#include "pack/document_pages.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "pdf/pdf_document.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::TempDir;

std::string Fixture(const std::string& name) {
  return std::string(DOCFEED_TEST_DATA_DIR) + "/pdf/" + name;
}

class PdfPackTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(CreateDirectory(src_).ok()); }

  void Copy(const std::string& fixture, const std::string& as) {
    testing::WriteBytes(JoinPath(src_, as), *ReadFile(Fixture(fixture)));
  }
  void Metadata(const std::string& text) {
    ASSERT_TRUE(WriteTextFile(JoinPath(src_, "metadata.jsonl"), text).ok());
  }
  PackOptions Options() const {
    PackOptions o;
    o.source = src_;
    o.output = out_;
    o.threads = 2;
    o.documents.dpi = 40;  // small pages: these tests are about the listing, not the pixels
    return o;
  }
  std::unique_ptr<Dataset> Open() const {
    Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out_);
    DOCFEED_CHECK(ds.ok());
    return std::move(ds).value();
  }
  // The value of column `name` of sample `id` (null as -1 for int columns).
  static Value Column(const Dataset& ds, uint64_t id, const std::string& name) {
    const std::vector<ColumnSpec>& columns = ds.manifest().columns;
    std::vector<Value> values = *ds.ReadLabels(id);
    for (size_t i = 0; i < columns.size(); ++i) {
      if (columns[i].name == name) return values[i];
    }
    ADD_FAILURE() << "no column " << name;
    return {};
  }

  TempDir dir_;
  std::string src_ = dir_.Join("src");
  std::string out_ = dir_.Join("out");
};

TEST_F(PdfPackTest, EveryPageInFileThenPageOrderWithPageColumns) {
  ASSERT_TRUE(CreateDirectory(JoinPath(src_, "c")).ok());
  Copy("invoice.pdf", "b_invoice.pdf");
  Copy("handmade.pdf", "c/handmade.PDF");
  testing::WriteBytes(JoinPath(src_, "a.png"), *EncodePng(testing::Gradient(9, 7, 3, 1)));
  Result<PackSummary> summary = Pack(Options());
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 7u);
  EXPECT_EQ(summary->pdf_documents, 2u);
  EXPECT_EQ(summary->pdf_pages, 6u);
  EXPECT_EQ(summary->pdf_dpi, 40);
  EXPECT_EQ(summary->stored_codecs.at("png"), 7u);
  std::unique_ptr<Dataset> ds = Open();
  const std::vector<std::pair<int64_t, int64_t>> expected = {{0, 0}, {1, 3}, {2, 3}, {3, 3},
                                                             {1, 3}, {2, 3}, {3, 3}};
  ASSERT_EQ(ds->size(), expected.size());
  for (uint64_t i = 0; i < ds->size(); ++i) {
    const Value page = Column(*ds, i, "page");
    const Value pages = Column(*ds, i, "pages");
    if (expected[i].first == 0) {
      EXPECT_TRUE(std::holds_alternative<std::monostate>(page)) << i;
      EXPECT_TRUE(std::holds_alternative<std::monostate>(pages)) << i;
    } else {
      EXPECT_EQ(std::get<int64_t>(page), expected[i].first) << i;
      EXPECT_EQ(std::get<int64_t>(pages), expected[i].second) << i;
    }
  }
  EXPECT_EQ(ds->manifest().pdf.dpi, 40);
  EXPECT_FALSE(ds->manifest().pdf.first_page_only);
  EXPECT_EQ(ds->manifest().pdf.renderer.rfind("poppler ", 0), 0u);
  // Sample 2 is b_invoice.pdf page 2: the stored PNG holds exactly the rendered page.
  const std::vector<uint8_t> pdf = *ReadFile(Fixture("invoice.pdf"));
  std::unique_ptr<PdfDocument> doc = PdfDocument::Open(pdf).value();
  Result<Image> stored = DecodeImage(*ds->ReadImage(2));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->pixels, doc->RenderPage(1, 40)->pixels);
  EXPECT_EQ(ds->record(2).width, static_cast<uint32_t>(stored->width));
}

TEST_F(PdfPackTest, FirstPageOnly) {
  Copy("invoice.pdf", "invoice.pdf");
  Copy("handmade.pdf", "handmade.pdf");
  PackOptions o = Options();
  o.documents.pages = PackPages::kFirst;
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 2u);
  std::unique_ptr<Dataset> ds = Open();
  EXPECT_TRUE(ds->manifest().pdf.first_page_only);
  for (uint64_t i = 0; i < 2; ++i) {
    EXPECT_EQ(std::get<int64_t>(Column(*ds, i, "page")), 1);
    EXPECT_EQ(std::get<int64_t>(Column(*ds, i, "pages")), 3);
  }
}

TEST_F(PdfPackTest, MetadataRowsNameADocumentOrOnePage) {
  Copy("invoice.pdf", "invoice.pdf");
  Copy("handmade.pdf", "handmade.pdf");
  testing::WriteBytes(JoinPath(src_, "a.png"), *EncodePng(testing::Gradient(9, 7, 3, 1)));
  Metadata(R"({"file_name": "handmade.pdf", "page": 3, "ground_truth": "third"})"
           "\n"
           R"({"file_name": "a.png", "ground_truth": "image"})"
           "\n"
           R"({"file_name": "invoice.pdf", "ground_truth": "all"})"
           "\n"
           R"({"file_name": "handmade.pdf", "page": 1, "ground_truth": "first"})"
           "\n");
  Result<PackSummary> summary = Pack(Options());
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  std::unique_ptr<Dataset> ds = Open();
  const std::vector<std::pair<std::string, int64_t>> expected = {
      {"third", 3}, {"image", 0}, {"all", 1}, {"all", 2}, {"all", 3}, {"first", 1}};
  ASSERT_EQ(ds->size(), expected.size());
  // metadata's own column `page` keeps its place; `pages` follows the other columns.
  EXPECT_EQ(ds->manifest().columns[0].name, "page");
  EXPECT_EQ(ds->manifest().columns.back().name, "pages");
  for (uint64_t i = 0; i < ds->size(); ++i) {
    EXPECT_EQ(std::get<std::string>(Column(*ds, i, "ground_truth")), expected[i].first) << i;
    const Value page = Column(*ds, i, "page");
    if (expected[i].second == 0) {
      EXPECT_TRUE(std::holds_alternative<std::monostate>(page)) << i;
    } else {
      EXPECT_EQ(std::get<int64_t>(page), expected[i].second) << i;
    }
  }
}

TEST_F(PdfPackTest, BadRowsAreNamedAndRejected) {
  Copy("invoice.pdf", "invoice.pdf");
  testing::WriteBytes(JoinPath(src_, "a.png"), *EncodePng(testing::Gradient(9, 7, 3, 1)));
  Metadata(R"({"file_name": "invoice.pdf"})"
           "\n"
           R"({"file_name": "invoice.pdf", "page": 2})"
           "\n"
           R"({"file_name": "invoice.pdf", "page": 9})"
           "\n"
           R"({"file_name": "a.png", "page": 1})"
           "\n");
  Result<PackSummary> failed = Pack(Options());
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(
      failed.status().ToString().find(
          "invoice.pdf (metadata.jsonl line 2): page 2 is also named by metadata.jsonl line 1"),
      std::string::npos)
      << failed.status().ToString();
  PackOptions o = Options();
  o.skip_bad = true;
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 3u);
  EXPECT_EQ(summary->rejected, 3u);
  const std::string rejects = *ReadTextFile(JoinPath(out_, kRejectsFileName));
  EXPECT_NE(rejects.find(R"("file_name":"invoice.pdf","metadata_line":2,"page":2)"),
            std::string::npos)
      << rejects;
  EXPECT_NE(rejects.find("page 9 is not a page of this 3-page PDF"), std::string::npos) << rejects;
  EXPECT_NE(rejects.find("a page (1) is given, but the file is not a PDF document"),
            std::string::npos)
      << rejects;
}

TEST_F(PdfPackTest, BrokenDocumentsAndPagesNameFileAndPage) {
  Copy("damaged_page.pdf", "damaged.pdf");
  Copy("encrypted.pdf", "locked.pdf");
  Copy("truncated.pdf", "truncated.pdf");
  Result<PackSummary> failed = Pack(Options());
  ASSERT_FALSE(failed.ok());
  // The listing problems come first: the encrypted document stops the pack before rendering.
  EXPECT_NE(failed.status().ToString().find("locked.pdf: PDF is encrypted"), std::string::npos)
      << failed.status().ToString();
  PackOptions o = Options();
  o.skip_bad = true;
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 2u);  // damaged.pdf pages 1 and 3
  EXPECT_EQ(summary->rejected, 3u);
  const std::string rejects = *ReadTextFile(JoinPath(out_, kRejectsFileName));
  EXPECT_NE(rejects.find(R"({"file_name":"damaged.pdf","page":2,"error":"Corruption: )"),
            std::string::npos)
      << rejects;
  EXPECT_NE(rejects.find("damaged.pdf page 2 of 3: page 2 is damaged (poppler: "),
            std::string::npos)
      << rejects;
  EXPECT_NE(rejects.find(R"({"file_name":"locked.pdf","error":"Unsupported: )"), std::string::npos)
      << rejects;
  EXPECT_NE(rejects.find("password"), std::string::npos) << rejects;
  EXPECT_NE(rejects.find(R"({"file_name":"truncated.pdf","error":"Corruption: )"),
            std::string::npos)
      << rejects;
  // Without --skip-bad, only the damaged page's render fails: the error names file and page.
  ASSERT_TRUE(RemoveAll(JoinPath(src_, "locked.pdf")).ok());
  ASSERT_TRUE(RemoveAll(JoinPath(src_, "truncated.pdf")).ok());
  PackOptions again = Options();
  again.overwrite = true;
  Result<PackSummary> page_failed = Pack(again);
  ASSERT_FALSE(page_failed.ok());
  EXPECT_EQ(page_failed.status().code(), StatusCode::kCorruption);
  EXPECT_NE(page_failed.status().ToString().find("damaged.pdf page 2 of 3: page 2 is damaged"),
            std::string::npos)
      << page_failed.status().ToString();
}

TEST_F(PdfPackTest, ContentDecidesWhatAFileIs) {
  // A PNG named *.pdf is an image; a folder with no PDF keeps its own `page` column.
  testing::WriteBytes(JoinPath(src_, "scan.pdf"), *EncodePng(testing::Gradient(5, 4, 3, 2)));
  Result<PackSummary> summary = Pack(Options());
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 1u);
  EXPECT_EQ(summary->pdf_documents, 0u);
  std::unique_ptr<Dataset> ds = Open();
  EXPECT_TRUE(std::holds_alternative<std::monostate>(Column(*ds, 0, "page")));
  EXPECT_FALSE(ds->manifest().pdf.rendered());
}

TEST_F(PdfPackTest, FoldersWithoutPdfsAreUnchanged) {
  testing::MakeSmallFolder(src_ + "2");
  PackOptions o = Options();
  o.source = src_ + "2";
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  std::unique_ptr<Dataset> ds = Open();
  for (const ColumnSpec& c : ds->manifest().columns) {
    EXPECT_NE(c.name, "page");
    EXPECT_NE(c.name, "pages");
  }
  EXPECT_FALSE(ds->manifest().pdf.rendered());
}

TEST_F(PdfPackTest, ReservedAndMistypedColumnsAndBadDpi) {
  Copy("invoice.pdf", "invoice.pdf");
  Metadata(R"({"file_name": "invoice.pdf", "pages": 3})"
           "\n");
  Result<PackSummary> reserved = Pack(Options());
  ASSERT_FALSE(reserved.ok());
  EXPECT_NE(reserved.status().ToString().find("column \"pages\""), std::string::npos);
  Metadata(R"({"file_name": "invoice.pdf", "page": "2"})"
           "\n");
  Result<PackSummary> mistyped = Pack(Options());
  ASSERT_FALSE(mistyped.ok());
  EXPECT_NE(mistyped.status().ToString().find("must hold integers"), std::string::npos);
  Metadata(R"({"file_name": "invoice.pdf"})"
           "\n");
  PackOptions o = Options();
  o.documents.dpi = 0;
  EXPECT_EQ(Pack(o).status().code(), StatusCode::kInvalidArgument);
}

// Page `page` (1-based) of fixture `name` rendered at `dpi` by a document opened for it alone.
std::vector<uint8_t> FreshPage(const std::string& name, int32_t page, int32_t dpi) {
  const std::vector<uint8_t> pdf = *ReadFile(Fixture(name));
  std::unique_ptr<PdfDocument> doc = PdfDocument::Open(pdf).value();
  return doc->RenderPage(page - 1, dpi)->pixels;
}

// Pages of several documents packed by four workers, which share the open documents, are what
// one worker packs and what a document opened for each page renders.
TEST_F(PdfPackTest, ManyPagesOnSeveralThreadsEqualOneThreadAndFreshDocuments) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"a.pdf", "invoice.pdf"}, {"b.pdf", "handmade.pdf"}, {"c.pdf", "bleed.pdf"},
      {"d.pdf", "invoice.pdf"}, {"e.pdf", "handmade.pdf"}, {"f.pdf", "invoice.pdf"}};
  for (const auto& [as, fixture] : files) Copy(fixture, as);
  PackOptions four = Options();
  four.threads = 4;
  ASSERT_TRUE(Pack(four).ok());
  std::unique_ptr<Dataset> ds = Open();
  PackOptions one = Options();
  one.threads = 1;
  one.output = dir_.Join("out1");
  ASSERT_TRUE(Pack(one).ok());
  std::unique_ptr<Dataset> ds1 = Dataset::Open(one.output).value();
  ASSERT_EQ(ds->size(), 17u);
  ASSERT_EQ(ds1->size(), ds->size());
  uint64_t id = 0;
  for (const auto& [as, fixture] : files) {
    const int64_t pages = std::get<int64_t>(Column(*ds, id, "pages"));
    for (int32_t page = 1; page <= pages; ++page, ++id) {
      SCOPED_TRACE(as + " page " + std::to_string(page));
      EXPECT_EQ(*ds->ReadImage(id), *ds1->ReadImage(id));
      Result<Image> stored = DecodeImage(*ds->ReadImage(id));
      ASSERT_TRUE(stored.ok());
      EXPECT_TRUE(stored->pixels == FreshPage(fixture, page, 40));
    }
  }
}

// A document that changes on disk while its pages are read is read again: a different page count
// is an error naming both counts, and other bytes with the same count give the new pages.
TEST_F(PdfPackTest, ADocumentReplacedWhilePackingIsDetected) {
  Copy("invoice.pdf", "a.pdf");  // 3 pages
  DocumentOptions documents;
  documents.dpi = 40;
  Result<std::unique_ptr<SampleSource>> source =
      OpenImageFolderSource(src_, nullptr, false, documents);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  ASSERT_EQ((*source)->listing().samples.size(), 3u);
  ASSERT_TRUE((*source)->ReadImage(0).ok());
  Copy("owner_only.pdf", "a.pdf");  // 1 page
  Result<std::vector<uint8_t>> fewer = (*source)->ReadImage(1);
  ASSERT_FALSE(fewer.ok());
  EXPECT_EQ(fewer.status().code(), StatusCode::kCorruption);
  EXPECT_NE(fewer.status().ToString().find("now has 1 page(s), it had 3 when listed"),
            std::string::npos)
      << fewer.status().ToString();
  Copy("handmade.pdf", "a.pdf");  // 3 pages again, other content
  Result<std::vector<uint8_t>> replaced = (*source)->ReadImage(2);
  ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
  EXPECT_TRUE(DecodeImage(*replaced)->pixels == FreshPage("handmade.pdf", 3, 40));
}

// A document closes after its last listed page; at most kMaxOpenPdfDocuments stay open.
TEST_F(PdfPackTest, OpenDocumentsAreBounded) {
  const size_t kDocuments = PdfDocumentCache::kMaxOpenPdfDocuments + 2;
  for (size_t i = 0; i < kDocuments; ++i) Copy("invoice.pdf", "d" + std::to_string(i) + ".pdf");
  DocumentOptions documents;
  documents.dpi = 20;
  std::unique_ptr<SampleSource> source =
      OpenImageFolderSource(src_, nullptr, false, documents).value();
  const ImageFolder& folder = source->listing();
  ASSERT_EQ(folder.samples.size(), 3 * kDocuments);
  PdfDocumentCache cache(folder);
  auto read = [&](size_t i) {
    Result<std::vector<uint8_t>> png =
        ReadDocumentPage(src_, folder.samples[i], nullptr, documents, &cache);
    ASSERT_TRUE(png.ok()) << png.status().ToString();
  };
  read(0);
  read(1);
  EXPECT_EQ(cache.open_documents(), 1u);
  read(2);  // d0.pdf's last page
  EXPECT_EQ(cache.open_documents(), 0u);
  for (size_t d = 1; d < kDocuments; ++d) read(3 * d);  // the first page of each other one
  EXPECT_EQ(cache.open_documents(), PdfDocumentCache::kMaxOpenPdfDocuments);
  for (size_t d = 1; d < kDocuments; ++d) {
    read(3 * d + 1);
    read(3 * d + 2);
  }
  EXPECT_EQ(cache.open_documents(), 0u);
}

}  // namespace
}  // namespace docfeed::internal
