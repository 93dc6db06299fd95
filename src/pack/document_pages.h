// Multi-page documents in an image folder: `docfeed pack` turns each PDF, and with `--pages all`
// or `--pages 1` each TIFF, into one sample per page (or its first page only), with the columns
// `page` (1-based) and `pages` (the document's page count). A PDF page is rendered by src/pdf at
// a dpi and stored as a lossless PNG; a page of a multi-page TIFF is decoded (Pillow's pixels,
// its Orientation applied) and stored as a lossless PNG, while a single-page TIFF, which already
// is its page, is kept as it is. The rules are in src/pack/README.md ("Documents") and
// docs/format.md section 13.
#ifndef DOCFEED_PACK_DOCUMENT_PAGES_H_
#define DOCFEED_PACK_DOCUMENT_PAGES_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/env.h"
#include "base/mutex.h"
#include "codec/codec.h"
#include "docfeed/pack.h"
#include "docfeed/status.h"
#include "pack/image_folder.h"
#include "pdf/pdf_document.h"

namespace docfeed::internal {

inline constexpr char kPageColumn[] = "page";
inline constexpr char kPagesColumn[] = "pages";
inline constexpr int32_t kDefaultPdfDpi = 200;

using docfeed::PackPages;

struct DocumentOptions {
  int32_t dpi = kDefaultPdfDpi;        // PDF pages: kMinPdfDpi..kMaxPdfDpi (pdf/pdf_document.h)
  PackPages pages = PackPages::kAuto;  // pack --pages
  int png_level = 6;                   // zlib level of a stored page (Pillow's default)
  DecodeLimits limits;                 // input bytes of a document, pixels of a page

  // TIFF files are split into pages (kAll, kFirst), not stored as images (kAuto).
  bool split_tiffs() const { return pages != PackPages::kAuto; }
  // A document gives its first page only, unless a metadata.jsonl row names another.
  bool first_page_only() const { return pages == PackPages::kFirst; }
};

// Replaces each sample of `folder` whose file is a document (a *.pdf file whose bytes are a PDF;
// with options.split_tiffs() also a *.tif/*.tiff file whose bytes are a TIFF) by its page
// samples (SourceSample::document, ::page and ::pages set, values copied from the row), in file
// order then page order, and fills folder->pdf and folder->tiff. Only when at least one listed
// file has such a name: then the columns `page` and `pages` (int64) exist, holding null for
// images; a metadata.jsonl column `page` is the page a row names (an integer from 1, or null for
// every page) and a column `pages` is refused. A folder without such files is left exactly as it
// is (its own `page` column, if any, stays an ordinary column).
// A document that cannot be read or opened (an encrypted or corrupt PDF, a TIFF whose headers
// ProbeImage refuses), a row's page outside the document, a `page` on a row naming an image, and
// a page named twice become samples with a SourceSample::problem naming the file, page and
// metadata.jsonl line.
// Errors (the whole folder): a `page` column that is not integer, a `pages` column, an invalid dpi.
Status ExpandDocumentPages(ImageFolder* folder, Env* env, const DocumentOptions& options);

// The open PDF documents of an image folder being packed, shared by the encode workers so that
// the pages of a document are rendered from one PdfDocument, whose rendering device keeps the
// fonts and glyphs rasterized for one page for the next (src/pdf/README.md), instead of from a
// document opened again for each page.
// Bounded: a document leaves as soon as the last of its listed pages has been read, and at most
// kMaxOpenPdfDocuments stay open (the least recently used goes first), each holding its file's
// bytes (at most DecodeLimits::max_input_bytes) and one rendered page's bitmap.
// A page is rendered only from the bytes its caller has just read: when they differ from the
// open document's (the file changed on disk), the document is opened again from them, and the
// page count is checked against the listing as for every page.
// Thread safety: all methods may be called concurrently. Pages of one document take turns (a
// mutex per document); rendering is serialized process-wide anyway (pdf_document.h), so only the
// reads and the PNG encodes overlap.
class PdfDocumentCache {
 public:
  static constexpr size_t kMaxOpenPdfDocuments = 4;

  // `folder`'s PDF page samples say how many pages of each document will be read.
  explicit PdfDocumentCache(const ImageFolder& folder);
  PdfDocumentCache(const PdfDocumentCache&) = delete;
  PdfDocumentCache& operator=(const PdfDocumentCache&) = delete;

  // Page `sample` of the PDF whose bytes are `bytes` (its file, just read), rendered at
  // options.dpi and encoded as PNG.
  // Errors: those of PdfDocument::Open and RenderPage; Corruption when the document's page count
  // is no longer what was listed.
  // REQUIRES: sample.document == DocumentKind::kPdf, sample.page > 0.
  Result<std::vector<uint8_t>> ReadPage(std::vector<uint8_t> bytes, const SourceSample& sample,
                                        const DocumentOptions& options) DOCFEED_EXCLUDES(mu_);

  // Documents open now (for tests).
  size_t open_documents() DOCFEED_EXCLUDES(mu_);

 private:
  struct Entry {
    Mutex mu;
    std::vector<uint8_t> bytes DOCFEED_GUARDED_BY(mu);
    std::unique_ptr<PdfDocument> document DOCFEED_GUARDED_BY(mu);  // reads `bytes`
  };
  using Open = std::list<std::pair<std::string, std::shared_ptr<Entry>>>;

  // The entry of `path` (made when none is open), counted as one of its pages read; the entries
  // that no longer stay are moved to `closed`, for the caller to drop after the lock.
  std::shared_ptr<Entry> Acquire(const std::string& path, Open* closed) DOCFEED_EXCLUDES(mu_);

  Mutex mu_;
  std::map<std::string, int64_t> pages_left_ DOCFEED_GUARDED_BY(mu_);  // listed, not yet read
  Open open_ DOCFEED_GUARDED_BY(mu_);                                  // most recently used first
};

// The image file of page sample `sample` (sample.page > 0) of the folder at `root`: a PDF page
// rendered and encoded as PNG (through `pdfs` when given, else from a document opened for it);
// a page of a multi-page TIFF decoded, its Orientation tag applied (as Pillow applies it when it
// loads the page), and encoded as PNG; a single-page TIFF's bytes as they are.
// Errors: those of reading the file, PdfDocument::Open and RenderPage, ProbeImage and
// DecodeImage; Corruption when the document's page count is no longer what was listed. The
// caller names the sample.
Result<std::vector<uint8_t>> ReadDocumentPage(const std::string& root, const SourceSample& sample,
                                              Env* env, const DocumentOptions& options,
                                              PdfDocumentCache* pdfs = nullptr);

}  // namespace docfeed::internal

#endif  // DOCFEED_PACK_DOCUMENT_PAGES_H_
