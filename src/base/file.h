// File access for docfeed: whole-file reads, read-only memory maps, atomic writes and the
// temporary-directory-then-rename protocol that keeps half-written output from looking valid.
// OS calls live only in posix/file_posix.cc.
#ifndef DOCFEED_BASE_FILE_H_
#define DOCFEED_BASE_FILE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "docfeed/status.h"

namespace docfeed::internal {

// A read-only view of a whole file, memory-mapped (empty files map to an empty span).
// Move-only; unmaps on destruction. Thread-safe for concurrent reads.
class MappedFile {
 public:
  static Result<MappedFile> Open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_bytes_}; }
  const std::string& path() const { return path_; }
  // Drops the pages of [offset, offset + length) (widened to whole pages) from this process's
  // resident set (madvise MADV_DONTNEED). The bytes stay valid: a later access reads them from
  // the file again. Lets a streaming reader keep its memory bounded on files larger than RAM.
  // Out-of-range parts are ignored; advisory, so it cannot fail.
  void DropPages(uint64_t offset, uint64_t length) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_bytes_ = 0;
};

Result<std::vector<uint8_t>> ReadFile(const std::string& path);
Result<std::string> ReadTextFile(const std::string& path);

// Writes `bytes` to `path`, fsyncs it. Overwrites an existing file.
Status WriteFile(const std::string& path, std::span<const uint8_t> bytes);
Status WriteTextFile(const std::string& path, std::string_view text);

// A file written sequentially with buffering; Close() flushes and fsyncs.
class SequentialFile {
 public:
  static Result<SequentialFile> Create(const std::string& path);
  SequentialFile() = default;
  SequentialFile(SequentialFile&& other) noexcept;
  SequentialFile& operator=(SequentialFile&& other) noexcept;
  SequentialFile(const SequentialFile&) = delete;
  SequentialFile& operator=(const SequentialFile&) = delete;
  ~SequentialFile();

  Status Append(std::span<const uint8_t> bytes);
  Status Append(std::string_view text);
  uint64_t size_bytes() const { return size_bytes_; }
  Status Close();

 private:
  Status Flush();
  std::string path_;
  int fd_ = -1;
  uint64_t size_bytes_ = 0;
  std::vector<uint8_t> buffer_;
};

bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);
Status CreateDirectory(const std::string& path);
// Removes `path` and everything below it; OK if it does not exist.
Status RemoveAll(const std::string& path);
// Renames atomically within one file system.
Status Rename(const std::string& from, const std::string& to);
// Every regular file below `root` (following no symlinks to directories), as paths relative to
// `root` with '/' separators, sorted bytewise.
Result<std::vector<std::string>> ListFilesRecursive(const std::string& root);
Result<uint64_t> FileSize(const std::string& path);
// Names of the entries of `dir` (no "." or ".."), unsorted.
Result<std::vector<std::string>> ListDirectory(const std::string& dir);
// True if a process with this id exists (used to recognise leftovers of a killed run).
bool ProcessExists(int pid);
int CurrentProcessId();
// The canonical absolute path (symlinks resolved) of an existing path.
Result<std::string> RealPath(const std::string& path);

// For a tool about to replace `output` wholesale (--overwrite): InvalidArgument when `source` is
// `output` itself or lies inside it, so the replacement would delete its own input. Paths that
// do not resolve (yet) are fine.
Status CheckOverwriteKeepsSource(const std::string& source, const std::string& output);

std::string JoinPath(std::string_view a, std::string_view b);
std::string BaseName(std::string_view path);
std::string ParentPath(std::string_view path);

}  // namespace docfeed::internal

#endif  // DOCFEED_BASE_FILE_H_
