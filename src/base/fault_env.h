// An Env that wraps another and injects faults, for tests (in the spirit of leveldb's
// FaultInjectionTestEnv). Not used by the CLI.
//
// Operations are numbered from 0 in the order they reach this Env, in two sequences:
// - reads: ReadFile, ReadAt, MapFile, NewRandomAccessFile and each RandomAccessFile::ReadAt,
//   ListDirectory, ListFilesRecursive, FileSize;
// - writes (every mutating operation): NewWritableFile, WritableFile::Append / Sync / Close,
//   Rename, LinkFile, CreateDirectory, RemoveFile, RemoveAll.
// PathExists, IsDirectory and RealPath pass through uncounted. Run a job once with no fault to
// learn reads() and writes(), then re-run it with a fault at each index.
//
// Faults (at most one read fault and one write fault at a time):
// - ReadFault::kIOError: read j fails with IOError naming the path.
// - ReadFault::kShortRead: read j sees the file cut to half its length, as if it had been
//   truncated under the reader: ReadFile returns the first half, MapFile maps it, ReadAt gives
//   the Env's short-read error when the range passes the cut, NewRandomAccessFile opens a file
//   that ends at the cut; a RandomAccessFile::ReadAt at j reads half its range and gives the
//   short-read error (truncated during that read). Listings and FileSize fail with
//   IOError instead.
// - WriteFault::kIOError / kNoSpace: write i fails with IOError, or with ResourceExhausted
//   "No space left on device", and does not reach the wrapped Env; later writes go through.
// - CrashAfterWrites(n): writes 0..n-1 go through; at write n the "machine crashes": every file
//   written through this Env and not yet synced is cut back in the wrapped Env to the length it
//   had at its last successful Sync()/Close() (0 if never), like a power loss dropping the page
//   cache; from then on that and every later write fails with "simulated crash" and nothing
//   reaches the wrapped Env. Reads still work (a restarted process reading the disk). Renames
//   and directory entries are treated as durable at once (a journaling file system's metadata
//   order), so only file contents are lost.
// Thread-safe; the numbering is deterministic only when the job itself runs its I/O in a fixed
// order (e.g. one worker thread).
#ifndef DOCFEED_BASE_FAULT_ENV_H_
#define DOCFEED_BASE_FAULT_ENV_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/env.h"

namespace docfeed::internal {

class FaultInjectionEnv : public Env {
 public:
  enum class ReadFault { kIOError, kShortRead };
  enum class WriteFault { kIOError, kNoSpace };

  // `base` must outlive this Env.
  explicit FaultInjectionEnv(Env* base) : base_(base) {}

  void FailRead(uint64_t index, ReadFault fault);
  void FailWrite(uint64_t index, WriteFault fault);
  void CrashAfterWrites(uint64_t writes);
  // Clears every fault and the crashed state and resets both counters.
  void Reset();

  uint64_t reads() const;
  uint64_t writes() const;
  bool crashed() const;
  // The path of the last operation a fault (or the crash) hit; "" if none did.
  std::string fault_path() const;

  using Env::ReadFile;
  Result<std::vector<uint8_t>> ReadFile(const std::string& path, uint64_t max_bytes) override;
  Status ReadAt(const std::string& path, uint64_t offset, std::span<uint8_t> out) override;
  Result<MappedFile> MapFile(const std::string& path) override;
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status RenameNoReplace(const std::string& from, const std::string& to) override;
  Status ExchangePaths(const std::string& a, const std::string& b) override;
  Status LinkFile(const std::string& from, const std::string& to) override;
  Status CreateDirectory(const std::string& path) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveAll(const std::string& path) override;
  Result<std::vector<std::string>> ListDirectory(const std::string& dir) override;
  Result<std::vector<TreeEntry>> ListTree(const std::string& root) override;
  FileType GetFileType(const std::string& path) override { return base_->GetFileType(path); }
  // Locks pass through uncounted: they guard a run, they are not part of its output.
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    return base_->LockFile(path);
  }
  Status UnlockFile(std::unique_ptr<FileLock> lock) override {
    return base_->UnlockFile(std::move(lock));
  }
  bool PathExists(const std::string& path) override { return base_->PathExists(path); }
  bool IsDirectory(const std::string& path) override { return base_->IsDirectory(path); }
  Result<uint64_t> FileSize(const std::string& path) override;
  Result<std::string> RealPath(const std::string& path) override { return base_->RealPath(path); }

  // A file written through this Env whose newest bytes may not be durable yet.
  struct Unsynced {
    std::string path;  // follows renames
    uint64_t synced_bytes = 0;
  };

 private:
  friend class FaultWritableFile;
  friend class FaultRandomAccessFile;
  enum class ReadOutcome { kPass, kFail, kShort };
  ReadOutcome BeforeRead(const std::string& path, Status* error);
  // OK to go ahead with write `what` (naming `path`), or the injected failure.
  Status BeforeWrite(const std::string& what, const std::string& path);
  void DropUnsyncedLocked();

  Env* const base_;
  mutable std::mutex mu_;
  uint64_t reads_ = 0;   // guarded by mu_
  uint64_t writes_ = 0;  // guarded by mu_
  std::optional<uint64_t> read_fault_index_;
  ReadFault read_fault_ = ReadFault::kIOError;
  std::optional<uint64_t> write_fault_index_;
  WriteFault write_fault_ = WriteFault::kIOError;
  std::optional<uint64_t> crash_after_;
  bool crashed_ = false;
  std::string fault_path_;
  std::vector<std::shared_ptr<Unsynced>> unsynced_;  // guarded by mu_
};

}  // namespace docfeed::internal

#endif  // DOCFEED_BASE_FAULT_ENV_H_
