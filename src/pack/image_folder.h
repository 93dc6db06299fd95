// Reads a source dataset in the layout of Hugging Face `datasets`' `imagefolder` builder: image
// files at any depth under a root, plus an optional `metadata.jsonl` at the root whose rows name
// an image by `file_name` (relative to the root) and carry any other columns.
//
// Sample order is the order of metadata.jsonl rows, or sorted relative paths without one; a
// sample's id is its position. Column types are inferred from every row (see InferColumns).
#ifndef DOCFEED_PACK_IMAGE_FOLDER_H_
#define DOCFEED_PACK_IMAGE_FOLDER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/env.h"
#include "docfeed/pack.h"
#include "docfeed/status.h"
#include "format/value.h"

namespace docfeed::internal {

inline constexpr char kMetadataFileName[] = "metadata.jsonl";

using docfeed::SkippedEntry;

// What a listed file is split into pages as (pack/document_pages.h).
enum class DocumentKind : uint8_t {
  kImage,  // one sample, its bytes read as they are
  kPdf,    // a page of a PDF, rendered
  kTiff,   // a page of a TIFF split into pages (PackPages kAll or kFirst)
};

struct SourceSample {
  std::string relative_path;  // image path relative to the root, '/'-separated
  int64_t line = 0;           // 1-based line in metadata.jsonl; 0 without metadata
  std::vector<Value> values;  // one per ImageFolder::columns
  // Not OK for a metadata.jsonl row that cannot be a sample (malformed JSON, a file_name that
  // is missing, a duplicate, outside the root...): the error, naming the file and line. The
  // packer stops on it, or with skip_bad rejects the row; the image is never read.
  Status problem;
  int64_t row = -1;  // 0-based row of a dataset source (rejects.jsonl "row"); -1 for none
  // A page of a document (pack/document_pages.h): its kind, its 1-based number and the
  // document's page count; kImage, 0 and 0 for an image.
  DocumentKind document = DocumentKind::kImage;
  int32_t page = 0;
  int32_t pages = 0;
};

// The PDF documents of a listing (pack/document_pages.h); all zero when it has none.
struct PdfListing {
  uint64_t documents = 0;  // PDF files opened while listing
  uint64_t pages = 0;      // page samples listed
  int32_t dpi = 0;         // what they are rendered at
  bool first_page_only = false;
};

// The TIFF files of a listing split into pages (PackPages kAll or kFirst); zero otherwise.
struct TiffListing {
  uint64_t documents = 0;  // TIFF files whose pages were counted while listing
  uint64_t pages = 0;      // page samples listed
};

struct ImageFolder {
  std::string root;
  bool has_metadata = false;
  std::vector<ColumnSpec> columns;
  std::vector<SourceSample> samples;
  // Image-looking files under the root that metadata.jsonl does not name (not packed; reported).
  std::vector<std::string> unlisted_images;
  // Files that are neither images nor metadata (not packed; reported as a count).
  uint64_t other_files = 0;
  // Entries of the listing that are not read, with why: FIFOs, devices, sockets, dangling
  // symlinks, symlinks to directories, and (unless follow_symlinks) symlinks leading outside
  // the root. Entries a metadata.jsonl row names are reported through its row instead.
  std::vector<SkippedEntry> skipped;
  PdfListing pdf;
  TiffListing tiff;
};

// Scans `root`. Errors name the file and, for metadata.jsonl, the line and column: nested
// objects, and columns whose values have incompatible types. A row that cannot be a sample is
// listed with its SourceSample::problem: malformed JSON, no string `file_name`, a `file_name`
// with a NUL byte, one that escapes the root (`..`, absolute, or through a symlink that resolves
// outside it unless `follow_symlinks`), names a missing or non-regular file, or repeats an
// earlier row's. A UTF-8 byte order mark at the start of metadata.jsonl is skipped, as
// `datasets`' imagefolder does. Lists and reads through `env` (Env::Default() when null).
// Rows naming a *.pdf file with an integer `page` name that page, so two rows may name two pages
// of one document; with `tiff_pages` (PackPages kAll, kFirst) so do rows naming a *.tif/*.tiff
// file.
Result<ImageFolder> ScanImageFolder(const std::string& root, Env* env = nullptr,
                                    bool follow_symlinks = false, bool tiff_pages = false);

// The listing of samples that are not files under a root (the Python binding's in-memory rows):
// one JSON object per line, each with a string "file_name" (the name stored with the image) and
// the other columns, parsed and typed exactly as metadata.jsonl rows are (same errors, rows
// named "row N", 0-based, counting every line; a row that metadata.jsonl would list with a
// problem is an error here). No file is looked at; root is empty and SourceSample::line is 0.
Result<ImageFolder> ParseSampleRows(std::string_view jsonl);

// Where a listed or named file really is: Check refuses it when it is missing, not a regular
// file, or (unless `follow`) reached through a symlink that leads outside the root. `name` is
// relative to `root`; `real_root` is root's canonical path (Env::RealPath).
class Confinement {
 public:
  Confinement(Env* env, std::string root, std::string real_root, bool follow)
      : env_(env), root_(std::move(root)), real_root_(std::move(real_root)), follow_(follow) {}

  // OK when `name` may be read; otherwise why not (without naming the row).
  Status Check(const std::string& name) const;
  const std::string& root() const { return root_; }

 private:
  Env* env_;
  std::string root_;
  std::string real_root_;
  bool follow_;
};

// Offset of the first byte that breaks UTF-8 (RFC 3629: no overlongs, surrogates or values past
// U+10FFFF), or std::string_view::npos when `text` is valid.
size_t FirstInvalidUtf8(std::string_view text);

// True for a non-empty '/'-separated relative path without a ".." component.
bool IsSafeRelativePath(std::string_view path);

// True if the file name has an image extension (.jpg .jpeg .png .webp .gif .bmp .tif .tiff,
// any case) or is a PDF document (.pdf). Used only to decide which files are candidate samples;
// the format itself is always detected from the bytes.
bool HasImageExtension(const std::string& path);

// True if the file name ends in ".pdf" (any case): the files whose bytes are looked at while
// listing, because a PDF's pages must be counted before the schema is written
// (pack/document_pages.h). Whether such a file IS a PDF is decided from its bytes ("%PDF-").
bool HasPdfExtension(const std::string& path);

// True if the file name ends in ".tif" or ".tiff" (any case): the files whose pages are counted
// while listing when TIFFs are split into pages. Whether such a file IS a TIFF is decided from
// its bytes.
bool HasTiffExtension(const std::string& path);

}  // namespace docfeed::internal

#endif  // DOCFEED_PACK_IMAGE_FOLDER_H_
