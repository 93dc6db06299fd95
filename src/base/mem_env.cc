#include "base/mem_env.h"

#include <algorithm>
#include <utility>

#include "base/file.h"

namespace docfeed::internal {
namespace {

std::string Clean(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

bool IsBelow(const std::string& path, const std::string& dir) {
  if (dir == "/") return path.size() > 1 && path[0] == '/';
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

class SnapshotRegion : public MappedFile::Region {
 public:
  explicit SnapshotRegion(std::shared_ptr<const std::vector<uint8_t>> bytes)
      : bytes_(std::move(bytes)) {}
  std::span<const uint8_t> bytes() const override { return {bytes_->data(), bytes_->size()}; }
  void DropPages(uint64_t, uint64_t) const override {}

 private:
  std::shared_ptr<const std::vector<uint8_t>> bytes_;
};

}  // namespace

class MemWritableFile : public WritableFile {
 public:
  MemWritableFile(MemEnv* env, std::string path, std::shared_ptr<MemEnv::Node> node)
      : env_(env), path_(std::move(path)), node_(std::move(node)) {}

  Status Append(std::span<const uint8_t> bytes) override {
    if (closed_) return InternalError("append to closed file " + path_);
    std::lock_guard<std::mutex> lock(env_->mu_);
    // A live snapshot (MapFile) shares the buffer: write to a copy.
    if (node_->bytes.use_count() > 1) {
      node_->bytes = std::make_shared<std::vector<uint8_t>>(*node_->bytes);
    }
    node_->bytes->insert(node_->bytes->end(), bytes.begin(), bytes.end());
    size_ += bytes.size();
    return Status::Ok();
  }
  Status Sync() override {
    if (closed_) return InternalError("sync of closed file " + path_);
    return Status::Ok();
  }
  Status Close() override {
    closed_ = true;
    return Status::Ok();
  }
  uint64_t size_bytes() const override { return size_; }
  const std::string& path() const override { return path_; }

 private:
  MemEnv* env_;
  std::string path_;
  std::shared_ptr<MemEnv::Node> node_;
  uint64_t size_ = 0;
  bool closed_ = false;
};

class MemFileLock : public FileLock {
 public:
  MemFileLock(MemEnv* env, std::string path) : env_(env), path_(std::move(path)) {}
  ~MemFileLock() override {
    std::lock_guard<std::mutex> lock(env_->mu_);
    env_->locked_.erase(path_);
  }
  const std::string& path() const override { return path_; }

 private:
  MemEnv* env_;
  std::string path_;
};

bool MemEnv::DirExistsLocked(const std::string& path) const {
  return path == "/" || path == "." || dirs_.count(path) > 0;
}

Status MemEnv::CheckParentLocked(const std::string& path, const char* what) const {
  if (path.empty()) return InvalidArgumentError(std::string(what) + ": empty path");
  std::string parent = ParentPath(path);
  if (!DirExistsLocked(parent)) {
    return NotFoundError(std::string(what) + " " + path + ": no directory " + parent);
  }
  return Status::Ok();
}

Result<std::vector<uint8_t>> MemEnv::ReadFile(const std::string& p, uint64_t max_bytes) {
  std::string path = Clean(p);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) {
    if (DirExistsLocked(path)) return NotRegularFileError(path, FileType::kDirectory);
    return NotFoundError("cannot open " + path + ": No such file or directory");
  }
  if (it->second->bytes->size() > max_bytes) {
    return FileTooLargeError(path, it->second->bytes->size(), max_bytes);
  }
  return *it->second->bytes;
}

Status MemEnv::ReadAt(const std::string& p, uint64_t offset, std::span<uint8_t> out) {
  std::string path = Clean(p);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) {
    if (DirExistsLocked(path)) return NotRegularFileError(path, FileType::kDirectory);
    return NotFoundError("cannot open " + path + ": No such file or directory");
  }
  const std::vector<uint8_t>& bytes = *it->second->bytes;
  uint64_t got = offset >= bytes.size() ? 0 : std::min<uint64_t>(out.size(), bytes.size() - offset);
  if (got > 0) std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(offset), got, out.begin());
  if (got < out.size()) return ShortReadError(path, offset, out.size(), got);
  return Status::Ok();
}

Result<MappedFile> MemEnv::MapFile(const std::string& p) {
  std::string path = Clean(p);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) {
    if (DirExistsLocked(path)) return NotRegularFileError(path, FileType::kDirectory);
    return NotFoundError("cannot open " + path + ": No such file or directory");
  }
  return MappedFile(path, std::make_unique<SnapshotRegion>(it->second->bytes));
}

Result<std::unique_ptr<WritableFile>> MemEnv::NewWritableFile(const std::string& p) {
  std::string path = Clean(p);
  std::lock_guard<std::mutex> lock(mu_);
  DOCFEED_RETURN_IF_ERROR(CheckParentLocked(path, "cannot create"));
  if (DirExistsLocked(path)) return IOError("cannot create " + path + ": Is a directory");
  auto node = std::make_shared<Node>();
  files_[path] = node;
  return std::unique_ptr<WritableFile>(std::make_unique<MemWritableFile>(this, path, node));
}

Status MemEnv::Rename(const std::string& f, const std::string& t) {
  std::lock_guard<std::mutex> lock(mu_);
  return RenameLocked(Clean(f), Clean(t));
}

Status MemEnv::RenameNoReplace(const std::string& f, const std::string& t) {
  const std::string from = Clean(f), to = Clean(t);
  std::lock_guard<std::mutex> lock(mu_);
  if ((files_.count(from) || dirs_.count(from)) && (files_.count(to) || DirExistsLocked(to))) {
    return AlreadyExistsError("cannot rename " + from + " to " + to + ": " + to +
                              " already exists");
  }
  return RenameLocked(from, to);
}

Status MemEnv::ExchangePaths(const std::string& a_in, const std::string& b_in) {
  const std::string a = Clean(a_in), b = Clean(b_in);
  std::lock_guard<std::mutex> lock(mu_);
  const std::string what = "cannot exchange " + a + " and " + b;
  for (const std::string& p : {a, b}) {
    if (!files_.count(p) && !dirs_.count(p)) {
      return NotFoundError(what + ": " + p + ": No such file or directory");
    }
  }
  if (a == b) return Status::Ok();
  if (IsBelow(a, b) || IsBelow(b, a)) return InvalidArgumentError(what + ": one holds the other");
  std::string parked = a + ".exchange";
  while (files_.count(parked) || dirs_.count(parked)) parked += "_";
  // Under one lock, so no reader sees the intermediate states.
  DOCFEED_RETURN_IF_ERROR(RenameLocked(a, parked));
  DOCFEED_RETURN_IF_ERROR(RenameLocked(b, a));
  return RenameLocked(parked, b);
}

Status MemEnv::RenameLocked(const std::string& from, const std::string& to) {
  const std::string what = "cannot rename " + from + " to " + to;
  DOCFEED_RETURN_IF_ERROR(CheckParentLocked(to, what.c_str()));
  if (from == to) return Status::Ok();
  if (auto it = files_.find(from); it != files_.end()) {
    if (DirExistsLocked(to)) return IOError(what + ": Is a directory");
    files_[to] = it->second;
    files_.erase(from);
    return Status::Ok();
  }
  if (!dirs_.count(from)) return NotFoundError(what + ": No such file or directory");
  if (IsBelow(to, from)) return InvalidArgumentError(what + ": target inside source");
  if (files_.count(to)) return IOError(what + ": Not a directory");
  if (dirs_.count(to)) {
    for (const std::string& d : dirs_) {
      if (IsBelow(d, to)) return IOError(what + ": Directory not empty");
    }
    for (const auto& [name, node] : files_) {
      if (IsBelow(name, to)) return IOError(what + ": Directory not empty");
    }
  }
  std::set<std::string> dirs;
  for (const std::string& d : dirs_) {
    if (d == from) {
      dirs.insert(to);
    } else if (IsBelow(d, from)) {
      dirs.insert(to + d.substr(from.size()));
    } else {
      dirs.insert(d);
    }
  }
  std::map<std::string, std::shared_ptr<Node>> files;
  for (auto& [name, node] : files_) {
    files[IsBelow(name, from) ? to + name.substr(from.size()) : name] = node;
  }
  dirs_ = std::move(dirs);
  files_ = std::move(files);
  return Status::Ok();
}

Status MemEnv::CreateDirectory(const std::string& p) {
  std::string path = Clean(p);
  std::lock_guard<std::mutex> lock(mu_);
  if (DirExistsLocked(path)) return Status::Ok();
  DOCFEED_RETURN_IF_ERROR(CheckParentLocked(path, "cannot create directory"));
  if (files_.count(path)) return IOError("cannot create directory " + path + ": File exists");
  dirs_.insert(path);
  return Status::Ok();
}

Status MemEnv::RemoveFile(const std::string& p) {
  std::string path = Clean(p);
  std::lock_guard<std::mutex> lock(mu_);
  if (files_.erase(path) == 0) {
    if (DirExistsLocked(path)) return IOError("cannot remove " + path + ": Is a directory");
    return NotFoundError("cannot remove " + path + ": No such file or directory");
  }
  return Status::Ok();
}

Status MemEnv::RemoveAll(const std::string& p) {
  std::string path = Clean(p);
  std::lock_guard<std::mutex> lock(mu_);
  files_.erase(path);
  if (dirs_.erase(path) == 0) return Status::Ok();
  std::erase_if(files_, [&](const auto& entry) { return IsBelow(entry.first, path); });
  std::erase_if(dirs_, [&](const std::string& d) { return IsBelow(d, path); });
  return Status::Ok();
}

Result<std::vector<std::string>> MemEnv::ListDirectory(const std::string& p) {
  std::string dir = Clean(p);
  std::lock_guard<std::mutex> lock(mu_);
  if (!DirExistsLocked(dir)) {
    return NotFoundError("cannot open directory " + dir + ": No such file or directory");
  }
  std::vector<std::string> names;
  auto add = [&](const std::string& path) {
    if (ParentPath(path) == dir) names.push_back(BaseName(path));
  };
  for (const auto& [name, node] : files_) add(name);
  for (const std::string& d : dirs_) add(d);
  return names;
}

Result<std::vector<TreeEntry>> MemEnv::ListTree(const std::string& p) {
  std::string root = Clean(p);
  std::lock_guard<std::mutex> lock(mu_);
  if (!DirExistsLocked(root)) {
    return NotFoundError("cannot open directory " + root + ": No such file or directory");
  }
  std::vector<TreeEntry> out;
  for (const auto& [name, node] : files_) {  // a std::map: already sorted by path
    if (root == ".") {
      if (name[0] != '/') out.push_back({name, FileType::kRegular, FileType::kMissing});
    } else if (IsBelow(name, root)) {
      out.push_back(
          {name.substr(root == "/" ? 1 : root.size() + 1), FileType::kRegular, FileType::kMissing});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const TreeEntry& a, const TreeEntry& b) { return a.path < b.path; });
  return out;
}

FileType MemEnv::GetFileType(const std::string& p) {
  std::string path = Clean(p);
  std::lock_guard<std::mutex> lock(mu_);
  if (files_.count(path)) return FileType::kRegular;
  return DirExistsLocked(path) ? FileType::kDirectory : FileType::kMissing;
}

Result<std::unique_ptr<FileLock>> MemEnv::LockFile(const std::string& p) {
  std::string path = Clean(p);
  std::lock_guard<std::mutex> lock(mu_);
  if (locked_.count(path)) {
    return FailedPreconditionError(path + " is locked: another docfeed run is writing the same " +
                                   "output; wait for it to finish or choose another output");
  }
  DOCFEED_RETURN_IF_ERROR(CheckParentLocked(path, "cannot create lock file"));
  if (DirExistsLocked(path)) return IOError("cannot create lock file " + path + ": Is a directory");
  if (!files_.count(path)) files_[path] = std::make_shared<Node>();
  locked_.insert(path);
  return std::unique_ptr<FileLock>(std::make_unique<MemFileLock>(this, path));
}

Status MemEnv::UnlockFile(std::unique_ptr<FileLock> lock) {
  if (lock == nullptr) return Status::Ok();
  {
    std::lock_guard<std::mutex> guard(mu_);
    files_.erase(lock->path());
  }
  lock.reset();
  return Status::Ok();
}

bool MemEnv::PathExists(const std::string& p) {
  std::string path = Clean(p);
  std::lock_guard<std::mutex> lock(mu_);
  return files_.count(path) > 0 || DirExistsLocked(path);
}

bool MemEnv::IsDirectory(const std::string& p) {
  std::string path = Clean(p);
  std::lock_guard<std::mutex> lock(mu_);
  return DirExistsLocked(path);
}

Result<uint64_t> MemEnv::FileSize(const std::string& p) {
  std::string path = Clean(p);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it != files_.end()) return static_cast<uint64_t>(it->second->bytes->size());
  if (DirExistsLocked(path)) return uint64_t{0};
  return NotFoundError("cannot stat " + path + ": No such file or directory");
}

Result<std::string> MemEnv::RealPath(const std::string& p) {
  std::string path = Clean(p);
  if (!PathExists(path))
    return NotFoundError("cannot resolve " + path + ": No such file or directory");
  return path;
}

}  // namespace docfeed::internal
