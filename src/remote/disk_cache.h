// DiskCache: a local copy of the remote objects a loader reads, on disk, shared by the processes
// of one node (the ranks of a job, the next run), each byte checked before it is served.
//
// Layout (docs/format.md, "The read cache"): DIR/docfeed-cache-v1/KEY.data and KEY.map per
// object version, KEY a 128-bit hash of the version (RemoteEnv's: URL, size, ETag,
// Last-Modified). The .data file is sparse, the object's size, holding the blocks fetched so far
// at their own offsets; the .map file is a 4 KiB header (magic, block size, object size, the
// version text) then one 8-byte entry per block: 0 while the block is absent, else its XXH3-64
// with the low bit set.
//
//   ReadAt(range) ── the blocks under it ──► entries present: pread, XXH3 of each block against
//        │                                   its entry (a mismatch: the block is absent); once
//        │                                   per block and entry in an open file
//        │                                   absent: one ranged read of each run of them from
//        ▼                                   the object, whole blocks; stored, data then entry
//   exactly the bytes asked for
//
// Why this is safe with several processes and no lock on the data: every writer of a block
// writes the same bytes (the same object version) and writes its entry only after its data, so
// a reader sees either an absent block or one whose bytes hash to its entry; torn or stale
// views fail the hash and count as absent. A killed process leaves blocks without entries
// (fetched again) and never an entry without its data on the same machine; after a power loss an
// entry may outlive its data, and the hash catches that too.
//
// Bytes that arrived damaged but intact on disk would pass the block hash: the reader above
// checks every sample against the index's XXH3 and calls RandomAccessFile::Invalidate on a
// mismatch, which clears the entries of those blocks, so the next read fetches them again.
//
// Size limit: each process adds up what it stores, and lists the cache (the allocated bytes of
// every object, all processes' writes included) after each 64th of the limit and before every
// store once within 10% of it. A store that would pass the limit first removes whole objects,
// least recently opened first, down to 90% of the limit. Processes storing at the same moment
// can pass the limit by one fetched run each. An object some process has open holds
// a shared flock on its .map and is never removed (eviction takes an exclusive one without
// waiting, and an opener that finds its .map removed under it opens again). When only open
// objects are left and the cache is still full, new blocks are not stored (the reads still
// succeed, from the object) until a later listing finds room: the cache keeps what fits rather
// than evicting what the epoch needs next.
//
// Errors: Open fails naming the directory when it cannot be created or written. Afterwards the
// cache never fails a read that the object could serve: a block that cannot be read or stored
// locally is fetched from the object (and counted).
//
// Thread-safe: every method, and every method of the files it wraps.
#ifndef DOCFEED_REMOTE_DISK_CACHE_H_
#define DOCFEED_REMOTE_DISK_CACHE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/env.h"
#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "docfeed/status.h"

namespace docfeed::internal {

struct DiskCacheOptions {
  std::string dir;                  // created (with its parents) if missing
  uint64_t limit_bytes = 0;         // disk the cache may take; 0: no limit
  uint32_t block_bytes = 64 << 10;  // a power of two, 4 KiB to 64 MiB
};

// Counters over the cache's life in this process (relaxed atomics).
struct DiskCacheCounters {
  std::atomic<uint64_t> hit_bytes{0};      // bytes served from the cache (asked-for bytes only)
  std::atomic<uint64_t> fetched_bytes{0};  // bytes read from objects (whole blocks)
  std::atomic<uint64_t> stored_bytes{0};   // of those, bytes written to the cache
  std::atomic<uint64_t> bad_blocks{0};     // cached blocks whose bytes failed their hash
  std::atomic<uint64_t> invalidated{0};    // blocks dropped by Invalidate (a failed check above)
  std::atomic<uint64_t> io_errors{0};      // reads or writes of the cache's files that failed
  std::atomic<uint64_t> evicted_bytes{0};  // allocated bytes of the objects this process removed
  std::atomic<uint64_t> evicted_objects{0};
  std::atomic<uint64_t> uncached_opens{0};  // objects read without the cache (no version, a
                                            // damaged .map held open elsewhere)
};

class DiskCache : public std::enable_shared_from_this<DiskCache> {
 public:
  // Creates DIR/docfeed-cache-v1 if needed and checks that it can be written.
  static Result<std::shared_ptr<DiskCache>> Open(const DiskCacheOptions& options);
  ~DiskCache();

  // `object` read through the cache, as the version `version` (RemoteEnv::NewRandomAccessFile's
  // text); an empty version (nothing identifies it) gives `object` back unchanged.
  Result<std::unique_ptr<RandomAccessFile>> Wrap(std::unique_ptr<RandomAccessFile> object,
                                                 const std::string& version);

  // The disk the cache takes now (allocated bytes of every object), listed.
  uint64_t UsageBytes() const;
  const DiskCacheCounters& counters() const { return counters_; }
  const std::string& root() const { return root_; }
  uint32_t block_bytes() const { return options_.block_bytes; }

  // Called by the cached files before storing `bytes`: whether they may be stored now. Lists
  // the cache (and evicts) when this process's estimate nears the limit; false while the cache
  // is full of open objects (listed again at most every few seconds).
  bool Reserve(uint64_t bytes) DOCFEED_EXCLUDES(evict_mu_);
  DiskCacheCounters& mutable_counters() { return counters_; }

 private:
  explicit DiskCache(const DiskCacheOptions& options, std::string root);
  // Lists the cache; when `adding` more bytes would pass the limit, removes closed objects,
  // oldest first, until they fit within 90% of it. Storing stops when they do not fit at all.
  void Evict(uint64_t adding) DOCFEED_REQUIRES(evict_mu_);

  const DiskCacheOptions options_;
  const std::string root_;  // DIR/docfeed-cache-v1
  DiskCacheCounters counters_;
  // The usage at the last listing plus what this process stored since, and the part since.
  std::atomic<uint64_t> estimate_{0};
  std::atomic<uint64_t> since_listing_{0};
  std::atomic<bool> storing_{true};
  Mutex evict_mu_;
  std::chrono::steady_clock::time_point last_listing_ DOCFEED_GUARDED_BY(evict_mu_);
};

class RemoteEnv;

// An Env over `remote` (which must outlive it) that opens files for positioned reads (a dataset's
// data files) through `cache`; everything else (manifests, indexes, listings: small, and always
// read fresh) goes to `remote` unchanged, as do the writes it refuses.
std::unique_ptr<Env> MakeCachingEnv(RemoteEnv* remote, std::shared_ptr<DiskCache> cache);

}  // namespace docfeed::internal

#endif  // DOCFEED_REMOTE_DISK_CACHE_H_
