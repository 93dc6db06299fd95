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
#include <string>
#include <vector>

#include "base/env.h"
#include "codec/codec.h"
#include "docfeed/pack.h"
#include "docfeed/status.h"
#include "pack/image_folder.h"

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

// The image file of page sample `sample` (sample.page > 0) of the folder at `root`: a PDF page
// rendered and encoded as PNG; a page of a multi-page TIFF decoded, its Orientation tag applied
// (as Pillow applies it when it loads the page), and encoded as PNG; a single-page TIFF's bytes
// as they are.
// Errors: those of reading the file, PdfDocument::Open and RenderPage, ProbeImage and
// DecodeImage; Corruption when the document's page count is no longer what was listed. The
// caller names the sample.
Result<std::vector<uint8_t>> ReadDocumentPage(const std::string& root, const SourceSample& sample,
                                              Env* env, const DocumentOptions& options);

}  // namespace docfeed::internal

#endif  // DOCFEED_PACK_DOCUMENT_PAGES_H_
