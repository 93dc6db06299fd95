// DiskCache (src/remote/disk_cache.h): reads through the cache equal the object's bytes; what
// was read once is served from disk; damaged copies on disk or on the way are fetched again;
// several instances and processes share one directory; the size limit evicts closed objects,
// oldest first, never open ones. The objects here are in memory, counting what is fetched.
#include "remote/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/file.h"
#include "gtest/gtest.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

struct Fetches {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<int> damage_next{0};  // the next N reads come back with a byte flipped
};

// An object in memory that counts what is fetched from it.
class MemoryObject : public RandomAccessFile {
 public:
  MemoryObject(const std::vector<uint8_t>* bytes, Fetches* fetches, std::string path)
      : bytes_(bytes), fetches_(fetches), path_(std::move(path)) {}
  Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
    if (offset > bytes_->size() || out.size() > bytes_->size() - offset) {
      return ShortReadError(path_, offset, out.size(), 0);
    }
    fetches_->requests.fetch_add(1);
    fetches_->bytes.fetch_add(out.size());
    std::memcpy(out.data(), bytes_->data() + offset, out.size());
    if (fetches_->damage_next.load() > 0 && !out.empty()) {
      fetches_->damage_next.fetch_sub(1);
      out[out.size() / 2] ^= 0x20;
    }
    return Status::Ok();
  }
  uint64_t size_bytes() const override { return bytes_->size(); }
  const std::string& path() const override { return path_; }

 private:
  const std::vector<uint8_t>* bytes_;
  Fetches* fetches_;
  std::string path_;
};

std::shared_ptr<DiskCache> OpenCache(const std::string& dir, uint64_t limit = 0,
                                     uint32_t block = 4096) {
  DiskCacheOptions o;
  o.dir = dir;
  o.limit_bytes = limit;
  o.block_bytes = block;
  Result<std::shared_ptr<DiskCache>> cache = DiskCache::Open(o);
  EXPECT_TRUE(cache.ok()) << cache.status().ToString();
  return *cache;
}

std::unique_ptr<RandomAccessFile> Wrap(DiskCache& cache, const std::vector<uint8_t>& bytes,
                                       Fetches* fetches, const std::string& version = "v1") {
  auto wrapped =
      cache.Wrap(std::make_unique<MemoryObject>(&bytes, fetches, "s3://b/ds/data.arrow"), version);
  EXPECT_TRUE(wrapped.ok()) << wrapped.status().ToString();
  return std::move(*wrapped);
}

std::vector<uint8_t> Read(const RandomAccessFile& f, uint64_t offset, size_t n) {
  std::vector<uint8_t> out(n);
  Status st = f.ReadAt(offset, out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

std::vector<uint8_t> Slice(const std::vector<uint8_t>& v, uint64_t offset, size_t n) {
  return {v.begin() + static_cast<ptrdiff_t>(offset),
          v.begin() + static_cast<ptrdiff_t>(offset + n)};
}

std::vector<std::string> FilesEndingWith(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.ends_with(suffix)) out.push_back(dir + "/" + name);
  }
  closedir(d);
  return out;
}

TEST(DiskCache, ReadsEqualTheObjectAndTheSecondPassComesFromDisk) {
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = RandomBytes((1 << 20) + 123, 1);
  std::mt19937_64 rng(7);
  std::vector<std::pair<uint64_t, size_t>> ranges = {
      {0, 1}, {0, bytes.size()}, {bytes.size() - 1, 1}, {4095, 2}, {4096, 4096}, {8191, 1}};
  for (int i = 0; i < 300; ++i) {
    const uint64_t offset = rng() % bytes.size();
    ranges.push_back({offset, 1 + rng() % std::min<uint64_t>(70000, bytes.size() - offset)});
  }
  Fetches fetches;
  auto cache = OpenCache(dir.path());
  {
    auto file = Wrap(*cache, bytes, &fetches);
    for (const auto& [offset, n] : ranges) {
      ASSERT_EQ(Read(*file, offset, n), Slice(bytes, offset, n)) << offset << "+" << n;
    }
  }
  // The whole object was read once: every block fetched exactly once.
  EXPECT_EQ(fetches.bytes.load(), bytes.size());
  EXPECT_EQ(cache->counters().stored_bytes.load(), bytes.size());
  // A new instance (a new process, a new run) on the same directory fetches nothing.
  fetches.bytes = 0;
  fetches.requests = 0;
  auto again = OpenCache(dir.path());
  auto file = Wrap(*again, bytes, &fetches);
  uint64_t asked = 0;
  for (const auto& [offset, n] : ranges) {
    ASSERT_EQ(Read(*file, offset, n), Slice(bytes, offset, n)) << offset << "+" << n;
    asked += n;
  }
  EXPECT_EQ(fetches.requests.load(), 0u);
  EXPECT_EQ(again->counters().hit_bytes.load(), asked);
  EXPECT_EQ(again->counters().bad_blocks.load(), 0u);
  EXPECT_EQ(file->size_bytes(), bytes.size());
  EXPECT_EQ(file->path(), "s3://b/ds/data.arrow");
}

TEST(DiskCache, ColdReadsFetchWholeBlocksUnderTheRangeOnly) {
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = RandomBytes(40000, 2);  // 10 blocks of 4 KiB, the last short
  Fetches fetches;
  auto cache = OpenCache(dir.path());
  auto file = Wrap(*cache, bytes, &fetches);
  ASSERT_EQ(Read(*file, 5000, 100), Slice(bytes, 5000, 100));  // block 1
  EXPECT_EQ(fetches.requests.load(), 1u);
  EXPECT_EQ(fetches.bytes.load(), 4096u);
  ASSERT_EQ(Read(*file, 0, 10000), Slice(bytes, 0, 10000));  // blocks 0 and 2: two runs
  EXPECT_EQ(fetches.requests.load(), 3u);
  EXPECT_EQ(fetches.bytes.load(), 3 * 4096u);
  ASSERT_EQ(Read(*file, 39000, 1000), Slice(bytes, 39000, 1000));  // the short last block
  EXPECT_EQ(fetches.bytes.load(), 3 * 4096u + (40000 - 9 * 4096));
  // Past the end: the object's short read, nothing cached.
  std::vector<uint8_t> out(10);
  Status st = file->ReadAt(39995, out);
  EXPECT_EQ(st.code(), StatusCode::kIOError) << st.ToString();
  EXPECT_TRUE(file->ReadAt(40000, std::span<uint8_t>()).ok());
}

// A file hashes each block once per entry; damage after that is left to the sample checksums
// above (InvalidateDropsBytesThatArrivedDamaged), the next open hashes again.
TEST(DiskCache, ABlockDamagedOnDiskIsFetchedAgain) {
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = RandomBytes(100000, 3);
  Fetches fetches;
  auto cache = OpenCache(dir.path());
  auto file = Wrap(*cache, bytes, &fetches);
  ASSERT_EQ(Read(*file, 0, bytes.size()), bytes);
  const std::vector<std::string> data = FilesEndingWith(cache->root(), ".data");
  ASSERT_EQ(data.size(), 1u);
  {
    const int fd = open(data[0].c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    const uint8_t junk = static_cast<uint8_t>(bytes[50000] ^ 0xff);
    ASSERT_EQ(pwrite(fd, &junk, 1, 50000), 1);
    close(fd);
  }
  // The next open (a new loader, another process) hashes every block it serves once.
  fetches.bytes = 0;
  auto reopened = Wrap(*cache, bytes, &fetches);
  ASSERT_EQ(Read(*reopened, 0, bytes.size()), bytes);
  EXPECT_EQ(cache->counters().bad_blocks.load(), 1u);
  EXPECT_EQ(fetches.bytes.load(), 4096u);  // block 12 (bytes 49152-53247) alone
  fetches.bytes = 0;
  ASSERT_EQ(Read(*reopened, 0, bytes.size()), bytes);  // stored again, whole
  ASSERT_EQ(Read(*Wrap(*cache, bytes, &fetches), 0, bytes.size()), bytes);
  EXPECT_EQ(fetches.bytes.load(), 0u);
  EXPECT_EQ(cache->counters().bad_blocks.load(), 1u);
}

TEST(DiskCache, InvalidateDropsBytesThatArrivedDamaged) {
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = RandomBytes(20000, 4);
  Fetches fetches;
  auto cache = OpenCache(dir.path());
  auto file = Wrap(*cache, bytes, &fetches);
  fetches.damage_next = 1;  // flipped on the way: the block hash is of the damaged bytes
  EXPECT_NE(Read(*file, 1000, 8000), Slice(bytes, 1000, 8000));
  EXPECT_NE(Read(*file, 1000, 8000), Slice(bytes, 1000, 8000));  // kept so
  // The sample's checksum above fails; its range is invalidated and read again.
  file->Invalidate(1000, 8000);
  EXPECT_EQ(cache->counters().invalidated.load(), 3u);  // blocks 0, 1, 2
  ASSERT_EQ(Read(*file, 1000, 8000), Slice(bytes, 1000, 8000));
  ASSERT_EQ(Read(*file, 0, bytes.size()), bytes);
}

TEST(DiskCache, SharedByProcessesReadingAtOnce) {
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = RandomBytes(3 << 20, 5);
  constexpr int kChildren = 3;
  std::vector<pid_t> children;
  for (int c = 0; c < kChildren; ++c) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Each child: its own cache instance, every block in its own random order, in ranges
      // that straddle blocks, checked against the object.
      Fetches fetches;
      DiskCacheOptions o;
      o.dir = dir.path();
      o.block_bytes = 16384;
      auto cache = DiskCache::Open(o);
      if (!cache.ok()) _exit(2);
      auto file = (*cache)->Wrap(std::make_unique<MemoryObject>(&bytes, &fetches, "o"), "v1");
      if (!file.ok()) _exit(3);
      std::mt19937_64 rng(100 + static_cast<uint64_t>(c));
      std::vector<uint64_t> starts;
      for (uint64_t at = 0; at < bytes.size(); at += 10000) starts.push_back(at);
      std::shuffle(starts.begin(), starts.end(), rng);
      std::vector<uint8_t> out;
      for (int pass = 0; pass < 2; ++pass) {
        for (const uint64_t at : starts) {
          const size_t n = std::min<uint64_t>(10000 + rng() % 30000, bytes.size() - at);
          out.resize(n);
          if (!(*file)->ReadAt(at, out).ok()) _exit(4);
          if (std::memcmp(out.data(), bytes.data() + at, n) != 0) _exit(5);
        }
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  // Between them they stored every block: a new reader fetches nothing.
  Fetches fetches;
  auto cache = OpenCache(dir.path(), 0, 16384);
  auto file = Wrap(*cache, bytes, &fetches);
  ASSERT_EQ(Read(*file, 0, bytes.size()), bytes);
  EXPECT_EQ(fetches.bytes.load(), 0u);
  EXPECT_EQ(cache->counters().bad_blocks.load(), 0u);
}

TEST(DiskCache, TheLimitEvictsClosedObjectsOldestFirstAndNeverOpenOnes) {
  testing::TempDir dir;
  constexpr size_t kObject = 256 << 10;
  // Room for about three objects (each also has a 4 KiB header and its entries).
  constexpr uint64_t kLimit = 3 * kObject + 3 * 16384;
  std::vector<std::vector<uint8_t>> objects;
  for (uint32_t i = 0; i < 6; ++i) objects.push_back(RandomBytes(kObject, 10 + i));
  Fetches fetches;
  auto cache = OpenCache(dir.path(), kLimit, 65536);
  // Object 0 stays open throughout.
  auto pinned = Wrap(*cache, objects[0], &fetches, "v0");
  ASSERT_EQ(Read(*pinned, 0, kObject), objects[0]);
  for (uint32_t i = 1; i < objects.size(); ++i) {
    auto f = Wrap(*cache, objects[i], &fetches, "v" + std::to_string(i));
    ASSERT_EQ(Read(*f, 0, kObject), objects[i]);
    usleep(10000);  // distinct open times
  }
  EXPECT_LE(cache->UsageBytes(), kLimit);
  EXPECT_GT(cache->counters().evicted_objects.load(), 0u);
  // The open one was kept: another opener (another process) finds it on disk.
  fetches.bytes = 0;
  auto second = Wrap(*cache, objects[0], &fetches, "v0");
  ASSERT_EQ(Read(*second, 0, kObject), objects[0]);
  EXPECT_EQ(fetches.bytes.load(), 0u);
  // The newest closed one is still there, the oldest closed one is not.
  auto newest = Wrap(*cache, objects[5], &fetches, "v5");
  ASSERT_EQ(Read(*newest, 0, kObject), objects[5]);
  EXPECT_EQ(fetches.bytes.load(), 0u);
  auto oldest = Wrap(*cache, objects[1], &fetches, "v1");
  ASSERT_EQ(Read(*oldest, 0, kObject), objects[1]);
  EXPECT_EQ(fetches.bytes.load(), kObject);
}

TEST(DiskCache, FullOfOpenObjectsReadsWithoutStoring) {
  testing::TempDir dir;
  const std::vector<uint8_t> a = RandomBytes(512 << 10, 20);
  const std::vector<uint8_t> b = RandomBytes(512 << 10, 21);
  Fetches fetches;
  auto cache = OpenCache(dir.path(), 600 << 10, 65536);
  auto fa = Wrap(*cache, a, &fetches, "a");
  auto fb = Wrap(*cache, b, &fetches, "b");
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t at = 0; at < a.size(); at += 65536) {
      ASSERT_EQ(Read(*fa, at, 65536), Slice(a, at, 65536));
      ASSERT_EQ(Read(*fb, at, 65536), Slice(b, at, 65536));
    }
  }
  // Both open: nothing evicted, storing stopped once past the limit (one block over at most).
  EXPECT_EQ(cache->counters().evicted_objects.load(), 0u);
  EXPECT_LE(cache->UsageBytes(), (600u << 10) + 65536 + 2 * 8192);
  EXPECT_LT(cache->counters().stored_bytes.load(), a.size() + b.size());
}

TEST(DiskCache, ADamagedMapHeaderStartsTheObjectOver) {
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = RandomBytes(50000, 30);
  Fetches fetches;
  auto cache = OpenCache(dir.path());
  { ASSERT_EQ(Read(*Wrap(*cache, bytes, &fetches), 0, bytes.size()), bytes); }
  const std::vector<std::string> maps = FilesEndingWith(cache->root(), ".map");
  ASSERT_EQ(maps.size(), 1u);
  {
    const int fd = open(maps[0].c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, "garbage!", 8, 0), 8);
    close(fd);
  }
  fetches.bytes = 0;
  auto file = Wrap(*cache, bytes, &fetches);
  ASSERT_EQ(Read(*file, 0, bytes.size()), bytes);
  EXPECT_EQ(fetches.bytes.load(), bytes.size());  // started over
  EXPECT_EQ(cache->counters().uncached_opens.load(), 0u);
}

TEST(DiskCache, WithoutAVersionTheObjectIsReadDirectly) {
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = RandomBytes(10000, 31);
  Fetches fetches;
  auto cache = OpenCache(dir.path());
  auto file = Wrap(*cache, bytes, &fetches, "");
  ASSERT_EQ(Read(*file, 0, bytes.size()), bytes);
  ASSERT_EQ(Read(*file, 0, bytes.size()), bytes);
  EXPECT_EQ(fetches.bytes.load(), 2 * bytes.size());
  EXPECT_EQ(cache->counters().uncached_opens.load(), 1u);
  EXPECT_TRUE(FilesEndingWith(cache->root(), ".data").empty());
}

TEST(DiskCache, OpenRefusesADirectoryItCannotMake) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteTextFile(dir.Join("file"), "x").ok());
  DiskCacheOptions o;
  o.dir = dir.Join("file");
  Result<std::shared_ptr<DiskCache>> cache = DiskCache::Open(o);
  ASSERT_FALSE(cache.ok());
  EXPECT_NE(cache.status().message().find(dir.Join("file")), std::string::npos)
      << cache.status().ToString();
  o.dir = dir.path();
  o.block_bytes = 5000;
  EXPECT_EQ(DiskCache::Open(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace docfeed::internal
