#include "remote/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/hash.h"
#include "remote/remote_env.h"

namespace docfeed::internal {
namespace {

constexpr char kMagic[8] = {'D', 'F', 'C', 'A', 'C', 'H', 'E', '1'};
constexpr uint64_t kHeaderBytes = 4096;
constexpr uint32_t kFormatVersion = 1;
constexpr const char* kSubdir = "docfeed-cache-v1";
// A fetch buffer larger than this is not kept by its thread for the next fetch.
constexpr size_t kKeptFetchBuffer = 4 << 20;
// How long a full cache waits before listing again to see whether room was made.
constexpr auto kFullRelisting = std::chrono::seconds(5);

// A file descriptor closed on destruction (closing it releases its flock).
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

std::string Hex64(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(v));
  return text;
}

uint64_t HashText(std::string_view text) {
  return Hash64({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

// 128 bits of the version and block size: a name that two versions do not share in practice
// (and the header's version text is compared at open all the same).
std::string KeyFor(const std::string& version, uint32_t block_bytes) {
  const std::string text = version + "\n" + std::to_string(block_bytes);
  return Hex64(HashText(text)) + Hex64(HashText("docfeed-cache\n" + text));
}

// The .map's header: magic, format version, block size, object size, the version text (cut to
// what fits), zeros to 4 KiB. Little-endian, as every docfeed file.
std::vector<uint8_t> MapHeader(const std::string& version, uint64_t size, uint32_t block) {
  std::vector<uint8_t> h(kHeaderBytes, 0);
  size_t at = 0;
  auto put = [&](const void* p, size_t n) {
    std::memcpy(h.data() + at, p, n);
    at += n;
  };
  put(kMagic, sizeof(kMagic));
  put(&kFormatVersion, 4);
  put(&block, 4);
  put(&size, 8);
  const auto length = static_cast<uint32_t>(std::min<size_t>(version.size(), kHeaderBytes - 28));
  put(&length, 4);
  put(version.data(), length);
  return h;
}

// pread/pwrite (`io`) of exactly n bytes, EINTR and short counts continued; false on an error
// or an end of file first.
template <typename Buffer, typename Io>
bool Fully(Io io, int fd, Buffer* buf, size_t n, uint64_t offset) {
  auto* p =
      reinterpret_cast<std::conditional_t<std::is_const_v<Buffer>, const uint8_t, uint8_t>*>(buf);
  while (n > 0) {
    const ssize_t done = io(fd, p, n, static_cast<off_t>(offset));
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) return false;
    p += done;
    n -= static_cast<size_t>(done);
    offset += static_cast<uint64_t>(done);
  }
  return true;
}

bool ReadFully(int fd, void* buf, size_t n, uint64_t offset) {
  return Fully(::pread, fd, buf, n, offset);
}

bool WriteFully(int fd, const void* buf, size_t n, uint64_t offset) {
  return Fully(::pwrite, fd, buf, n, offset);
}

// preadv of exactly the iovecs' total (continued after short counts); false otherwise.
bool ReadVectorFully(int fd, std::vector<iovec> iov, uint64_t offset) {
  size_t first = 0;
  while (first < iov.size()) {
    const ssize_t got = ::preadv(fd, iov.data() + first, static_cast<int>(iov.size() - first),
                                 static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    offset += static_cast<uint64_t>(got);
    auto left = static_cast<size_t>(got);
    while (first < iov.size() && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (left > 0) {
      iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return true;
}

bool ExtendTo(int fd, uint64_t size) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return false;
  if (static_cast<uint64_t>(st.st_size) >= size) return true;
  return ::ftruncate(fd, static_cast<off_t>(size)) == 0;
}

bool SameFile(int fd, const std::string& path) {
  struct stat a, b;
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_ino == b.st_ino &&
         a.st_dev == b.st_dev;
}

uint64_t Allocated(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

// The entry stored for a block: its XXH3-64 with the low bit set, so that 0 means absent.
uint64_t Entry(uint64_t hash) { return hash | 1; }

// What a file remembers of an entry it verified: its top byte, never 0 (0: not verified).
uint8_t Tag(uint64_t entry) {
  const auto t = static_cast<uint8_t>(entry >> 56);
  return t == 0 ? 1 : t;
}

// An object read through the cache. Blocks are [k * B, min((k + 1) * B, size)).
class CachedFile : public RandomAccessFile {
 public:
  CachedFile(std::shared_ptr<DiskCache> cache, std::unique_ptr<RandomAccessFile> object, Fd map,
             Fd data)
      : cache_(std::move(cache)),
        object_(std::move(object)),
        map_(std::move(map)),
        data_(std::move(data)),
        block_(cache_->block_bytes()),
        size_(object_->size_bytes()),
        verified_(new std::atomic<uint8_t>[(size_ + block_ - 1) / block_]()) {}

  uint64_t size_bytes() const override { return size_; }
  const std::string& path() const override { return object_->path(); }

  Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
    if (out.empty()) return Status::Ok();
    // Past the end: the object's own short-read error.
    if (offset > size_ || out.size() > size_ - offset) return object_->ReadAt(offset, out);
    const uint64_t first = offset / block_;
    const uint64_t last = (offset + out.size() - 1) / block_;
    const size_t count = static_cast<size_t>(last - first + 1);
    std::vector<uint64_t> entries(count, 0);
    if (!ReadFully(map_.get(), entries.data(), count * 8, kHeaderBytes + first * 8)) {
      Counters().io_errors.fetch_add(1, std::memory_order_relaxed);
      std::fill(entries.begin(), entries.end(), 0);
    }
    // Present runs first; blocks that fail their hash join the absent ones.
    std::vector<bool> absent(count);
    for (size_t i = 0; i < count; ++i) absent[i] = entries[i] == 0;
    for (size_t i = 0; i < count;) {
      if (absent[i]) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j + 1 < count && !absent[j + 1]) ++j;
      ServeRun(first + i, first + j, offset, out, entries.data() + i, absent, i);
      i = j + 1;
    }
    for (size_t i = 0; i < count;) {
      if (!absent[i]) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j + 1 < count && absent[j + 1]) ++j;
      DOCFEED_RETURN_IF_ERROR(FetchRun(first + i, first + j, offset, out));
      i = j + 1;
    }
    return Status::Ok();
  }

  bool HeldLocally(uint64_t offset, uint64_t length) const override {
    if (length == 0 || offset > size_ || length > size_ - offset) return false;
    const uint64_t first = offset / block_;
    const uint64_t last = (offset + length - 1) / block_;
    std::vector<uint64_t> entries(static_cast<size_t>(last - first + 1));
    return ReadFully(map_.get(), entries.data(), entries.size() * 8, kHeaderBytes + first * 8) &&
           std::find(entries.begin(), entries.end(), 0) == entries.end();
  }

  void Invalidate(uint64_t offset, uint64_t length) const override {
    if (length == 0 || offset >= size_) return;
    const uint64_t first = offset / block_;
    const uint64_t last = (std::min(size_, offset + length) - 1) / block_;
    for (uint64_t k = first; k <= last; ++k) verified_[k].store(0, std::memory_order_relaxed);
    const std::vector<uint64_t> zeros(static_cast<size_t>(last - first + 1), 0);
    if (!WriteFully(map_.get(), zeros.data(), zeros.size() * 8, kHeaderBytes + first * 8)) {
      Counters().io_errors.fetch_add(1, std::memory_order_relaxed);
    }
    Counters().invalidated.fetch_add(zeros.size(), std::memory_order_relaxed);
  }

 private:
  DiskCacheCounters& Counters() const { return cache_->mutable_counters(); }
  uint64_t BlockStart(uint64_t k) const { return k * block_; }
  uint64_t BlockEnd(uint64_t k) const { return std::min(size_, (k + 1) * block_); }

  // Blocks b0..b1 (all present) read from the data file in one preadv: the asked bytes straight
  // into `out`, and the parts of the first and last blocks outside them into scratch when those
  // blocks are to be checked; each block not yet checked against its entry (in this open file)
  // is hashed whole. A block that fails (or a read that fails) is marked absent. A dataset's
  // reads of one sample (record batch header, then the image) touch the same blocks several
  // times: only the first read of a block reads it whole.
  void ServeRun(uint64_t b0, uint64_t b1, uint64_t offset, std::span<uint8_t> out,
                const uint64_t* entries, std::vector<bool>& absent, size_t absent_at) const {
    const uint64_t lo = std::max(BlockStart(b0), offset);
    const uint64_t hi = std::min(BlockEnd(b1), offset + out.size());
    auto checked = [&](uint64_t k) {
      return verified_[k].load(std::memory_order_relaxed) == Tag(entries[k - b0]);
    };
    // What is read: [s, e). Blocks between b0 and b1 lie inside [lo, hi) anyway. The first and
    // last blocks' states are read once: an Invalidate on another thread must not make the loop
    // below hash bytes that were not read.
    const bool first_checked = checked(b0);
    const bool last_checked = b1 == b0 ? first_checked : checked(b1);
    const uint64_t s = first_checked ? lo : BlockStart(b0);
    const uint64_t e = last_checked ? hi : BlockEnd(b1);
    thread_local std::vector<uint8_t> head, tail;
    head.resize(lo - s);
    tail.resize(e - hi);
    std::vector<iovec> iov;
    if (!head.empty()) iov.push_back({head.data(), head.size()});
    iov.push_back({out.data() + (lo - offset), hi - lo});
    if (!tail.empty()) iov.push_back({tail.data(), tail.size()});
    if (!ReadVectorFully(data_.get(), std::move(iov), s)) {
      Counters().io_errors.fetch_add(1, std::memory_order_relaxed);
      for (uint64_t k = b0; k <= b1; ++k) absent[absent_at + (k - b0)] = true;
      return;
    }
    // The bytes of [from, to) of the object among the three pieces (within [s, e)).
    auto piece = [&](uint64_t from, uint64_t to) -> std::span<const uint8_t> {
      if (to <= lo) return {head.data() + (from - s), to - from};
      if (from >= hi) return {tail.data() + (from - hi), to - from};
      return {out.data() + (from - offset), to - from};
    };
    uint64_t served = 0;
    for (uint64_t k = b0; k <= b1; ++k) {
      const uint64_t bs = BlockStart(k);
      const uint64_t be = BlockEnd(k);
      const uint64_t entry = entries[k - b0];
      if (k == b0 ? first_checked : k == b1 ? last_checked : checked(k)) {
        served += std::min(be, hi) - std::max(bs, lo);
        continue;
      }
      uint64_t hash;
      if ((be <= lo || bs >= lo) && (be <= hi || bs >= hi)) {
        hash = Hash64(piece(bs, be));  // in one piece
      } else {
        Hasher64 h;
        uint64_t at = bs;
        for (const uint64_t cut : {lo, hi, be}) {
          if (cut <= at || cut > be) continue;
          h.Update(piece(at, cut));
          at = cut;
        }
        hash = h.Digest();
      }
      if (Entry(hash) != entry) {
        Counters().bad_blocks.fetch_add(1, std::memory_order_relaxed);
        absent[absent_at + (k - b0)] = true;
        continue;
      }
      verified_[k].store(Tag(entry), std::memory_order_relaxed);
      served += std::min(be, hi) - std::max(bs, lo);
    }
    Counters().hit_bytes.fetch_add(served, std::memory_order_relaxed);
  }

  // Blocks b0..b1 read from the object in one ranged read, copied into `out` where asked for,
  // and stored (data, then entries) while the cache is storing.
  Status FetchRun(uint64_t b0, uint64_t b1, uint64_t offset, std::span<uint8_t> out) const {
    const uint64_t s = BlockStart(b0);
    const uint64_t e = BlockEnd(b1);
    const auto length = static_cast<size_t>(e - s);
    thread_local std::vector<uint8_t> kept;
    std::vector<uint8_t> own;
    std::vector<uint8_t>& buffer = length <= kKeptFetchBuffer ? kept : own;
    buffer.resize(length);
    DOCFEED_RETURN_IF_ERROR(object_->ReadAt(s, {buffer.data(), length}));
    Counters().fetched_bytes.fetch_add(length, std::memory_order_relaxed);
    const uint64_t lo = std::max(s, offset);
    const uint64_t hi = std::min(e, offset + out.size());
    std::memcpy(out.data() + (lo - offset), buffer.data() + (lo - s), hi - lo);
    if (!cache_->Reserve(length)) return Status::Ok();
    std::vector<uint64_t> entries;
    entries.reserve(static_cast<size_t>(b1 - b0 + 1));
    for (uint64_t k = b0; k <= b1; ++k) {
      entries.push_back(
          Entry(Hash64({buffer.data() + (BlockStart(k) - s), BlockEnd(k) - BlockStart(k)})));
    }
    if (!WriteFully(data_.get(), buffer.data(), length, s) ||
        !WriteFully(map_.get(), entries.data(), entries.size() * 8, kHeaderBytes + b0 * 8)) {
      Counters().io_errors.fetch_add(1, std::memory_order_relaxed);
      return Status::Ok();
    }
    for (uint64_t k = b0; k <= b1; ++k) {
      verified_[k].store(Tag(entries[k - b0]), std::memory_order_relaxed);
    }
    Counters().stored_bytes.fetch_add(length, std::memory_order_relaxed);
    return Status::Ok();
  }

  const std::shared_ptr<DiskCache> cache_;
  const std::unique_ptr<RandomAccessFile> object_;
  const Fd map_;
  const Fd data_;
  const uint64_t block_;
  const uint64_t size_;
  // Per block, the Tag of the entry this file last hashed its bytes against (or stored): a
  // block read again with the same entry is not hashed again. Its bytes are still checked by
  // the sample checksums above, which report damage through Invalidate.
  const std::unique_ptr<std::atomic<uint8_t>[]> verified_;
};

// Everything but NewRandomAccessFile forwarded to the remote Env.
class CachingEnv : public Env {
 public:
  CachingEnv(RemoteEnv* remote, std::shared_ptr<DiskCache> cache)
      : remote_(remote), cache_(std::move(cache)) {}

  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    std::string version;
    DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> object,
                             remote_->NewRandomAccessFile(path, &version));
    return cache_->Wrap(std::move(object), version);
  }

  using Env::ReadFile;
  Result<std::vector<uint8_t>> ReadFile(const std::string& path, uint64_t max_bytes) override {
    return remote_->ReadFile(path, max_bytes);
  }
  Status ReadAt(const std::string& path, uint64_t offset, std::span<uint8_t> out) override {
    return remote_->ReadAt(path, offset, out);
  }
  Result<MappedFile> MapFile(const std::string& path) override { return remote_->MapFile(path); }
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return remote_->NewWritableFile(path);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    return remote_->Rename(from, to);
  }
  Status RenameNoReplace(const std::string& from, const std::string& to) override {
    return remote_->RenameNoReplace(from, to);
  }
  Status ExchangePaths(const std::string& a, const std::string& b) override {
    return remote_->ExchangePaths(a, b);
  }
  Status CreateDirectory(const std::string& path) override {
    return remote_->CreateDirectory(path);
  }
  Status RemoveFile(const std::string& path) override { return remote_->RemoveFile(path); }
  Status RemoveAll(const std::string& path) override { return remote_->RemoveAll(path); }
  Result<std::vector<std::string>> ListDirectory(const std::string& dir) override {
    return remote_->ListDirectory(dir);
  }
  Result<std::vector<TreeEntry>> ListTree(const std::string& root) override {
    return remote_->ListTree(root);
  }
  FileType GetFileType(const std::string& path) override { return remote_->GetFileType(path); }
  bool PathExists(const std::string& path) override { return remote_->PathExists(path); }
  bool IsDirectory(const std::string& path) override { return remote_->IsDirectory(path); }
  Result<uint64_t> FileSize(const std::string& path) override { return remote_->FileSize(path); }
  Result<std::string> RealPath(const std::string& path) override { return remote_->RealPath(path); }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    return remote_->LockFile(path);
  }
  Status UnlockFile(std::unique_ptr<FileLock> lock) override {
    return remote_->UnlockFile(std::move(lock));
  }

 private:
  RemoteEnv* const remote_;
  const std::shared_ptr<DiskCache> cache_;
};

}  // namespace

Result<std::shared_ptr<DiskCache>> DiskCache::Open(const DiskCacheOptions& options) {
  const uint32_t b = options.block_bytes;
  if (b < 4096 || b > (64u << 20) || (b & (b - 1)) != 0) {
    return InvalidArgumentError(
        "the cache's block size must be a power of two from 4 KiB to "
        "64 MiB, not " +
        std::to_string(b));
  }
  if (options.dir.empty()) return InvalidArgumentError("the cache directory is empty");
  Env* env = Env::Default();
  std::string root = options.dir;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  root += std::string("/") + kSubdir;
  // Parents first, as mkdir -p.
  for (size_t at = 1; at <= root.size(); ++at) {
    if (at < root.size() && root[at] != '/') continue;
    const std::string dir = root.substr(0, at);
    if (env->IsDirectory(dir)) continue;
    Status st = env->CreateDirectory(dir);
    if (!st.ok()) return st.WithContext("cannot create the cache directory " + options.dir);
  }
  // Writable: a probe file made and removed.
  const std::string probe = root + "/.probe-" + std::to_string(::getpid());
  Fd fd(::open(probe.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.ok()) {
    return IOError("cannot write in the cache directory " + options.dir + ": " +
                   std::strerror(errno));
  }
  ::unlink(probe.c_str());
  std::shared_ptr<DiskCache> cache(new DiskCache(options, std::move(root)));
  if (options.limit_bytes > 0) {
    MutexLock lock(&cache->evict_mu_);
    cache->Evict(0);
  }
  return cache;
}

DiskCache::DiskCache(const DiskCacheOptions& options, std::string root)
    : options_(options), root_(std::move(root)) {}

DiskCache::~DiskCache() = default;

Result<std::unique_ptr<RandomAccessFile>> DiskCache::Wrap(std::unique_ptr<RandomAccessFile> object,
                                                          const std::string& version) {
  auto uncached = [&]() -> Result<std::unique_ptr<RandomAccessFile>> {
    counters_.uncached_opens.fetch_add(1, std::memory_order_relaxed);
    return std::move(object);
  };
  if (version.empty()) return uncached();
  const std::string key = KeyFor(version, options_.block_bytes);
  const std::string map_path = root_ + "/" + key + ".map";
  const std::string data_path = root_ + "/" + key + ".data";
  Fd map;
  // A shared flock on the .map marks the object open; an evictor removing it holds an exclusive
  // one, so an opener that waited for it finds the path gone or new, and opens again.
  for (int attempt = 0; attempt < 8 && !map.ok(); ++attempt) {
    Fd fd(::open(map_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (!fd.ok()) break;
    int rc;
    while ((rc = ::flock(fd.get(), LOCK_SH)) != 0 && errno == EINTR) {
    }
    if (rc == 0 && SameFile(fd.get(), map_path)) map = std::move(fd);
  }
  if (!map.ok()) {
    counters_.io_errors.fetch_add(1, std::memory_order_relaxed);
    return uncached();
  }
  Fd data(::open(data_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!data.ok()) {
    counters_.io_errors.fetch_add(1, std::memory_order_relaxed);
    return uncached();
  }
  const uint64_t size = object->size_bytes();
  const uint64_t blocks = (size + options_.block_bytes - 1) / options_.block_bytes;
  const std::vector<uint8_t> want = MapHeader(version, size, options_.block_bytes);
  std::vector<uint8_t> have(kHeaderBytes, 0);
  const bool read = ReadFully(map.get(), have.data(), have.size(), 0);
  const bool fresh =
      !read || std::all_of(have.begin(), have.end(), [](uint8_t c) { return c == 0; });
  if (!fresh && have != want) {
    // Damaged (or torn by an opener writing it right now): start the object over if nobody
    // else has it open, else read it without the cache this time.
    if (::flock(map.get(), LOCK_EX | LOCK_NB) != 0) return uncached();
    const bool reset = ::ftruncate(map.get(), 0) == 0 && ::ftruncate(data.get(), 0) == 0;
    ::flock(map.get(), LOCK_SH);
    if (!reset) {
      counters_.io_errors.fetch_add(1, std::memory_order_relaxed);
      return uncached();
    }
  }
  if (fresh || have != want) {
    // Every opener writes the same header; sizes only ever grow.
    if (!WriteFully(map.get(), want.data(), want.size(), 0)) {
      counters_.io_errors.fetch_add(1, std::memory_order_relaxed);
      return uncached();
    }
  }
  if (!ExtendTo(map.get(), kHeaderBytes + blocks * 8) || !ExtendTo(data.get(), size)) {
    counters_.io_errors.fetch_add(1, std::memory_order_relaxed);
    return uncached();
  }
  ::futimens(map.get(), nullptr);  // opened now: the eviction order
  return std::unique_ptr<RandomAccessFile>(
      new CachedFile(shared_from_this(), std::move(object), std::move(map), std::move(data)));
}

bool DiskCache::Reserve(uint64_t bytes) {
  const uint64_t limit = options_.limit_bytes;
  if (limit == 0) return true;
  // Other processes' stores are seen only by listing: list again after a 64th of the limit (at
  // most 64 MiB) stored here, and before every store once within 10% of the limit.
  const uint64_t relist_every = std::min<uint64_t>(limit / 64 + 1, uint64_t{64} << 20);
  if (storing_.load(std::memory_order_relaxed) &&
      estimate_.load(std::memory_order_relaxed) + bytes <= limit / 10 * 9 &&
      since_listing_.load(std::memory_order_relaxed) + bytes < relist_every) {
    estimate_.fetch_add(bytes, std::memory_order_relaxed);
    since_listing_.fetch_add(bytes, std::memory_order_relaxed);
    return true;
  }
  MutexLock lock(&evict_mu_);
  if (!storing_.load(std::memory_order_relaxed) &&
      std::chrono::steady_clock::now() - last_listing_ < kFullRelisting) {
    return false;  // full of open objects a moment ago
  }
  Evict(bytes);
  if (!storing_.load(std::memory_order_relaxed)) return false;
  estimate_.fetch_add(bytes, std::memory_order_relaxed);
  since_listing_.fetch_add(bytes, std::memory_order_relaxed);
  return true;
}

namespace {

struct Listed {
  std::string key;
  uint64_t bytes = 0;
  struct timespec opened = {};
};

std::vector<Listed> ListObjects(const std::string& root) {
  std::vector<Listed> objects;
  DIR* d = ::opendir(root.c_str());
  if (d == nullptr) return objects;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() <= 4 || !name.ends_with(".map")) continue;
    Listed o;
    o.key = name.substr(0, name.size() - 4);
    struct stat st;
    if (::stat((root + "/" + name).c_str(), &st) != 0) continue;
    o.opened = st.st_mtim;
    o.bytes = static_cast<uint64_t>(st.st_blocks) * 512 + Allocated(root + "/" + o.key + ".data");
    objects.push_back(std::move(o));
  }
  ::closedir(d);
  return objects;
}

}  // namespace

uint64_t DiskCache::UsageBytes() const {
  uint64_t total = 0;
  for (const Listed& o : ListObjects(root_)) total += o.bytes;
  return total;
}

void DiskCache::Evict(uint64_t adding) {
  const uint64_t limit = options_.limit_bytes;
  std::vector<Listed> objects = ListObjects(root_);
  uint64_t usage = 0;
  for (const Listed& o : objects) usage += o.bytes;
  if (usage + adding > limit) {
    std::sort(objects.begin(), objects.end(), [](const Listed& a, const Listed& b) {
      return std::tie(a.opened.tv_sec, a.opened.tv_nsec) <
             std::tie(b.opened.tv_sec, b.opened.tv_nsec);
    });
    const uint64_t target = limit / 10 * 9;
    for (const Listed& o : objects) {
      if (usage + adding <= target) break;
      const std::string map_path = root_ + "/" + o.key + ".map";
      Fd fd(::open(map_path.c_str(), O_RDWR | O_CLOEXEC));
      // Open somewhere (a shared lock held), or replaced since the listing: kept.
      if (!fd.ok() || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0 || !SameFile(fd.get(), map_path)) {
        continue;
      }
      // The data first: a .map left alone by a crash here only makes its blocks fail their hash.
      ::unlink((root_ + "/" + o.key + ".data").c_str());
      ::unlink(map_path.c_str());
      usage -= std::min(usage, o.bytes);
      counters_.evicted_bytes.fetch_add(o.bytes, std::memory_order_relaxed);
      counters_.evicted_objects.fetch_add(1, std::memory_order_relaxed);
    }
  }
  storing_.store(usage + adding <= limit, std::memory_order_relaxed);
  estimate_.store(usage, std::memory_order_relaxed);
  since_listing_.store(0, std::memory_order_relaxed);
  last_listing_ = std::chrono::steady_clock::now();
}

std::unique_ptr<Env> MakeCachingEnv(RemoteEnv* remote, std::shared_ptr<DiskCache> cache) {
  return std::make_unique<CachingEnv>(remote, std::move(cache));
}

}  // namespace docfeed::internal
