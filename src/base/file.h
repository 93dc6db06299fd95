// File access for docfeed: thin wrappers over Env::Default() (env.h), path helpers, and the
// process-id helpers that recognise leftovers of killed runs. OS calls live only in posix/.
#ifndef DOCFEED_BASE_FILE_H_
#define DOCFEED_BASE_FILE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/env.h"
#include "docfeed/status.h"

namespace docfeed::internal {

// Free functions over Env::Default(), for the CLI, tools and tests. Library components take an
// `Env*` (their options' `env`, Env::Default() when null) and call it instead.
Result<std::vector<uint8_t>> ReadFile(const std::string& path);
Result<std::string> ReadTextFile(const std::string& path);

// Writes `bytes` to `path`, fsyncs it. Overwrites an existing file.
Status WriteFile(const std::string& path, std::span<const uint8_t> bytes);
Status WriteTextFile(const std::string& path, std::string_view text);

// A file written sequentially with buffering through an Env; Close() flushes and fsyncs.
// Move-only value wrapper over Env::NewWritableFile.
class SequentialFile {
 public:
  static Result<SequentialFile> Create(const std::string& path, Env* env = nullptr);
  SequentialFile() = default;
  SequentialFile(SequentialFile&& other) noexcept = default;
  SequentialFile& operator=(SequentialFile&& other) noexcept = default;
  SequentialFile(const SequentialFile&) = delete;
  SequentialFile& operator=(const SequentialFile&) = delete;
  ~SequentialFile() = default;

  Status Append(std::span<const uint8_t> bytes);
  Status Append(std::string_view text);
  uint64_t size_bytes() const { return file_ ? file_->size_bytes() : 0; }
  Status Close();

 private:
  std::unique_ptr<WritableFile> file_;
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
Status CheckOverwriteKeepsSource(const std::string& source, const std::string& output,
                                 Env* env = nullptr);

std::string JoinPath(std::string_view a, std::string_view b);
std::string BaseName(std::string_view path);
std::string ParentPath(std::string_view path);

}  // namespace docfeed::internal

#endif  // DOCFEED_BASE_FILE_H_
