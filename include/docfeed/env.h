// The file-system seam (in the style of leveldb's Env): every file docfeed's library reads,
// maps, writes, renames, lists or deletes goes through an `Env`. `Env::Default()` is the POSIX
// file system; docfeed's tests also use an in-memory one (MemEnv) and one that wraps another Env to
// inject errors, short reads, ENOSPC and crashes in tests. A later object store plugs in behind the
// same interface.
//
// Contracts shared by every implementation:
// - Thread safety: every Env method may be called concurrently from any thread. A
//   WritableFile is used by one thread at a time; a MappedFile may be read by many threads.
// - Ownership: the caller owns what an Env returns (WritableFile, MappedFile). `Default()` is
//   never destroyed. An Env must outlive every object it returned.
// - Errors name the path (both paths for a rename) and the cause. Codes: NotFound when the path
//   (or its parent) does not exist; ResourceExhausted for "No space left on device" (ENOSPC,
//   EDQUOT) and for a file past a read's size limit; IOError for every other failure, including
//   a short read; InvalidArgument when an argument is of the wrong kind (a directory, FIFO,
//   device or socket where a regular file is needed); AlreadyExists when a no-replace rename
//   finds its target; FailedPrecondition when a lock is held by someone else.
// - Paths are byte strings with '/' separators, used as given (no normalization beyond what the
//   underlying file system does).
//
// Options structs take an `Env* env` (null: Env::Default()); the Env must outlive what uses it.
#ifndef DOCFEED_ENV_H_
#define DOCFEED_ENV_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "docfeed/status.h"

namespace docfeed {

class Env;

// What is at a path, as lstat(2) sees it (kSymlink for a link; see TreeEntry for its target).
enum class FileType {
  kMissing,
  kRegular,
  kDirectory,
  kSymlink,
  kFifo,
  kCharDevice,
  kBlockDevice,
  kSocket,
  kOther
};

// "regular file", "directory", "FIFO", ...: how errors and reports name a FileType.
const char* FileTypeName(FileType type);

// One entry of Env::ListTree.
struct TreeEntry {
  std::string path;                      // relative to the listed root, '/'-separated
  FileType type = FileType::kRegular;    // never kDirectory (directories are descended)
  FileType target = FileType::kMissing;  // for kSymlink: what it resolves to (kMissing: dangling)
};

// The default size limit of Env::ReadFile: larger files are refused before anything is
// allocated for them.
inline constexpr uint64_t kDefaultMaxReadBytes = uint64_t{1} << 30;

// An advisory lock on a file, held by this object (Env::LockFile). Destroying it releases the
// lock and leaves the file; Env::UnlockFile also removes the file.
class FileLock {
 public:
  virtual ~FileLock() = default;
  virtual const std::string& path() const = 0;
};

// A read-only view of a whole file (empty files give an empty span). Move-only; the bytes stay
// at the same address while the object lives, also across moves, so views taken from `bytes()`
// stay valid until it is destroyed. Thread-safe for concurrent reads.
class MappedFile {
 public:
  // What an Env maps: owns the bytes (an mmap, a snapshot) and releases them when destroyed.
  class Region {
   public:
    virtual ~Region() = default;
    virtual std::span<const uint8_t> bytes() const = 0;
    // See MappedFile::DropPages.
    virtual void DropPages(uint64_t offset, uint64_t length) const = 0;
  };

  // `env->MapFile(path)`, with Env::Default() when `env` is null.
  static Result<MappedFile> Open(const std::string& path, Env* env = nullptr);

  MappedFile() = default;
  MappedFile(std::string path, std::unique_ptr<Region> region);
  MappedFile(MappedFile&& other) noexcept = default;
  MappedFile& operator=(MappedFile&& other) noexcept = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() = default;

  std::span<const uint8_t> bytes() const { return bytes_; }
  const std::string& path() const { return path_; }
  // Drops the pages of [offset, offset + length) (widened to whole pages) from this process's
  // resident set. The bytes stay valid: a later access reads them again. Lets a streaming reader
  // keep its memory bounded on files larger than RAM. Out-of-range parts are ignored; advisory,
  // so it cannot fail (a no-op where the Env keeps the bytes in memory anyway).
  void DropPages(uint64_t offset, uint64_t length) const {
    if (region_) region_->DropPages(offset, length);
  }

 private:
  std::string path_;
  std::unique_ptr<Region> region_;
  std::span<const uint8_t> bytes_;
};

// A file opened for positioned reads (pread-style): the reader's way to take byte ranges of a
// file that may change under it. Unlike a MappedFile, a read never touches memory that the file
// system can take away: a file truncated or rewritten while it is open gives a short-read IOError
// (or different bytes, which the caller's checksums catch), never a signal. Move-only through
// the unique_ptr the Env returns; thread-safe for concurrent reads.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Exactly `out.size()` bytes from `offset`; fewer available (the file is shorter now than the
  // range) is the Env's short-read IOError naming the file, the offset and how many were read.
  virtual Status ReadAt(uint64_t offset, std::span<uint8_t> out) const = 0;
  // The file's size when it was opened (it may have changed since).
  virtual uint64_t size_bytes() const = 0;
  virtual const std::string& path() const = 0;
  // Bytes read from [offset, offset + length) failed a check above this file (a sample's
  // checksum): a file that keeps copies of what it read (a cache) drops them, so that the next
  // read fetches them from their source again. Nothing to do for the others.
  virtual void Invalidate(uint64_t offset, uint64_t length) const {
    static_cast<void>(offset);
    static_cast<void>(length);
  }
  // True when reading [offset, offset + length) needs no request to a server because a cache
  // holds all of it (what a reader ahead of the workers skips; the read itself still checks
  // what it serves). False for every other file.
  virtual bool HeldLocally(uint64_t offset, uint64_t length) const {
    static_cast<void>(offset);
    static_cast<void>(length);
    return false;
  }
};

// A file written sequentially. Append() may buffer; Sync() makes everything appended so far
// durable (POSIX: write + fsync); Close() is Sync() then release, and is idempotent. Destroying
// an open file without Close() discards what is still buffered (the file keeps what reached
// it). Not thread-safe: one writer.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(std::span<const uint8_t> bytes) = 0;
  virtual Status Sync() = 0;
  virtual Status Close() = 0;
  // Bytes appended so far (buffered or not).
  virtual uint64_t size_bytes() const = 0;
  virtual const std::string& path() const = 0;

  Status Append(std::string_view text) {
    return Append({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  }
};

class Env {
 public:
  virtual ~Env() = default;

  // The process-wide POSIX file system. Never null, never destroyed.
  static Env* Default();

  // --- Reading ---
  // Reads, range reads and maps accept regular files only (a symlink to one counts): a
  // directory, FIFO, device or socket is an InvalidArgument naming the path and its type,
  // found without blocking (a FIFO is never waited on) and before reading anything.
  //
  // The whole file, of at most `max_bytes` bytes: a larger file (or one that grows past the
  // limit during the read) is ResourceExhausted naming the path, its size and the limit. A
  // file that ends before the size it had when the read started is an IOError ("short read")
  // naming it.
  virtual Result<std::vector<uint8_t>> ReadFile(const std::string& path, uint64_t max_bytes) = 0;
  // ReadFile with the default limit (kDefaultMaxReadBytes).
  Result<std::vector<uint8_t>> ReadFile(const std::string& path) {
    return ReadFile(path, kDefaultMaxReadBytes);
  }
  // Exactly `out.size()` bytes from `offset` (pread-style). Fewer bytes available (a file shorter
  // than offset + size, or one truncated during the read) is an IOError naming the file, the
  // offset and how many bytes were read.
  virtual Status ReadAt(const std::string& path, uint64_t offset, std::span<uint8_t> out) = 0;
  // A read-only view of the whole file (POSIX: a private mmap). Touching a mapped page of a
  // file that was truncated under the mapping raises SIGBUS on POSIX: map only files that
  // nothing else rewrites while mapped, and read long-lived shared files through
  // NewRandomAccessFile instead.
  virtual Result<MappedFile> MapFile(const std::string& path) = 0;
  // Opens `path` for positioned reads. POSIX keeps the file open (a file renamed over `path`
  // afterwards is not seen; one rewritten in place is). The default implementation, for Envs
  // without open files, reads through ReadAt(path, ...) each time, and its size is FileSize()'s.
  virtual Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path);

  // --- Writing ---
  // Creates `path` (truncating an existing file) for sequential writing; the parent directory
  // must exist.
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // Atomically replaces `to` (a file, or an empty directory when `from` is a directory) with
  // `from`, within one file system.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // As Rename, but never replaces: AlreadyExists naming `to` when something is there (atomic
  // check and rename: POSIX renameat2 RENAME_NOREPLACE; where the file system lacks it, a plain
  // rename(2), which replaces nothing but an empty directory when `from` is a directory).
  virtual Status RenameNoReplace(const std::string& from, const std::string& to) = 0;
  // Atomically swaps what `a` and `b` name (files or whole directories; both must exist): at
  // every instant each path names one of the two complete trees. Unsupported where the file
  // system cannot do it (POSIX: renameat2 RENAME_EXCHANGE, Linux >= 3.15 on most local file
  // systems); callers then fall back to two renames.
  virtual Status ExchangePaths(const std::string& a, const std::string& b) = 0;
  // Makes `to` a second name of the regular file `from` (a hard link: no bytes are copied; the
  // file is shared until either name is removed). `to` must not exist (AlreadyExists). Unsupported
  // where no such link can be made: the two paths on different file systems (EXDEV), a file system
  // without hard links, a link count at its limit, or an Env without links (the default
  // implementation); callers then copy the bytes.
  virtual Status LinkFile(const std::string& from, const std::string& to);
  // Creates one directory; OK if it already exists. The parent must exist.
  virtual Status CreateDirectory(const std::string& path) = 0;
  // Removes one file (not a directory). NotFound if it does not exist.
  virtual Status RemoveFile(const std::string& path) = 0;
  // Removes `path` and everything below it (never following symlinks); OK if it does not exist.
  virtual Status RemoveAll(const std::string& path) = 0;

  // --- Listing and metadata ---
  // Names of the entries of `dir` (no "." or ".."), unsorted.
  virtual Result<std::vector<std::string>> ListDirectory(const std::string& dir) = 0;
  // Every entry below `root` that is not a directory (regular files, symlinks, FIFOs, devices,
  // sockets), descending into directories but never through a symlink, sorted bytewise by path.
  virtual Result<std::vector<TreeEntry>> ListTree(const std::string& root) = 0;
  // What is at `path` (lstat: a symlink is kSymlink); kMissing when nothing is.
  virtual FileType GetFileType(const std::string& path) = 0;
  // True if something (a file, directory, or a symlink, even a dangling one) is at `path`.
  virtual bool PathExists(const std::string& path) = 0;
  // True if `path` is a directory (following symlinks).
  virtual bool IsDirectory(const std::string& path) = 0;
  virtual Result<uint64_t> FileSize(const std::string& path) = 0;
  // The canonical absolute path (symlinks resolved) of an existing path.
  virtual Result<std::string> RealPath(const std::string& path) = 0;

  // --- Locks ---
  // Creates `path` if needed and takes an exclusive advisory lock on it without waiting (POSIX:
  // flock), held until the returned object is destroyed or given to UnlockFile, and released
  // by the system if the process dies. FailedPrecondition naming the path (and the holder's
  // process id where known) when another holder, in this process or another, has it.
  virtual Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) = 0;
  // Removes the lock's file, then releases the lock.
  virtual Status UnlockFile(std::unique_ptr<FileLock> lock) = 0;

  // --- Conveniences over the virtual methods ---
  // Every regular file below `root` (symlinks to regular files count; symlinks to directories
  // are not followed), as paths relative to `root` with '/' separators, sorted bytewise: the
  // kRegular entries of ListTree and its kSymlink entries whose target is kRegular.
  Result<std::vector<std::string>> ListFilesRecursive(const std::string& root);
  Result<std::string> ReadTextFile(const std::string& path);
  // Writes `bytes` to `path` (replacing it) and makes it durable (Close()).
  Status WriteFile(const std::string& path, std::span<const uint8_t> bytes);
  Status WriteTextFile(const std::string& path, std::string_view text);
};

}  // namespace docfeed

#endif  // DOCFEED_ENV_H_
