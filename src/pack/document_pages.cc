#include "pack/document_pages.h"

#include <array>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <variant>

#include "base/check.h"
#include "base/file.h"

namespace docfeed::internal {
namespace {

// How errors name a listed file: its path, and the metadata.jsonl line that named it.
std::string WhereFile(const std::string& root, const SourceSample& s) {
  std::string where = JoinPath(root, s.relative_path);
  if (s.line > 0) where += " (metadata.jsonl line " + std::to_string(s.line) + ")";
  return where;
}

// The index of column `name`, or nullopt.
std::optional<size_t> ColumnIndex(const std::vector<ColumnSpec>& columns, const char* name) {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == name) return i;
  }
  return std::nullopt;
}

// "PDF" or "TIFF", as messages name a document.
std::string KindName(DocumentKind kind) { return kind == DocumentKind::kPdf ? "PDF" : "TIFF"; }

// True when `path` is a candidate document: its bytes are looked at while listing.
bool MayBeDocument(const std::string& path, const DocumentOptions& options) {
  return HasPdfExtension(path) || (options.split_tiffs() && HasTiffExtension(path));
}

struct PageColumns {
  size_t page = 0;
  size_t pages = 0;
};

// The columns of a folder with documents: `page` where metadata.jsonl had it (an integer column,
// the page a row names), else appended, then `pages` appended.
Result<PageColumns> AddPageColumns(ImageFolder* folder) {
  if (ColumnIndex(folder->columns, kPagesColumn)) {
    return InvalidArgumentError(
        std::string("metadata.jsonl has a column \"") + kPagesColumn +
        "\", which docfeed fills with each document's page count; rename it");
  }
  std::optional<size_t> page = ColumnIndex(folder->columns, kPageColumn);
  if (page && folder->columns[*page].type != ColumnType::kInt64) {
    return InvalidArgumentError(
        std::string("metadata.jsonl column \"") + kPageColumn +
        "\" must hold integers: the 1-based page of a document a row names");
  }
  if (!page) {
    page = folder->columns.size();
    folder->columns.push_back({kPageColumn, ColumnType::kInt64});
    for (SourceSample& s : folder->samples) {
      if (s.problem.ok()) s.values.emplace_back();
    }
  }
  folder->columns.push_back({kPagesColumn, ColumnType::kInt64});
  for (SourceSample& s : folder->samples) {
    if (s.problem.ok()) s.values.emplace_back();
  }
  return PageColumns{*page, folder->columns.size() - 1};
}

// A listed file's kind, and its page count when it is a document.
struct Document {
  DocumentKind kind = DocumentKind::kImage;
  int32_t pages = 0;
};

// Expands listed samples, in order, into page samples; remembers which row named each page.
class Expander {
 public:
  Expander(const ImageFolder& folder, Env* env, const DocumentOptions& options, PageColumns columns)
      : folder_(folder), env_(env), options_(options), columns_(columns) {}

  void Add(SourceSample s, std::vector<SourceSample>* out) {
    if (!s.problem.ok()) {
      out->push_back(std::move(s));
      return;
    }
    const Value& requested = s.values[columns_.page];
    const std::optional<int64_t> page = std::holds_alternative<int64_t>(requested)
                                            ? std::optional(std::get<int64_t>(requested))
                                            : std::nullopt;
    Result<Document> doc = Identify(s);
    if (!doc.ok()) {
      s.problem = doc.status().WithContext(WhereFile(folder_.root, s));
      out->push_back(std::move(s));
      return;
    }
    if (doc->kind == DocumentKind::kImage) {
      if (page) s.problem = PageOfAnImage(s, *page);
      out->push_back(std::move(s));
      return;
    }
    ++documents_[static_cast<size_t>(doc->kind)];
    AddPages(s, *doc, page, out);
  }

  uint64_t documents(DocumentKind kind) const { return documents_[static_cast<size_t>(kind)]; }

 private:
  // What the file of `s` is: a document (a *.pdf file whose bytes are a PDF, or with TIFFs split
  // a *.tif/*.tiff file whose bytes are a TIFF) with its page count, else an image (an image
  // named *.pdf included, left to the image decoders).
  Result<Document> Identify(const SourceSample& s) {
    if (!MayBeDocument(s.relative_path, options_)) return Document{};
    DOCFEED_ASSIGN_OR_RETURN(
        std::vector<uint8_t> bytes,
        env_->ReadFile(JoinPath(folder_.root, s.relative_path), options_.limits.max_input_bytes));
    if (HasPdfExtension(s.relative_path)) {
      if (!IsPdf(bytes)) return Document{};
      DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<PdfDocument> doc,
                               PdfDocument::Open(bytes, options_.limits));
      return Document{DocumentKind::kPdf, doc->page_count()};  // `doc` goes before `bytes`
    }
    if (SniffCodec(bytes) != ImageCodec::kTiff) return Document{};
    // Walks the IFD chain (Pillow's n_frames) and checks the first page's layout.
    DOCFEED_ASSIGN_OR_RETURN(ImageInfo info, ProbeImage(bytes));
    return Document{DocumentKind::kTiff, info.frames};
  }

  Status PageOfAnImage(const SourceSample& s, int64_t page) const {
    std::string message = WhereFile(folder_.root, s) + ": a page (" + std::to_string(page) +
                          ") is given, but the file is not a " +
                          (options_.split_tiffs() ? "PDF or TIFF document" : "PDF document");
    if (!options_.split_tiffs() && HasTiffExtension(s.relative_path)) {
      message += " (TIFF pages are samples only with --pages all or --pages 1)";
    }
    return InvalidArgumentError(message);
  }

  void AddPages(const SourceSample& s, const Document& doc, std::optional<int64_t> page,
                std::vector<SourceSample>* out) {
    int64_t first = 1;
    int64_t last = options_.first_page_only() ? 1 : doc.pages;
    if (page) {
      first = last = *page;
    }
    if (first < 1 || last > doc.pages) {
      SourceSample bad = s;
      bad.problem = InvalidArgumentError(WhereFile(folder_.root, s) + ": page " +
                                         std::to_string(*page) + " is not a page of this " +
                                         std::to_string(doc.pages) + "-page " + KindName(doc.kind));
      out->push_back(std::move(bad));
      return;
    }
    for (int64_t k = first; k <= last; ++k) {
      SourceSample p = s;
      p.document = doc.kind;
      p.page = static_cast<int32_t>(k);
      p.pages = doc.pages;
      p.values[columns_.page] = k;
      p.values[columns_.pages] = int64_t{doc.pages};
      auto [first_line, inserted] = named_.emplace(std::pair(s.relative_path, k), s.line);
      if (!inserted) {
        p.problem = InvalidArgumentError(
            WhereFile(folder_.root, s) + ": page " + std::to_string(k) +
            " is also named by metadata.jsonl line " + std::to_string(first_line->second));
      }
      out->push_back(std::move(p));
    }
  }

  const ImageFolder& folder_;
  Env* env_;
  const DocumentOptions& options_;
  PageColumns columns_;
  std::map<std::pair<std::string, int64_t>, int64_t> named_;
  std::array<uint64_t, 3> documents_{};  // per DocumentKind
};

// The document changed between listing and reading.
Status PageCountChanged(DocumentKind kind, int32_t now, int32_t listed) {
  return CorruptionError("the " + KindName(kind) + " now has " + std::to_string(now) +
                         " page(s), it had " + std::to_string(listed) + " when listed");
}

Result<std::vector<uint8_t>> RenderPdfPage(std::span<const uint8_t> bytes,
                                           const SourceSample& sample,
                                           const DocumentOptions& options) {
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<PdfDocument> doc,
                           PdfDocument::Open(bytes, options.limits));
  if (doc->page_count() != sample.pages) {
    return PageCountChanged(DocumentKind::kPdf, doc->page_count(), sample.pages);
  }
  DOCFEED_ASSIGN_OR_RETURN(Image page,
                           doc->RenderPage(sample.page - 1, options.dpi, options.limits));
  return EncodePng(page, options.png_level);
}

// A single-page TIFF is its page, so its bytes are kept (`--codec keep` keeps the file). One
// page of a multi-page TIFF cannot be cut out of the file without rewriting it, and a reader of
// the whole file (Pillow, `datasets`) would show its first page: the page's pixels are stored
// instead, upright, as a lossless PNG.
Result<std::vector<uint8_t>> TiffPage(std::vector<uint8_t> bytes, const SourceSample& sample,
                                      const DocumentOptions& options) {
  DOCFEED_ASSIGN_OR_RETURN(const ImageInfo file, ProbeImage(bytes));
  if (file.frames != sample.pages) {
    return PageCountChanged(DocumentKind::kTiff, file.frames, sample.pages);
  }
  if (sample.pages == 1) return bytes;
  const DecodeOptions frame{sample.page - 1};
  DOCFEED_ASSIGN_OR_RETURN(const ImageInfo info, ProbeImage(bytes, frame));
  DOCFEED_ASSIGN_OR_RETURN(Image page, DecodeImage(bytes, options.limits, frame));
  if (info.exif_orientation != 1) page = ApplyOrientation(page, info.exif_orientation);
  return EncodePng(page, options.png_level);
}

}  // namespace

Status ExpandDocumentPages(ImageFolder* folder, Env* env, const DocumentOptions& options) {
  env = EnvOrDefault(env);
  if (options.dpi < kMinPdfDpi || options.dpi > kMaxPdfDpi) {
    return InvalidArgumentError("--dpi " + std::to_string(options.dpi) + " is outside " +
                                std::to_string(kMinPdfDpi) + ".." + std::to_string(kMaxPdfDpi));
  }
  bool any_document = false;
  for (const SourceSample& s : folder->samples) {
    any_document = any_document || (s.problem.ok() && MayBeDocument(s.relative_path, options));
  }
  if (!any_document) return Status::Ok();
  DOCFEED_ASSIGN_OR_RETURN(PageColumns columns, AddPageColumns(folder));
  Expander expander(*folder, env, options, columns);
  std::vector<SourceSample> expanded;
  for (SourceSample& s : folder->samples) expander.Add(std::move(s), &expanded);
  folder->samples = std::move(expanded);
  const uint64_t pdfs = expander.documents(DocumentKind::kPdf);
  folder->pdf = {pdfs, 0, pdfs > 0 ? options.dpi : 0, options.first_page_only()};
  folder->tiff = {expander.documents(DocumentKind::kTiff), 0};
  for (const SourceSample& s : folder->samples) {
    folder->pdf.pages += s.document == DocumentKind::kPdf ? 1 : 0;
    folder->tiff.pages += s.document == DocumentKind::kTiff ? 1 : 0;
  }
  return Status::Ok();
}

PdfDocumentCache::PdfDocumentCache(const ImageFolder& folder) {
  MutexLock lock(&mu_);
  for (const SourceSample& s : folder.samples) {
    if (s.problem.ok() && s.page > 0 && s.document == DocumentKind::kPdf) {
      ++pages_left_[s.relative_path];
    }
  }
}

size_t PdfDocumentCache::open_documents() {
  MutexLock lock(&mu_);
  return open_.size();
}

std::shared_ptr<PdfDocumentCache::Entry> PdfDocumentCache::Acquire(const std::string& path,
                                                                   Open* closed) {
  MutexLock lock(&mu_);
  auto it = open_.begin();
  while (it != open_.end() && it->first != path) ++it;
  if (it == open_.end()) {
    open_.emplace_front(path, std::make_shared<Entry>());
  } else {
    open_.splice(open_.begin(), open_, it);
  }
  std::shared_ptr<Entry> entry = open_.front().second;
  // The last listed page of a document closes it after this page (the caller's reference keeps
  // it until then); a page that is never read (its label failed) leaves it to the count bound.
  auto left = pages_left_.find(path);
  if (left == pages_left_.end() || --left->second <= 0) {
    closed->splice(closed->end(), open_, open_.begin());
  }
  while (open_.size() > kMaxOpenPdfDocuments) {
    closed->splice(closed->end(), open_, std::prev(open_.end()));
  }
  return entry;
}

Result<std::vector<uint8_t>> PdfDocumentCache::ReadPage(std::vector<uint8_t> bytes,
                                                        const SourceSample& sample,
                                                        const DocumentOptions& options) {
  DOCFEED_CHECK(sample.document == DocumentKind::kPdf && sample.page > 0);
  Open closed;  // dropped after mu_ is released: closing a document waits for poppler's lock
  std::shared_ptr<Entry> entry = Acquire(sample.relative_path, &closed);
  closed.clear();
  Result<Image> page = InternalError("not rendered");
  {
    MutexLock lock(&entry->mu);
    if (entry->document == nullptr || entry->bytes != bytes) {
      entry->document.reset();  // it reads the bytes being replaced
      entry->bytes = std::move(bytes);
      Result<std::unique_ptr<PdfDocument>> doc = PdfDocument::Open(entry->bytes, options.limits);
      if (!doc.ok()) return doc.status();
      entry->document = std::move(doc).value();
    }
    PdfDocument& doc = *entry->document;
    if (doc.page_count() != sample.pages) {
      return PageCountChanged(DocumentKind::kPdf, doc.page_count(), sample.pages);
    }
    page = doc.RenderPage(sample.page - 1, options.dpi, options.limits);
  }
  if (!page.ok()) return page.status();
  return EncodePng(*page, options.png_level);  // outside the document's lock
}

Result<std::vector<uint8_t>> ReadDocumentPage(const std::string& root, const SourceSample& sample,
                                              Env* env, const DocumentOptions& options,
                                              PdfDocumentCache* pdfs) {
  DOCFEED_CHECK(sample.page > 0 && sample.document != DocumentKind::kImage);
  DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                           EnvOrDefault(env)->ReadFile(JoinPath(root, sample.relative_path),
                                                       options.limits.max_input_bytes));
  if (sample.document == DocumentKind::kTiff) return TiffPage(std::move(bytes), sample, options);
  if (pdfs != nullptr) return pdfs->ReadPage(std::move(bytes), sample, options);
  return RenderPdfPage(bytes, sample, options);
}

}  // namespace docfeed::internal
