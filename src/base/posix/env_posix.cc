// The POSIX Env (Env::Default()) and the process-id helpers of base/file.h. The only place
// docfeed calls open/read/mmap/rename/unlink/kill.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/env.h"
#include "base/file.h"

namespace docfeed::internal {
namespace {

Status ErrnoError(std::string_view what, const std::string& path, int err) {
  std::string message(what);
  message += " ";
  message += path;
  message += ": ";
  message += std::strerror(err);
  if (err == ENOENT) return NotFoundError(std::move(message));
  if (err == ENOSPC || err == EDQUOT) return ResourceExhaustedError(std::move(message));
  return IOError(std::move(message));
}

constexpr size_t kWriteBufferBytes = 1 << 20;

Status WriteAll(int fd, const uint8_t* data, size_t size, const std::string& path) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot write", path, errno);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

// Reads up to `size` bytes at `offset`; returns how many (fewer only at end of file).
Result<size_t> PreadFull(int fd, uint8_t* data, size_t size, uint64_t offset,
                         const std::string& path) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, data + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot read", path, errno);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

FileType TypeOfMode(mode_t mode) {
  if (S_ISREG(mode)) return FileType::kRegular;
  if (S_ISDIR(mode)) return FileType::kDirectory;
  if (S_ISLNK(mode)) return FileType::kSymlink;
  if (S_ISFIFO(mode)) return FileType::kFifo;
  if (S_ISCHR(mode)) return FileType::kCharDevice;
  if (S_ISBLK(mode)) return FileType::kBlockDevice;
  if (S_ISSOCK(mode)) return FileType::kSocket;
  return FileType::kOther;
}

// Opens `path` for reading if it is a regular file (following symlinks). O_NONBLOCK makes the
// open of a FIFO return at once instead of waiting for a writer, so fstat can refuse it; it
// changes nothing for regular files. O_NOCTTY keeps a terminal from becoming ours.
Result<int> OpenRegular(const std::string& path, struct stat* st) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) return ErrnoError("cannot open", path, errno);
  if (::fstat(fd.get(), st) != 0) return ErrnoError("cannot stat", path, errno);
  if (!S_ISREG(st->st_mode)) return NotRegularFileError(path, TypeOfMode(st->st_mode));
  // Back to blocking reads (regular files never block, but keep the descriptor plain).
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return fd.Release();
}

class MmapRegion : public MappedFile::Region {
 public:
  MmapRegion(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  ~MmapRegion() override {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  std::span<const uint8_t> bytes() const override { return {data_, size_}; }
  void DropPages(uint64_t offset, uint64_t length) const override {
    if (data_ == nullptr || offset >= size_) return;
    const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t begin = offset / page * page;
    const uint64_t end = std::min<uint64_t>(size_, offset + std::min<uint64_t>(length, size_));
    if (end <= begin) return;
    // The mapping is read-only and file-backed, so dropped pages are re-read, never lost.
    ::madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {
    buffer_.reserve(kWriteBufferBytes);
  }
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Append(std::span<const uint8_t> bytes) override {
    if (fd_ < 0) return InternalError("append to closed file " + path_);
    size_bytes_ += bytes.size();
    if (buffer_.size() + bytes.size() > kWriteBufferBytes) {
      DOCFEED_RETURN_IF_ERROR(Flush());
      if (bytes.size() >= kWriteBufferBytes) {
        return WriteAll(fd_, bytes.data(), bytes.size(), path_);
      }
    }
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
    return Status::Ok();
  }

  Status Sync() override {
    if (fd_ < 0) return InternalError("sync of closed file " + path_);
    DOCFEED_RETURN_IF_ERROR(Flush());
    if (::fsync(fd_) != 0) return ErrnoError("cannot fsync", path_, errno);
    return Status::Ok();
  }

  Status Close() override {
    if (fd_ < 0) return Status::Ok();
    Status status = Flush();
    if (status.ok() && ::fsync(fd_) != 0) status = ErrnoError("cannot fsync", path_, errno);
    if (::close(fd_) != 0 && status.ok()) status = ErrnoError("cannot close", path_, errno);
    fd_ = -1;
    return status;
  }

  uint64_t size_bytes() const override { return size_bytes_; }
  const std::string& path() const override { return path_; }

 private:
  Status Flush() {
    Status status = WriteAll(fd_, buffer_.data(), buffer_.size(), path_);
    buffer_.clear();
    return status;
  }

  std::string path_;
  int fd_ = -1;
  uint64_t size_bytes_ = 0;
  std::vector<uint8_t> buffer_;
};

Result<std::vector<std::string>> ReadDirectoryNames(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoError("cannot open directory", dir, errno);
  std::vector<std::string> names;
  while (dirent* entry = ::readdir(d)) {
    std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(d);
  return names;
}

Status ListInto(const std::string& root, const std::string& relative, std::vector<TreeEntry>* out) {
  std::string dir_path = relative.empty() ? root : JoinPath(root, relative);
  DOCFEED_ASSIGN_OR_RETURN(std::vector<std::string> names, ReadDirectoryNames(dir_path));
  for (const std::string& name : names) {
    std::string child = relative.empty() ? name : relative + "/" + name;
    std::string full = JoinPath(root, child);
    struct stat st {};
    if (::lstat(full.c_str(), &st) != 0) return ErrnoError("cannot stat", full, errno);
    if (S_ISDIR(st.st_mode)) {
      DOCFEED_RETURN_IF_ERROR(ListInto(root, child, out));
      continue;
    }
    TreeEntry entry{std::move(child), TypeOfMode(st.st_mode), FileType::kMissing};
    if (entry.type == FileType::kSymlink && ::stat(full.c_str(), &st) == 0) {
      entry.target = TypeOfMode(st.st_mode);
    }
    out->push_back(std::move(entry));
  }
  return Status::Ok();
}

class PosixFileLock : public FileLock {
 public:
  PosixFileLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixFileLock() override {
    if (fd_ >= 0) ::close(fd_);  // closing the only descriptor releases the flock
  }
  const std::string& path() const override { return path_; }
  int fd() const { return fd_; }

 private:
  std::string path_;
  int fd_;
};

// The process id a lock holder wrote into its lock file ("" when unreadable).
std::string HolderOf(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
  if (n <= 0) return "";
  std::string pid(text, static_cast<size_t>(n));
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid;
}

// One attempt at LockFile: the locked descriptor, -1 when the file was replaced or removed
// between open and flock (the caller retries), or the error.
Result<int> TryLock(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (fd.get() < 0) return ErrnoError("cannot create lock file", path, errno);
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK) return ErrnoError("cannot lock", path, err);
    const std::string holder = HolderOf(fd.get());
    return FailedPreconditionError(
        path + " is locked: another docfeed run" +
        (holder.empty() ? std::string() : " (pid " + holder + ")") +
        " is writing the same output; wait for it to finish or choose another output");
  }
  // An UnlockFile between our open and flock removed the file we hold: start again, so that
  // every holder locks the file that is at `path`.
  struct stat held {
  }, now{};
  if (::fstat(fd.get(), &held) != 0) return ErrnoError("cannot stat", path, errno);
  if (::stat(path.c_str(), &now) != 0 || now.st_ino != held.st_ino || now.st_dev != held.st_dev) {
    return -1;
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) == 0) {
    WriteAll(fd.get(), reinterpret_cast<const uint8_t*>(pid.data()), pid.size(), path)
        .IgnoreError();  // the pid only improves the message another run prints
  }
  return fd.Release();
}

// Keeps the file open, so every read is a pread of the file as it is now: a file truncated
// under the reader gives a short read (an error), where a mapping would raise SIGBUS.
class PosixRandomAccessFile : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
    DOCFEED_ASSIGN_OR_RETURN(size_t got,
                             PreadFull(fd_.get(), out.data(), out.size(), offset, path_));
    if (got < out.size()) return ShortReadError(path_, offset, out.size(), got);
    return Status::Ok();
  }
  uint64_t size_bytes() const override { return size_; }
  const std::string& path() const override { return path_; }

 private:
  const std::string path_;
  const Fd fd_;
  const uint64_t size_;
};

class PosixEnv : public Env {
 public:
  Result<std::vector<uint8_t>> ReadFile(const std::string& path, uint64_t max_bytes) override {
    struct stat st {};
    DOCFEED_ASSIGN_OR_RETURN(int raw_fd, OpenRegular(path, &st));
    Fd fd(raw_fd);
    const auto expected = static_cast<uint64_t>(st.st_size);
    if (expected > max_bytes) return FileTooLargeError(path, expected, max_bytes);
    std::vector<uint8_t> out(expected);
    DOCFEED_ASSIGN_OR_RETURN(size_t got, PreadFull(fd.get(), out.data(), out.size(), 0, path));
    if (got < expected) return ShortReadError(path, 0, expected, got);
    // Whatever follows (a file that grew, or one whose size stat does not report, as in /proc),
    // up to the limit.
    uint8_t chunk[1 << 16];
    while (true) {
      DOCFEED_ASSIGN_OR_RETURN(size_t n,
                               PreadFull(fd.get(), chunk, sizeof(chunk), out.size(), path));
      if (out.size() + n > max_bytes) return FileTooLargeError(path, out.size() + n, max_bytes);
      out.insert(out.end(), chunk, chunk + n);
      if (n < sizeof(chunk)) break;
    }
    return out;
  }

  Status ReadAt(const std::string& path, uint64_t offset, std::span<uint8_t> out) override {
    struct stat st {};
    DOCFEED_ASSIGN_OR_RETURN(int raw_fd, OpenRegular(path, &st));
    Fd fd(raw_fd);
    DOCFEED_ASSIGN_OR_RETURN(size_t got, PreadFull(fd.get(), out.data(), out.size(), offset, path));
    if (got < out.size()) return ShortReadError(path, offset, out.size(), got);
    return Status::Ok();
  }

  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return ErrnoError("cannot open", path, errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return ErrnoError("cannot stat", path, errno);
    if (!S_ISREG(st.st_mode)) {
      return InvalidArgumentError("cannot read " + path + ": not a regular file");
    }
    return std::unique_ptr<RandomAccessFile>(std::make_unique<PosixRandomAccessFile>(
        path, fd.Release(), static_cast<uint64_t>(st.st_size)));
  }

  Result<MappedFile> MapFile(const std::string& path) override {
    struct stat st {};
    DOCFEED_ASSIGN_OR_RETURN(int raw_fd, OpenRegular(path, &st));
    Fd fd(raw_fd);
    const auto size = static_cast<size_t>(st.st_size);
    const uint8_t* data = nullptr;
    if (size > 0) {
      void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
      if (mapped == MAP_FAILED) return ErrnoError("cannot mmap", path, errno);
      data = static_cast<const uint8_t*>(mapped);
    }
    return MappedFile(path, std::make_unique<MmapRegion>(data, size));
  }

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoError("cannot create", path, errno);
    return std::unique_ptr<WritableFile>(std::make_unique<PosixWritableFile>(path, fd));
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoError("cannot rename " + from + " to", to, errno);
    }
    return Status::Ok();
  }

  Status RenameNoReplace(const std::string& from, const std::string& to) override {
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) {
      return Status::Ok();
    }
    int err = errno;
    if (err == EINVAL || err == ENOSYS || err == ENOTSUP) {
      // No RENAME_NOREPLACE here. Check, then rename: for a directory, rename(2) itself refuses
      // every target but an empty directory, so nothing with contents is ever replaced.
      if (PathExists(to)) {
        err = EEXIST;
      } else if (::rename(from.c_str(), to.c_str()) == 0) {
        return Status::Ok();
      } else {
        err = errno;
      }
    }
    if (err == EEXIST || err == ENOTEMPTY) {
      return AlreadyExistsError("cannot rename " + from + " to " + to + ": " + to +
                                " already exists");
    }
    return ErrnoError("cannot rename " + from + " to", to, err);
  }

  Status ExchangePaths(const std::string& a, const std::string& b) override {
    if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) != 0) {
      const int err = errno;
      if (err == EINVAL || err == ENOSYS || err == ENOTSUP) {
        return UnsupportedError("cannot exchange " + a + " and " + b + ": " + std::strerror(err));
      }
      return ErrnoError("cannot exchange " + a + " and", b, err);
    }
    return Status::Ok();
  }

  Status LinkFile(const std::string& from, const std::string& to) override {
    if (::link(from.c_str(), to.c_str()) == 0) return Status::Ok();
    const int err = errno;
    // EPERM: a file system without hard links (and Linux's protected_hardlinks refusing a file
    // the caller does not own); a copy still works there.
    if (err == EXDEV || err == EPERM || err == EMLINK || err == ENOTSUP || err == ENOSYS) {
      return UnsupportedError("cannot link " + from + " to " + to + ": " + std::strerror(err));
    }
    if (err == EEXIST) {
      return AlreadyExistsError("cannot link " + from + " to " + to + ": " + to +
                                " already exists");
    }
    return ErrnoError("cannot link " + from + " to", to, err);
  }

  Status CreateDirectory(const std::string& path) override {
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoError("cannot create directory", path, errno);
    }
    return Status::Ok();
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return ErrnoError("cannot remove", path, errno);
    return Status::Ok();
  }

  Status RemoveAll(const std::string& path) override {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      return errno == ENOENT ? Status::Ok() : ErrnoError("cannot stat", path, errno);
    }
    if (S_ISDIR(st.st_mode)) {
      DOCFEED_ASSIGN_OR_RETURN(std::vector<std::string> children, ReadDirectoryNames(path));
      for (const std::string& child : children) {
        DOCFEED_RETURN_IF_ERROR(RemoveAll(JoinPath(path, child)));
      }
      if (::rmdir(path.c_str()) != 0) return ErrnoError("cannot remove directory", path, errno);
      return Status::Ok();
    }
    return RemoveFile(path);
  }

  Result<std::vector<std::string>> ListDirectory(const std::string& dir) override {
    return ReadDirectoryNames(dir);
  }

  Result<std::vector<TreeEntry>> ListTree(const std::string& root) override {
    std::vector<TreeEntry> out;
    DOCFEED_RETURN_IF_ERROR(ListInto(root, "", &out));
    std::sort(out.begin(), out.end(),
              [](const TreeEntry& a, const TreeEntry& b) { return a.path < b.path; });
    return out;
  }

  FileType GetFileType(const std::string& path) override {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? TypeOfMode(st.st_mode) : FileType::kMissing;
  }

  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    for (int attempt = 0; attempt < 100; ++attempt) {
      DOCFEED_ASSIGN_OR_RETURN(int fd, TryLock(path));
      if (fd >= 0) return std::unique_ptr<FileLock>(std::make_unique<PosixFileLock>(path, fd));
    }
    return IOError("cannot lock " + path + ": it keeps being replaced");
  }

  Status UnlockFile(std::unique_ptr<FileLock> lock) override {
    if (lock == nullptr) return Status::Ok();
    // Removed while still held: a run that opened the old file then finds it replaced (TryLock)
    // and retries, so two runs never hold "the" lock at once.
    Status removed = Status::Ok();
    if (::unlink(lock->path().c_str()) != 0 && errno != ENOENT) {
      removed = ErrnoError("cannot remove lock file", lock->path(), errno);
    }
    lock.reset();
    return removed;
  }

  bool PathExists(const std::string& path) override {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
  }

  bool IsDirectory(const std::string& path) override {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

  Result<uint64_t> FileSize(const std::string& path) override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return ErrnoError("cannot stat", path, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  Result<std::string> RealPath(const std::string& path) override {
    char* resolved = ::realpath(path.c_str(), nullptr);
    if (resolved == nullptr) return ErrnoError("cannot resolve", path, errno);
    std::string out(resolved);
    std::free(resolved);
    return out;
  }
};

}  // namespace
}  // namespace docfeed::internal

namespace docfeed {

Env* Env::Default() {
  static Env* const env = new internal::PosixEnv();  // never destroyed: usable from static
  return env;                                        // destructors
}

}  // namespace docfeed

namespace docfeed::internal {

bool ProcessExists(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

int CurrentProcessId() { return static_cast<int>(::getpid()); }

}  // namespace docfeed::internal
