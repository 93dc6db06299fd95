// PDF documents in an image folder: `docfeed pack` turns each one into one sample per page (or its
// first page only), rendered by src/pdf at a dpi and stored as a lossless PNG, with the columns
// `page` (1-based) and `pages` (the document's page count). The rules are in src/pack/README.md
// ("PDF documents") and docs/format.md.
#ifndef DOCFEED_PACK_PDF_PAGES_H_
#define DOCFEED_PACK_PDF_PAGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/env.h"
#include "codec/codec.h"
#include "docfeed/status.h"
#include "pack/image_folder.h"

namespace docfeed::internal {

inline constexpr char kPageColumn[] = "page";
inline constexpr char kPagesColumn[] = "pages";
inline constexpr int32_t kDefaultPdfDpi = 200;

struct PdfPackOptions {
  int32_t dpi = kDefaultPdfDpi;  // kMinPdfDpi..kMaxPdfDpi (pdf/pdf_document.h)
  bool first_page_only = false;  // pack --pages 1: a document's first page, unless a row names one
  int png_level = 6;             // zlib level of the stored page (Pillow's default)
  DecodeLimits limits;           // input bytes of a document, pixels of a rendered page
};

// Replaces each sample of `folder` whose file is a PDF by its page samples (SourceSample::page
// and ::pages set, values copied from the row), in file order then page order, and sets
// folder->pdf. Only when at least one listed file is named *.pdf: then the columns `page` and
// `pages` (int64) exist, holding null for images; a metadata.jsonl column `page` is the page a
// row names (an integer from 1, or null for every page) and a column `pages` is refused. A
// folder without such files is left exactly as it is.
// A document that cannot be read or opened (encrypted, corrupt), a row's page outside the
// document, a `page` on a row naming an image, and a page named twice become samples with a
// SourceSample::problem naming the file, page and metadata.jsonl line.
// Errors (the whole folder): a `page` column that is not integer, a `pages` column, an invalid dpi.
Status ExpandPdfSamples(ImageFolder* folder, Env* env, const PdfPackOptions& options);

// Sample `sample` (a page: page > 0) rendered and encoded as PNG.
// Errors: those of reading the file, PdfDocument::Open and RenderPage; the caller names the
// sample.
Result<std::vector<uint8_t>> RenderPdfPage(const std::string& root, const SourceSample& sample,
                                           Env* env, const PdfPackOptions& options);

}  // namespace docfeed::internal

#endif  // DOCFEED_PACK_PDF_PAGES_H_
