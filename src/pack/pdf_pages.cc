#include "pack/pdf_pages.h"

#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <variant>

#include "base/check.h"
#include "base/file.h"
#include "pdf/pdf_document.h"

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

struct PageColumns {
  size_t page = 0;
  size_t pages = 0;
};

// The columns of a folder with PDFs: `page` where metadata.jsonl had it (an integer column, the
// page a row names), else appended, then `pages` appended.
Result<PageColumns> AddPageColumns(ImageFolder* folder) {
  if (ColumnIndex(folder->columns, kPagesColumn)) {
    return InvalidArgumentError(std::string("metadata.jsonl has a column \"") + kPagesColumn +
                                "\", which docfeed fills with each PDF's page count; rename it");
  }
  std::optional<size_t> page = ColumnIndex(folder->columns, kPageColumn);
  if (page && folder->columns[*page].type != ColumnType::kInt64) {
    return InvalidArgumentError(std::string("metadata.jsonl column \"") + kPageColumn +
                                "\" must hold integers: the 1-based page of a PDF a row names");
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

// Expands listed samples, in order, into page samples; remembers which row named each page.
class Expander {
 public:
  Expander(const ImageFolder& folder, Env* env, const PdfPackOptions& options, PageColumns columns)
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
    Result<std::optional<int32_t>> pages = PageCountIfPdf(s);
    if (!pages.ok()) {
      s.problem = pages.status().WithContext(WhereFile(folder_.root, s));
      out->push_back(std::move(s));
      return;
    }
    if (!*pages) {  // an image
      if (page) {
        s.problem =
            InvalidArgumentError(WhereFile(folder_.root, s) + ": a page (" + std::to_string(*page) +
                                 ") is given, but the file is not a PDF document");
      }
      out->push_back(std::move(s));
      return;
    }
    ++documents_;
    AddPages(s, **pages, page, out);
  }

  uint64_t documents() const { return documents_; }

 private:
  // The page count of a *.pdf file whose bytes are a PDF; nullopt for anything else (an image,
  // even one named *.pdf, is left to the image decoders).
  Result<std::optional<int32_t>> PageCountIfPdf(const SourceSample& s) {
    if (!HasPdfExtension(s.relative_path)) return std::optional<int32_t>();
    DOCFEED_ASSIGN_OR_RETURN(
        std::vector<uint8_t> bytes,
        env_->ReadFile(JoinPath(folder_.root, s.relative_path), options_.limits.max_input_bytes));
    if (!IsPdf(bytes)) return std::optional<int32_t>();
    DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<PdfDocument> doc,
                             PdfDocument::Open(bytes, options_.limits));
    return std::optional<int32_t>(doc->page_count());  // `doc` goes before `bytes`
  }

  void AddPages(const SourceSample& s, int32_t count, std::optional<int64_t> page,
                std::vector<SourceSample>* out) {
    int64_t first = 1;
    int64_t last = options_.first_page_only ? 1 : count;
    if (page) {
      first = last = *page;
    }
    if (first < 1 || last > count) {
      SourceSample bad = s;
      bad.problem =
          InvalidArgumentError(WhereFile(folder_.root, s) + ": page " + std::to_string(*page) +
                               " is not a page of this " + std::to_string(count) + "-page PDF");
      out->push_back(std::move(bad));
      return;
    }
    for (int64_t k = first; k <= last; ++k) {
      SourceSample p = s;
      p.page = static_cast<int32_t>(k);
      p.pages = count;
      p.values[columns_.page] = k;
      p.values[columns_.pages] = int64_t{count};
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
  const PdfPackOptions& options_;
  PageColumns columns_;
  std::map<std::pair<std::string, int64_t>, int64_t> named_;
  uint64_t documents_ = 0;
};

}  // namespace

Status ExpandPdfSamples(ImageFolder* folder, Env* env, const PdfPackOptions& options) {
  env = EnvOrDefault(env);
  if (options.dpi < kMinPdfDpi || options.dpi > kMaxPdfDpi) {
    return InvalidArgumentError("--dpi " + std::to_string(options.dpi) + " is outside " +
                                std::to_string(kMinPdfDpi) + ".." + std::to_string(kMaxPdfDpi));
  }
  bool any_pdf = false;
  for (const SourceSample& s : folder->samples) {
    any_pdf = any_pdf || (s.problem.ok() && HasPdfExtension(s.relative_path));
  }
  if (!any_pdf) return Status::Ok();
  DOCFEED_ASSIGN_OR_RETURN(PageColumns columns, AddPageColumns(folder));
  Expander expander(*folder, env, options, columns);
  std::vector<SourceSample> expanded;
  for (SourceSample& s : folder->samples) expander.Add(std::move(s), &expanded);
  folder->samples = std::move(expanded);
  folder->pdf.documents = expander.documents();
  folder->pdf.pages = 0;
  for (const SourceSample& s : folder->samples) folder->pdf.pages += s.page > 0 ? 1 : 0;
  folder->pdf.dpi = options.dpi;
  folder->pdf.first_page_only = options.first_page_only;
  return Status::Ok();
}

Result<std::vector<uint8_t>> RenderPdfPage(const std::string& root, const SourceSample& sample,
                                           Env* env, const PdfPackOptions& options) {
  DOCFEED_CHECK(sample.page > 0);
  DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                           EnvOrDefault(env)->ReadFile(JoinPath(root, sample.relative_path),
                                                       options.limits.max_input_bytes));
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<PdfDocument> doc,
                           PdfDocument::Open(bytes, options.limits));
  if (sample.page > doc->page_count()) {  // the file changed since it was listed
    return CorruptionError("the PDF now has " + std::to_string(doc->page_count()) +
                           " page(s), it had " + std::to_string(sample.pages) + " when listed");
  }
  DOCFEED_ASSIGN_OR_RETURN(Image page,
                           doc->RenderPage(sample.page - 1, options.dpi, options.limits));
  return EncodePng(page, options.png_level);
}

}  // namespace docfeed::internal
