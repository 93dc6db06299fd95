#include "pack/parquet_source.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "base/file.h"
#include "format/parquet/reader.h"
#include "pack/image_folder.h"

namespace docfeed::internal {
namespace {

constexpr int kMaxDepth = 4;

// Whether the file's content starts with PAR1; an error when it cannot be read.
Result<bool> StartsWithMagic(Env* env, const std::string& path) {
  DOCFEED_ASSIGN_OR_RETURN(uint64_t size, env->FileSize(path));
  if (size < 12) return false;
  std::array<uint8_t, 4> head{};
  DOCFEED_RETURN_IF_ERROR(env->ReadAt(path, 0, head));
  return parquet::HasParquetMagic(head);
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A Parquet file by its content, or by its name when it cannot be read (opening it then reports
// why, naming it, rather than the folder being taken for something else).
bool LooksLikeParquet(Env* env, const std::string& path) {
  Result<bool> magic = StartsWithMagic(env, path);
  return magic.ok() ? *magic : EndsWith(path, ".parquet");
}

// Every file under `dir` (relative paths), up to kMaxDepth directories deep, hidden ones skipped.
Status ListFiles(Env* env, const std::string& root, const std::string& relative, int depth,
                 std::vector<std::string>* out) {
  const std::string dir = relative.empty() ? root : JoinPath(root, relative);
  DOCFEED_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDirectory(dir));
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (name.empty() || name[0] == '.') continue;
    const std::string rel = relative.empty() ? name : JoinPath(relative, name);
    if (env->IsDirectory(JoinPath(root, rel))) {
      if (depth < kMaxDepth) DOCFEED_RETURN_IF_ERROR(ListFiles(env, root, rel, depth + 1, out));
    } else {
      out->push_back(rel);
    }
  }
  return Status::Ok();
}

// The canonical split of a keyword, or "".
std::string SplitKeyword(std::string word) {
  for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::pair<const char*, const char*> kKeywords[] = {
      {"train", "train"},      {"training", "train"}, {"validation", "validation"},
      {"valid", "validation"}, {"val", "validation"}, {"dev", "validation"},
      {"test", "test"},        {"testing", "test"},   {"eval", "test"},
      {"evaluation", "test"}};
  for (const auto& [keyword, split] : kKeywords) {
    if (word == keyword) return split;
  }
  return "";
}

// SPLIT of SPLIT-NNNNN-of-MMMMM..., or "".
std::string ShardSplit(const std::string& name) {
  const size_t of = name.find("-of-");
  if (of == std::string::npos || of < 7 || name.size() < of + 9) return "";
  const size_t dash = of - 6;
  if (name[dash] != '-') return "";
  for (size_t i = 0; i < 5; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[dash + 1 + i])) ||
        !std::isdigit(static_cast<unsigned char>(name[of + 4 + i]))) {
      return "";
    }
  }
  return name.substr(0, dash);
}

std::string SplitOf(const std::string& relative) {
  const std::string name = BaseName(relative);
  if (std::string split = ShardSplit(name); !split.empty()) return split;
  // A directory named after a split keyword, nearest first.
  std::string dir = relative;
  for (;;) {
    const size_t slash = dir.rfind('/');
    if (slash == std::string::npos) break;
    dir = dir.substr(0, slash);
    const std::string split = SplitKeyword(BaseName(dir));
    if (!split.empty()) return split;
  }
  const size_t stop = name.find_first_of("-._ ");
  if (std::string split = SplitKeyword(name.substr(0, stop)); !split.empty()) return split;
  return "train";
}

int SplitRank(const std::string& split) {
  if (split == "train") return 0;
  if (split == "validation") return 1;
  if (split == "test") return 2;
  return 3;
}

}  // namespace

Result<bool> IsParquetSource(const std::string& path, Env* env) {
  env = EnvOrDefault(env);
  if (!env->IsDirectory(path)) return LooksLikeParquet(env, path);
  if (env->PathExists(JoinPath(path, "metadata.jsonl")) ||
      env->PathExists(JoinPath(path, "state.json")) ||
      env->PathExists(JoinPath(path, "dataset_dict.json"))) {
    return false;
  }
  // Walks the tree until an image (an image folder) or the end; a directory that cannot be
  // listed is an error, never a reason to take the folder for something else.
  bool found = false;
  bool image = false;
  auto walk = [&](auto&& self, const std::string& dir, int depth) -> Status {
    DOCFEED_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDirectory(dir));
    for (const std::string& name : names) {
      if (image) return Status::Ok();
      if (name.empty() || name[0] == '.') continue;
      const std::string full = JoinPath(dir, name);
      if (env->IsDirectory(full)) {
        if (depth < kMaxDepth) DOCFEED_RETURN_IF_ERROR(self(self, full, depth + 1));
      } else if (HasImageExtension(name)) {
        image = true;
      } else if (!found && LooksLikeParquet(env, full)) {
        found = true;
      }
    }
    return Status::Ok();
  };
  DOCFEED_RETURN_IF_ERROR(walk(walk, path, 0));
  return found && !image;
}

Result<migrate::SavedDataset> OpenParquetDataset(const std::string& path, Env* env) {
  env = EnvOrDefault(env);
  migrate::SavedDataset saved;
  saved.root = path;
  if (!env->IsDirectory(path)) {
    migrate::SplitSource split;
    split.dir = ParentPath(path);
    split.parquet = true;
    split.data_files.push_back(path);
    DOCFEED_ASSIGN_OR_RETURN(uint64_t bytes, env->FileSize(path));
    split.file_bytes.push_back(bytes);
    saved.total_bytes = bytes;
    saved.splits.push_back(std::move(split));
    return saved;
  }
  std::vector<std::string> files;
  DOCFEED_RETURN_IF_ERROR(ListFiles(env, path, "", 0, &files));
  std::map<std::string, std::vector<std::string>> by_split;
  for (const std::string& f : files) {
    const std::string full = JoinPath(path, f);
    DOCFEED_ASSIGN_OR_RETURN(bool magic, StartsWithMagic(env, full));
    if (!magic) {
      if (EndsWith(f, ".parquet")) {
        return CorruptionError(full + ": named .parquet, but it is not a Parquet file (no PAR1)");
      }
      continue;  // README.md, .gitattributes, dataset_info.json...
    }
    by_split[SplitOf(f)].push_back(full);
  }
  if (by_split.empty()) return NotFoundError(path + " holds no Parquet file");
  std::vector<std::string> names;
  for (const auto& [name, _] : by_split) names.push_back(name);
  std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return SplitRank(a) != SplitRank(b) ? SplitRank(a) < SplitRank(b) : a < b;
  });
  saved.is_dict = true;
  for (const std::string& name : names) {
    migrate::SplitSource split;
    split.name = name;
    split.dir = path;
    split.parquet = true;
    split.data_files = by_split[name];
    for (const std::string& f : split.data_files) {
      DOCFEED_ASSIGN_OR_RETURN(uint64_t bytes, env->FileSize(f));
      split.file_bytes.push_back(bytes);
      saved.total_bytes += bytes;
    }
    saved.splits.push_back(std::move(split));
  }
  return saved;
}

}  // namespace docfeed::internal
