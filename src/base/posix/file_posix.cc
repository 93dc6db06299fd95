// POSIX implementation of base/file.h. The only place docfeed calls open/mmap/rename.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

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

}  // namespace

Result<MappedFile> MappedFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError("cannot stat", path, err);
  }
  MappedFile file;
  file.path_ = path;
  file.size_bytes_ = static_cast<size_t>(st.st_size);
  if (file.size_bytes_ > 0) {
    void* data = ::mmap(nullptr, file.size_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return ErrnoError("cannot mmap", path, err);
    }
    file.data_ = static_cast<const uint8_t*>(data);
  }
  ::close(fd);
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_bytes_(std::exchange(other.size_bytes_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_bytes_);
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_bytes_);
}

void MappedFile::DropPages(uint64_t offset, uint64_t length) const {
  if (data_ == nullptr || offset >= size_bytes_) return;
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t begin = offset / page * page;
  const uint64_t end = std::min<uint64_t>(size_bytes_, offset + std::min(length, size_bytes_));
  if (end <= begin) return;
  // The mapping is read-only and file-backed, so dropped pages are re-read, never lost.
  ::madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
}

Result<std::vector<uint8_t>> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open", path, errno);
  std::vector<uint8_t> out;
  uint8_t chunk[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoError("cannot read", path, err);
    }
    if (n == 0) break;
    out.insert(out.end(), chunk, chunk + n);
  }
  ::close(fd);
  return out;
}

Result<std::string> ReadTextFile(const std::string& path) {
  DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFile(path));
  return std::string(bytes.begin(), bytes.end());
}

Status WriteFile(const std::string& path, std::span<const uint8_t> bytes) {
  DOCFEED_ASSIGN_OR_RETURN(SequentialFile file, SequentialFile::Create(path));
  DOCFEED_RETURN_IF_ERROR(file.Append(bytes));
  return file.Close();
}

Status WriteTextFile(const std::string& path, std::string_view text) {
  return WriteFile(path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

Result<SequentialFile> SequentialFile::Create(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", path, errno);
  SequentialFile file;
  file.path_ = path;
  file.fd_ = fd;
  file.buffer_.reserve(kWriteBufferBytes);
  return file;
}

SequentialFile::SequentialFile(SequentialFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      size_bytes_(other.size_bytes_),
      buffer_(std::move(other.buffer_)) {}

SequentialFile& SequentialFile::operator=(SequentialFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_bytes_ = other.size_bytes_;
    buffer_ = std::move(other.buffer_);
  }
  return *this;
}

SequentialFile::~SequentialFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status SequentialFile::Append(std::span<const uint8_t> bytes) {
  if (fd_ < 0) return InternalError("append to closed file " + path_);
  size_bytes_ += bytes.size();
  if (buffer_.size() + bytes.size() > kWriteBufferBytes) {
    DOCFEED_RETURN_IF_ERROR(Flush());
    if (bytes.size() >= kWriteBufferBytes) return WriteAll(fd_, bytes.data(), bytes.size(), path_);
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  return Status::Ok();
}

Status SequentialFile::Append(std::string_view text) {
  return Append({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

Status SequentialFile::Flush() {
  Status status = WriteAll(fd_, buffer_.data(), buffer_.size(), path_);
  buffer_.clear();
  return status;
}

Status SequentialFile::Close() {
  if (fd_ < 0) return Status::Ok();
  Status status = Flush();
  if (status.ok() && ::fsync(fd_) != 0) status = ErrnoError("cannot fsync", path_, errno);
  if (::close(fd_) != 0 && status.ok()) status = ErrnoError("cannot close", path_, errno);
  fd_ = -1;
  return status;
}

bool PathExists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Status CreateDirectory(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoError("cannot create directory", path, errno);
  }
  return Status::Ok();
}

Status RemoveAll(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? Status::Ok() : ErrnoError("cannot stat", path, errno);
  }
  if (S_ISDIR(st.st_mode)) {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return ErrnoError("cannot open directory", path, errno);
    std::vector<std::string> children;
    while (dirent* entry = ::readdir(dir)) {
      std::string_view name = entry->d_name;
      if (name != "." && name != "..") children.emplace_back(name);
    }
    ::closedir(dir);
    for (const std::string& child : children)
      DOCFEED_RETURN_IF_ERROR(RemoveAll(JoinPath(path, child)));
    if (::rmdir(path.c_str()) != 0) return ErrnoError("cannot remove directory", path, errno);
    return Status::Ok();
  }
  if (::unlink(path.c_str()) != 0) return ErrnoError("cannot remove", path, errno);
  return Status::Ok();
}

Status Rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoError("cannot rename " + from + " to", to, errno);
  }
  return Status::Ok();
}

namespace {

Status ListInto(const std::string& root, const std::string& relative,
                std::vector<std::string>* out) {
  std::string dir_path = relative.empty() ? root : JoinPath(root, relative);
  DIR* dir = ::opendir(dir_path.c_str());
  if (dir == nullptr) return ErrnoError("cannot open directory", dir_path, errno);
  std::vector<std::string> names;
  while (dirent* entry = ::readdir(dir)) {
    std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(dir);
  for (const std::string& name : names) {
    std::string child = relative.empty() ? name : relative + "/" + name;
    std::string full = JoinPath(root, child);
    struct stat st {};
    if (::lstat(full.c_str(), &st) != 0) return ErrnoError("cannot stat", full, errno);
    if (S_ISDIR(st.st_mode)) {
      DOCFEED_RETURN_IF_ERROR(ListInto(root, child, out));
    } else if (S_ISREG(st.st_mode) ||
               (S_ISLNK(st.st_mode) && ::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode))) {
      out->push_back(std::move(child));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> ListFilesRecursive(const std::string& root) {
  std::vector<std::string> out;
  DOCFEED_RETURN_IF_ERROR(ListInto(root, "", &out));
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::vector<std::string>> ListDirectory(const std::string& dir) {
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

bool ProcessExists(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

int CurrentProcessId() { return static_cast<int>(::getpid()); }

Result<std::string> RealPath(const std::string& path) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return ErrnoError("cannot resolve", path, errno);
  std::string out(resolved);
  std::free(resolved);
  return out;
}

Result<uint64_t> FileSize(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return ErrnoError("cannot stat", path, errno);
  return static_cast<uint64_t>(st.st_size);
}

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

Status CheckOverwriteKeepsSource(const std::string& source, const std::string& output) {
  Result<std::string> src = RealPath(source);
  Result<std::string> out = RealPath(output);
  if (!src.ok() || !out.ok()) return Status::Ok();
  if (*src == *out || src->rfind(*out + "/", 0) == 0) {
    return InvalidArgumentError("refusing to overwrite " + output + ": it holds the source " +
                                source);
  }
  return Status::Ok();
}

}  // namespace docfeed::internal
