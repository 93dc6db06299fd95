#include "pack/image_folder.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "base/file.h"
#include "base/json.h"

namespace docfeed::internal {
namespace {

// metadata.jsonl is read whole; past this it is refused naming the limit (a regular file this
// large is a mistake, and the limit keeps a runaway file from exhausting memory).
constexpr uint64_t kMaxMetadataBytes = uint64_t{16} << 30;

// What a JSON value can become; kUnknown for null, which fits any type, and kEmptyList for an
// empty list, which fits any list type (not a scalar one).
enum class Kind {
  kUnknown,
  kString,
  kInt,
  kFloat,
  kBool,
  kIntList,
  kFloatList,
  kStringList,
  kEmptyList
};

bool IsList(Kind k) {
  return k == Kind::kIntList || k == Kind::kFloatList || k == Kind::kStringList ||
         k == Kind::kEmptyList;
}

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kUnknown:
      return "null";
    case Kind::kString:
      return "string";
    case Kind::kInt:
      return "integer";
    case Kind::kFloat:
      return "number";
    case Kind::kBool:
      return "boolean";
    case Kind::kIntList:
      return "list of integers";
    case Kind::kFloatList:
      return "list of numbers";
    case Kind::kStringList:
      return "list of strings";
    case Kind::kEmptyList:
      return "empty list";
  }
  return "?";
}

Result<Kind> ScalarKind(const Json& v) {
  if (v.is_null()) return Kind::kUnknown;
  if (v.is_string()) return Kind::kString;
  if (v.is_boolean()) return Kind::kBool;
  // An integer past int64 (JSON allows any) is a double, as pyarrow's JSON reader types it.
  if (const uint64_t* u = v.get_ptr<const uint64_t*>();
      u != nullptr && *u > static_cast<uint64_t>(INT64_MAX)) {
    return Kind::kFloat;
  }
  if (v.is_number_integer()) return Kind::kInt;
  if (v.is_number_float()) return Kind::kFloat;
  return InvalidArgumentError(std::string("holds a JSON ") + v.type_name() +
                              "; docfeed packs strings, numbers, booleans and flat lists of "
                              "them (store nested data as a JSON string, as Donut's "
                              "ground_truth does)");
}

Result<Kind> ValueKind(const Json& v) {
  if (!v.is_array()) return ScalarKind(v);
  Kind elem = Kind::kUnknown;
  for (const Json& e : v) {
    if (e.is_null()) return InvalidArgumentError("holds a list with a null element");
    DOCFEED_ASSIGN_OR_RETURN(Kind k, ScalarKind(e));
    if (k == Kind::kBool) return InvalidArgumentError("holds a list of booleans (unsupported)");
    if (elem == Kind::kUnknown || (elem == Kind::kInt && k == Kind::kFloat)) {
      elem = k;
    } else if (!(elem == Kind::kFloat && k == Kind::kInt) && elem != k) {
      return InvalidArgumentError("holds a list mixing types");
    }
  }
  switch (elem) {
    case Kind::kInt:
      return Kind::kIntList;
    case Kind::kFloat:
      return Kind::kFloatList;
    case Kind::kString:
      return Kind::kStringList;
    default:
      return Kind::kEmptyList;  // its element type is decided by other rows
  }
}

// Merges kinds seen in two rows; int widens to float, anything else must agree.
std::optional<Kind> Merge(Kind a, Kind b) {
  if (a == Kind::kUnknown) return b;
  if (b == Kind::kUnknown || a == b) return a;
  if (a == Kind::kEmptyList && IsList(b)) return b;
  if (b == Kind::kEmptyList && IsList(a)) return a;
  if ((a == Kind::kInt && b == Kind::kFloat) || (a == Kind::kFloat && b == Kind::kInt)) {
    return Kind::kFloat;
  }
  if ((a == Kind::kIntList && b == Kind::kFloatList) ||
      (a == Kind::kFloatList && b == Kind::kIntList)) {
    return Kind::kFloatList;
  }
  return std::nullopt;
}

ColumnType ToColumnType(Kind k) {
  switch (k) {
    case Kind::kString:
      return ColumnType::kString;
    case Kind::kInt:
      return ColumnType::kInt64;
    case Kind::kFloat:
      return ColumnType::kFloat64;
    case Kind::kBool:
      return ColumnType::kBool;
    case Kind::kFloatList:
      return ColumnType::kFloat64List;
    case Kind::kStringList:
      return ColumnType::kStringList;
    case Kind::kIntList:
    case Kind::kEmptyList:  // only empty lists (and nulls): an int list column is harmless
      return ColumnType::kInt64List;
    case Kind::kUnknown:  // all null: a string column is harmless
      return ColumnType::kString;
  }
  return ColumnType::kString;
}

Value ToValue(const Json& v, ColumnType type) {
  if (v.is_null()) return std::monostate{};
  switch (type) {
    case ColumnType::kString:
      return v.get<std::string>();
    case ColumnType::kInt64:
      return v.get<int64_t>();
    case ColumnType::kFloat64:
      return v.get<double>();
    case ColumnType::kBool:
      return v.get<bool>();
    case ColumnType::kInt64List:
      return v.get<std::vector<int64_t>>();
    case ColumnType::kFloat64List:
      return v.get<std::vector<double>>();
    case ColumnType::kStringList:
      return v.get<std::vector<std::string>>();
    case ColumnType::kArrow:
      break;  // never inferred from JSON
  }
  return std::monostate{};
}

}  // namespace

bool IsSafeRelativePath(std::string_view p) {
  if (p.empty() || p.front() == '/') return false;
  size_t start = 0;
  while (start <= p.size()) {
    size_t slash = p.find('/', start);
    std::string_view part =
        p.substr(start, slash == std::string_view::npos ? p.npos : slash - start);
    if (part == "..") return false;
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return true;
}

size_t FirstInvalidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > text.size() || c == 0xC0 || c == 0xC1 || c > 0xF4) return i;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return i;
    }
    auto c1 = static_cast<unsigned char>(n > 1 ? text[i + 1] : 0);
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) ||
        (c == 0xF4 && c1 > 0x8F)) {
      return i;
    }
    i += n;
  }
  return std::string_view::npos;
}

namespace {

std::string NormalizeRelative(std::string p) {
  while (p.rfind("./", 0) == 0) p.erase(0, 2);
  return p;
}

// The key whose value holds byte `pos` of a one-line JSON object, best effort ("" if unclear):
// the last `"key":` before it.
std::string KeyBefore(std::string_view line, size_t pos) {
  size_t colon = line.rfind("\":", pos);
  if (colon == std::string_view::npos) return "";
  size_t open = line.rfind('"', colon == 0 ? 0 : colon - 1);
  if (open == std::string_view::npos || open >= colon) return "";
  return std::string(line.substr(open + 1, colon - open - 1));
}

Status MalformedRow(const std::string& where, std::string_view line) {
  size_t bad = FirstInvalidUtf8(line);
  if (bad == std::string_view::npos) return InvalidArgumentError(where + ": malformed JSON");
  std::string key = KeyBefore(line, bad);
  return InvalidArgumentError(where + ": text is not valid UTF-8 at byte " + std::to_string(bad) +
                              (key.empty() ? "" : " (in field \"" + key + "\")"));
}

struct ParsedRow {
  int64_t line;
  std::string file_name;
  Json row;
  Status problem;  // not OK: the row cannot be a sample (row is null)
};

// The problem that keeps one row from being a sample (the row's fault, not the schema's), or OK.
Status RowProblem(const std::string& where, std::string_view line, const Json& row) {
  if (row.is_discarded()) return MalformedRow(where, line);
  if (!row.is_object()) return InvalidArgumentError(where + ": a row must be a JSON object");
  auto fn = row.find("file_name");
  if (fn == row.end() || !fn->is_string()) {
    return InvalidArgumentError(where + ": no string field \"file_name\"");
  }
  if (fn->get_ref<const std::string&>().find('\0') != std::string::npos) {
    return InvalidArgumentError(where + ": file_name holds a NUL byte (\\u0000), which no file " +
                                "name can hold");
  }
  return Status::Ok();
}

// Parses metadata.jsonl-style rows into rows and infers column kinds (first-seen column order).
// `where(line)` names a row in errors. A row that cannot be a sample is an error, or with
// `keep_bad_rows` a ParsedRow with its problem.
Status ParseMetadata(const std::function<std::string(int64_t)>& where_of, std::string_view text,
                     bool keep_bad_rows, std::vector<ParsedRow>* rows,
                     std::vector<std::pair<std::string, Kind>>* kinds) {
  std::map<std::string, size_t> column_at;
  int64_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    std::string where = where_of(line_no);
    Json row = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (Status problem = RowProblem(where, line, row); !problem.ok()) {
      if (!keep_bad_rows) return problem;
      rows->push_back({line_no, "", Json(), std::move(problem)});
      continue;
    }
    auto fn = row.find("file_name");
    for (auto it = row.begin(); it != row.end(); ++it) {
      if (it.key() == "file_name") continue;
      if (it.key() == "image") {
        return InvalidArgumentError(where + ": column \"image\" is reserved for the image");
      }
      Result<Kind> kind = ValueKind(it.value());
      if (!kind.ok()) return kind.status().WithContext(where + ": column \"" + it.key() + "\"");
      auto [slot, inserted] = column_at.emplace(it.key(), kinds->size());
      if (inserted) kinds->emplace_back(it.key(), Kind::kUnknown);
      Kind& seen = (*kinds)[slot->second].second;
      std::optional<Kind> merged = Merge(seen, *kind);
      if (!merged) {
        return InvalidArgumentError(where + ": column \"" + it.key() + "\" holds a " +
                                    KindName(*kind) + " but earlier rows hold a " + KindName(seen));
      }
      seen = *merged;
    }
    rows->push_back({line_no, NormalizeRelative(fn->get<std::string>()), std::move(row), {}});
  }
  return Status::Ok();
}

// The column values of `r` in `columns` order (missing keys are null).
std::vector<Value> RowValues(const ParsedRow& r, const std::vector<ColumnSpec>& columns) {
  std::vector<Value> values;
  for (const ColumnSpec& c : columns) {
    auto it = r.row.find(c.name);
    values.push_back(it == r.row.end() ? Value{} : ToValue(*it, c.type));
  }
  return values;
}

// True if canonical `path` is `root` or below it (both canonical).
bool IsInside(const std::string& path, const std::string& root) {
  if (root == "/") return !path.empty() && path[0] == '/';
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

// What a row names: its file, and for a document split into pages (a *.pdf file, or with
// `tiff_pages` a *.tif/*.tiff file) the page when the row has an integer "page"
// (pack/document_pages.h checks it against the document and catches a page named twice).
std::string NamedKey(const ParsedRow& r, bool tiff_pages) {
  auto page = r.row.find("page");
  const bool paged = HasPdfExtension(r.file_name) || (tiff_pages && HasTiffExtension(r.file_name));
  if (!paged || page == r.row.end() || !page->is_number_integer()) return r.file_name;
  return r.file_name + '\0' + std::to_string(page->get<int64_t>());
}

Status ResolveMetadataRows(const Confinement& confine, const std::string& meta_path,
                           bool tiff_pages, std::vector<ParsedRow>& rows, ImageFolder* folder) {
  std::map<std::string, int64_t> line_of;  // NamedKey -> first row naming it
  for (ParsedRow& r : rows) {
    const std::string where = meta_path + ":" + std::to_string(r.line);
    if (r.problem.ok() && !IsSafeRelativePath(r.file_name)) {
      r.problem = InvalidArgumentError(where + ": file_name \"" + r.file_name +
                                       "\" must be a relative path inside the dataset folder");
    }
    if (r.problem.ok()) {
      auto [first, inserted] = line_of.emplace(NamedKey(r, tiff_pages), r.line);
      if (!inserted) {
        r.problem = InvalidArgumentError(where + ": file_name \"" + r.file_name +
                                         "\" is also named by line " +
                                         std::to_string(first->second) + " (one row per image)");
      }
    }
    if (Status checked = r.problem.ok() ? confine.Check(r.file_name) : Status::Ok();
        !checked.ok()) {
      r.problem = checked.WithContext(where + ": file_name \"" + r.file_name + "\"");
    }
    SourceSample s;
    s.relative_path = r.file_name;
    s.line = r.line;
    if (r.problem.ok()) s.values = RowValues(r, folder->columns);
    s.problem = r.problem;
    folder->samples.push_back(std::move(s));
  }
  return Status::Ok();
}

// Sorts the listing into candidate files (regular files, and symlinks to regular files that
// `confine` accepts) and skipped entries with their reason.
std::vector<std::string> SortListing(const Confinement& confine, std::vector<TreeEntry> entries,
                                     std::vector<SkippedEntry>* skipped) {
  std::vector<std::string> files;
  for (TreeEntry& e : entries) {
    if (e.type == FileType::kRegular) {
      files.push_back(std::move(e.path));
      continue;
    }
    std::string reason;
    if (e.type != FileType::kSymlink) {
      reason = std::string("a ") + FileTypeName(e.type) + ", not a regular file";
    } else if (e.target == FileType::kMissing) {
      reason = "a dangling symlink";
    } else if (e.target == FileType::kDirectory) {
      reason = "a symlink to a directory (not followed)";
    } else if (Status s = confine.Check(e.path); !s.ok()) {
      reason = std::string(s.message());
    } else {
      files.push_back(std::move(e.path));
      continue;
    }
    skipped->push_back({std::move(e.path), std::move(reason)});
  }
  return files;
}

// The text of metadata.jsonl without a leading UTF-8 byte order mark.
std::string_view WithoutBom(std::string_view text) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  return text.substr(0, kBom.size()) == kBom ? text.substr(kBom.size()) : text;
}

}  // namespace

Status Confinement::Check(const std::string& name) const {
  const std::string full = JoinPath(root_, name);
  if (env_->GetFileType(full) == FileType::kMissing) {
    return NotFoundError("no such file " + full);
  }
  Result<std::string> real = env_->RealPath(full);
  if (!real.ok()) return NotFoundError(full + " is a dangling symlink");
  if (!follow_ && !IsInside(*real, real_root_)) {
    return InvalidArgumentError(full + " resolves to " + *real + ", outside the source folder " +
                                "(a symlink; pass --follow-symlinks to read it)");
  }
  const FileType type = env_->GetFileType(*real);
  if (type != FileType::kRegular) {
    return InvalidArgumentError(full + " is a " + FileTypeName(type) + ", not a regular file");
  }
  return Status::Ok();
}

Result<ImageFolder> ParseSampleRows(std::string_view jsonl) {
  ImageFolder listing;
  listing.has_metadata = true;
  std::vector<ParsedRow> rows;
  std::vector<std::pair<std::string, Kind>> kinds;
  DOCFEED_RETURN_IF_ERROR(
      ParseMetadata([](int64_t line) { return "row " + std::to_string(line - 1); }, jsonl,
                    /*keep_bad_rows=*/false, &rows, &kinds));
  for (const auto& [name, kind] : kinds) listing.columns.push_back({name, ToColumnType(kind)});
  for (const ParsedRow& r : rows) {
    listing.samples.push_back({r.file_name, 0, RowValues(r, listing.columns), {}});
  }
  return listing;
}

namespace {

// The extension after the last '.', lower-cased ("" without one).
std::string LowerExtension(const std::string& path) {
  size_t dot = path.rfind('.');
  if (dot == std::string::npos) return "";
  std::string ext = path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

}  // namespace

bool HasImageExtension(const std::string& path) {
  static const std::set<std::string> kExtensions = {"jpg", "jpeg", "png",  "webp", "gif",
                                                    "bmp", "tif",  "tiff", "pdf"};
  return kExtensions.count(LowerExtension(path)) > 0;
}

bool HasPdfExtension(const std::string& path) { return LowerExtension(path) == "pdf"; }

bool HasTiffExtension(const std::string& path) {
  const std::string ext = LowerExtension(path);
  return ext == "tif" || ext == "tiff";
}

Result<ImageFolder> ScanImageFolder(const std::string& root, Env* env, bool follow_symlinks,
                                    bool tiff_pages) {
  env = EnvOrDefault(env);
  if (!env->IsDirectory(root)) return NotFoundError("source folder " + root + " does not exist");
  ImageFolder folder;
  folder.root = root;
  DOCFEED_ASSIGN_OR_RETURN(std::string real_root, env->RealPath(root));
  const Confinement confine(env, root, real_root, follow_symlinks);
  DOCFEED_ASSIGN_OR_RETURN(std::vector<TreeEntry> entries, env->ListTree(root));
  std::vector<SkippedEntry> skipped;
  std::vector<std::string> files = SortListing(confine, std::move(entries), &skipped);
  std::string meta_path = JoinPath(root, kMetadataFileName);
  folder.has_metadata = env->PathExists(meta_path);
  if (folder.has_metadata) {
    DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                             env->ReadFile(meta_path, kMaxMetadataBytes));
    const std::string text(bytes.begin(), bytes.end());
    std::vector<ParsedRow> rows;
    std::vector<std::pair<std::string, Kind>> kinds;
    DOCFEED_RETURN_IF_ERROR(
        ParseMetadata([&](int64_t line) { return meta_path + ":" + std::to_string(line); },
                      WithoutBom(text), /*keep_bad_rows=*/true, &rows, &kinds));
    for (const auto& [name, kind] : kinds) folder.columns.push_back({name, ToColumnType(kind)});
    DOCFEED_RETURN_IF_ERROR(ResolveMetadataRows(confine, meta_path, tiff_pages, rows, &folder));
  }
  std::set<std::string> listed;
  for (const SourceSample& s : folder.samples) listed.insert(s.relative_path);
  for (SkippedEntry& e : skipped) {
    if (listed.count(e.path) == 0) folder.skipped.push_back(std::move(e));
  }
  for (const std::string& f : files) {
    if (f == kMetadataFileName) continue;
    if (!HasImageExtension(f)) {
      ++folder.other_files;
    } else if (!folder.has_metadata) {
      folder.samples.push_back({f, 0, {}, {}});
    } else if (listed.count(f) == 0) {
      folder.unlisted_images.push_back(f);
    }
  }
  if (folder.samples.empty()) {
    return InvalidArgumentError("source folder " + root + " holds no images" +
                                (folder.has_metadata ? " (metadata.jsonl has no rows)" : ""));
  }
  return folder;
}

}  // namespace docfeed::internal
