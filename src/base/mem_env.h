// An in-memory Env for tests and fuzzers: a map path -> bytes plus a set of directories, all
// under one mutex. Not used by the CLI.
//
// Semantics follow the POSIX Env where docfeed relies on them: files need an existing parent
// directory; Rename is atomic (a file replaces a file, a directory replaces a missing or empty
// directory and carries everything below it); RemoveAll removes a whole tree. There are no
// symlinks, FIFOs or devices (ListTree gives regular files only): RealPath returns the path with
// trailing slashes removed. "/" and "." always exist. Locks (LockFile) are held in a set of
// paths; a lock's file exists while it is held.
// Writes are visible to readers at once (there is no page cache to lose); MapFile returns a
// view of a snapshot of the file, which stays valid and unchanged while the MappedFile lives
// even if the file is rewritten, renamed or removed. Thread-safe.
#ifndef DOCFEED_BASE_MEM_ENV_H_
#define DOCFEED_BASE_MEM_ENV_H_

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/env.h"

namespace docfeed::internal {

class MemEnv : public Env {
 public:
  MemEnv() = default;

  using Env::ReadFile;
  Result<std::vector<uint8_t>> ReadFile(const std::string& path, uint64_t max_bytes) override;
  Status ReadAt(const std::string& path, uint64_t offset, std::span<uint8_t> out) override;
  Result<MappedFile> MapFile(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status RenameNoReplace(const std::string& from, const std::string& to) override;
  Status ExchangePaths(const std::string& a, const std::string& b) override;
  Status CreateDirectory(const std::string& path) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveAll(const std::string& path) override;
  Result<std::vector<std::string>> ListDirectory(const std::string& dir) override;
  Result<std::vector<TreeEntry>> ListTree(const std::string& root) override;
  FileType GetFileType(const std::string& path) override;
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;
  Status UnlockFile(std::unique_ptr<FileLock> lock) override;
  bool PathExists(const std::string& path) override;
  bool IsDirectory(const std::string& path) override;
  Result<uint64_t> FileSize(const std::string& path) override;
  Result<std::string> RealPath(const std::string& path) override;

  // A file's bytes are shared with live snapshots and copied before the next write to them.
  struct Node {
    std::shared_ptr<std::vector<uint8_t>> bytes = std::make_shared<std::vector<uint8_t>>();
  };

 private:
  friend class MemWritableFile;
  friend class MemFileLock;
  bool DirExistsLocked(const std::string& path) const;
  Status RenameLocked(const std::string& from, const std::string& to);
  Status CheckParentLocked(const std::string& path, const char* what) const;

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Node>> files_;  // guarded by mu_
  std::set<std::string> dirs_;                          // guarded by mu_
  std::set<std::string> locked_;                        // guarded by mu_
};

}  // namespace docfeed::internal

#endif  // DOCFEED_BASE_MEM_ENV_H_
