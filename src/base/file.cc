// The portable part of base/file.h and base/env.h: wrappers over Env::Default(), the Env
// conveniences, and path helpers. No OS calls (those are in posix/).
#include "base/file.h"

#include <memory>
#include <utility>

#include "base/env.h"

namespace docfeed {

MappedFile::MappedFile(std::string path, std::unique_ptr<Region> region)
    : path_(std::move(path)), region_(std::move(region)) {
  if (region_) bytes_ = region_->bytes();
}

Result<MappedFile> MappedFile::Open(const std::string& path, Env* env) {
  return internal::EnvOrDefault(env)->MapFile(path);
}

}  // namespace docfeed

namespace docfeed::internal {

Status ShortReadError(const std::string& path, uint64_t offset, uint64_t wanted, uint64_t got) {
  return IOError("short read of " + path + ": " + std::to_string(got) + " of " +
                 std::to_string(wanted) + " bytes at offset " + std::to_string(offset) +
                 " (the file is shorter than expected; was it truncated?)");
}

Status NotRegularFileError(const std::string& path, FileType type) {
  return InvalidArgumentError("cannot read " + path + ": it is a " + FileTypeName(type) +
                              ", not a regular file");
}

Status FileTooLargeError(const std::string& path, uint64_t size_bytes, uint64_t max_bytes) {
  return ResourceExhaustedError("cannot read " + path + ": it holds " + std::to_string(size_bytes) +
                                " bytes or more, past the limit of " + std::to_string(max_bytes) +
                                " bytes");
}

}  // namespace docfeed::internal

namespace docfeed {
namespace {

// Env::NewRandomAccessFile's default: every read goes through the Env by path.
class EnvRandomAccessFile : public RandomAccessFile {
 public:
  EnvRandomAccessFile(Env* env, std::string path, uint64_t size)
      : env_(env), path_(std::move(path)), size_(size) {}
  Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
    return env_->ReadAt(path_, offset, out);
  }
  uint64_t size_bytes() const override { return size_; }
  const std::string& path() const override { return path_; }

 private:
  Env* const env_;
  const std::string path_;
  const uint64_t size_;
};

}  // namespace

Result<std::unique_ptr<RandomAccessFile>> Env::NewRandomAccessFile(const std::string& path) {
  DOCFEED_ASSIGN_OR_RETURN(uint64_t size, FileSize(path));
  return std::unique_ptr<RandomAccessFile>(std::make_unique<EnvRandomAccessFile>(this, path, size));
}

Status Env::LinkFile(const std::string& from, const std::string& to) {
  return UnsupportedError("cannot link " + from + " to " + to + ": this Env has no links");
}

const char* FileTypeName(FileType type) {
  switch (type) {
    case FileType::kMissing:
      return "missing file";
    case FileType::kRegular:
      return "regular file";
    case FileType::kDirectory:
      return "directory";
    case FileType::kSymlink:
      return "symbolic link";
    case FileType::kFifo:
      return "FIFO";
    case FileType::kCharDevice:
      return "character device";
    case FileType::kBlockDevice:
      return "block device";
    case FileType::kSocket:
      return "socket";
    case FileType::kOther:
      return "special file";
  }
  return "special file";
}

Result<std::vector<std::string>> Env::ListFilesRecursive(const std::string& root) {
  DOCFEED_ASSIGN_OR_RETURN(std::vector<TreeEntry> entries, ListTree(root));
  std::vector<std::string> files;
  for (TreeEntry& e : entries) {
    if (e.type == FileType::kRegular ||
        (e.type == FileType::kSymlink && e.target == FileType::kRegular)) {
      files.push_back(std::move(e.path));
    }
  }
  return files;
}

Result<std::string> Env::ReadTextFile(const std::string& path) {
  DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFile(path));
  return std::string(bytes.begin(), bytes.end());
}

Status Env::WriteFile(const std::string& path, std::span<const uint8_t> bytes) {
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, NewWritableFile(path));
  DOCFEED_RETURN_IF_ERROR(file->Append(bytes));
  return file->Close();
}

Status Env::WriteTextFile(const std::string& path, std::string_view text) {
  return WriteFile(path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

}  // namespace docfeed

namespace docfeed::internal {

Result<std::vector<uint8_t>> ReadFile(const std::string& path) {
  return Env::Default()->ReadFile(path);
}

Result<std::string> ReadTextFile(const std::string& path) {
  return Env::Default()->ReadTextFile(path);
}

Status WriteFile(const std::string& path, std::span<const uint8_t> bytes) {
  return Env::Default()->WriteFile(path, bytes);
}

Status WriteTextFile(const std::string& path, std::string_view text) {
  return Env::Default()->WriteTextFile(path, text);
}

Result<SequentialFile> SequentialFile::Create(const std::string& path, Env* env) {
  SequentialFile file;
  DOCFEED_ASSIGN_OR_RETURN(file.file_, EnvOrDefault(env)->NewWritableFile(path));
  return file;
}

Status SequentialFile::Append(std::span<const uint8_t> bytes) {
  if (!file_) return InternalError("append to a SequentialFile that was never created");
  return file_->Append(bytes);
}

Status SequentialFile::Append(std::string_view text) {
  return Append({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

Status SequentialFile::Close() { return file_ ? file_->Close() : Status::Ok(); }

bool PathExists(const std::string& path) { return Env::Default()->PathExists(path); }
bool IsDirectory(const std::string& path) { return Env::Default()->IsDirectory(path); }
Status CreateDirectory(const std::string& path) { return Env::Default()->CreateDirectory(path); }
Status RemoveAll(const std::string& path) { return Env::Default()->RemoveAll(path); }
Status Rename(const std::string& from, const std::string& to) {
  return Env::Default()->Rename(from, to);
}
Result<std::vector<std::string>> ListFilesRecursive(const std::string& root) {
  return Env::Default()->ListFilesRecursive(root);
}
Result<uint64_t> FileSize(const std::string& path) { return Env::Default()->FileSize(path); }
Result<std::vector<std::string>> ListDirectory(const std::string& dir) {
  return Env::Default()->ListDirectory(dir);
}
Result<std::string> RealPath(const std::string& path) { return Env::Default()->RealPath(path); }

std::string JoinPath(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  std::string out(a);
  if (out.back() != '/') out += '/';
  out += b;
  return out;
}

std::string BaseName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string ParentPath(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

Status CheckOverwriteKeepsSource(const std::string& source, const std::string& output, Env* env) {
  env = EnvOrDefault(env);
  Result<std::string> src = env->RealPath(source);
  Result<std::string> out = env->RealPath(output);
  if (!src.ok() || !out.ok()) return Status::Ok();
  if (*src == *out || src->rfind(*out + "/", 0) == 0) {
    return InvalidArgumentError("refusing to overwrite " + output + ": it holds the source " +
                                source);
  }
  return Status::Ok();
}

}  // namespace docfeed::internal
