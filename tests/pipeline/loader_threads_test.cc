// The loader's threading and lifetime contract (docfeed/loader.h, "Threads:"): several consumer
// threads, Close() from another thread, fork(), the bad-sample count under a slow consumer and
// the pool limit. Every test that could hang runs under a Watchdog.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loader_testing.h"
#include "pipeline/epoch_order.h"
#include "pipeline/loader.h"

namespace docfeed::internal {
namespace {

using std::chrono::seconds;
using testing::kLoaderTestHeight;
using testing::kLoaderTestWidth;
using testing::PackPages;
using testing::TempDir;
using testing::TestOptions;
using testing::Watchdog;

constexpr int kPages = 17;

struct Data {
  TempDir tmp;
  std::string small;  // preprocessed: a sample is a decompress and a pad
  std::string slow;   // large JPEG originals: tens of ms a sample
  Data() {
    small = tmp.Join("small.docfeed");
    PackPages(tmp.path(), small, kPages, 48, false, true);
    slow = tmp.Join("slow.docfeed");
    PackPages(tmp.path(), slow, 6, 1400, true, false);
  }
};

// A function-local static, not a leaked pointer: its TempDir is removed when the test exits.
const Data& Shared() {
  static const Data d;
  return d;
}

std::unique_ptr<Loader> Make(const LoaderOptions& o) {
  Result<std::unique_ptr<Loader>> l = Loader::Create(o);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  return l.ok() ? std::move(*l) : nullptr;
}

// Takes every remaining batch of the current epoch on this thread: their sample ids, in order.
// Any failed Next() is a test failure (and ends the epoch).
std::vector<std::vector<int64_t>> DrainEpoch(Loader& loader) {
  std::vector<std::vector<int64_t>> ids;
  while (true) {
    Result<Batch> b = loader.Next();
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok() || !b->valid()) break;
    ids.emplace_back(b->sample_ids(), b->sample_ids() + b->size());
  }
  return ids;
}

// The sample ids of batch k of `epoch` from the epoch order itself (the reference).
std::vector<std::vector<int64_t>> ExpectedIds(const LoaderOptions& o, uint64_t num_samples,
                                              uint64_t epoch) {
  const EpochOrder order = testing::ReferenceOrder(o, num_samples, epoch);
  std::vector<std::vector<int64_t>> out(order.num_batches());
  for (uint64_t k = 0; k < order.num_batches(); ++k) {
    for (uint32_t j = 0; j < order.BatchSize(k); ++j) {
      out[k].push_back(static_cast<int64_t>(order.SampleAt(order.Position(k, j))));
    }
  }
  return out;
}

TEST(LoaderThreads, ConcurrentConsumersGetEachBatchOnceAndAllSeeTheEnd) {
  Watchdog watchdog("concurrent Next()", seconds(60));
  for (int consumers : {2, 3, 5}) {
    LoaderOptions o = TestOptions(Shared().small, 2);
    o.prefetch = 1 + consumers % 3;
    auto loader = Make(o);
    ASSERT_NE(loader, nullptr);
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      if (epoch > 0) {
        ASSERT_TRUE(loader->StartEpoch(epoch).ok());
      }
      std::mutex mu;
      std::map<uint64_t, std::vector<int64_t>> got;  // batch index -> ids
      int duplicates = 0, errors = 0, ends = 0;
      std::vector<std::thread> threads;
      for (int t = 0; t < consumers; ++t) {
        threads.emplace_back([&] {
          while (true) {
            Result<Batch> b = loader->Next();
            std::lock_guard<std::mutex> lock(mu);
            if (!b.ok()) {
              ++errors;
              return;
            }
            if (!b->valid()) {
              ++ends;
              return;
            }
            std::vector<int64_t> ids(b->sample_ids(), b->sample_ids() + b->size());
            duplicates += got.count(b->index()) ? 1 : 0;
            got[b->index()] = std::move(ids);
          }
        });
      }
      for (std::thread& t : threads) t.join();
      EXPECT_EQ(errors, 0);
      EXPECT_EQ(duplicates, 0);
      EXPECT_EQ(ends, consumers);  // every caller saw the end of the epoch
      const auto want = ExpectedIds(o, kPages, epoch);
      ASSERT_EQ(got.size(), want.size());
      for (uint64_t k = 0; k < want.size(); ++k) {
        EXPECT_EQ(got[k], want[k]) << "batch " << k;
      }
      Result<Batch> after = loader->Next();  // the end stays the end
      ASSERT_TRUE(after.ok());
      EXPECT_FALSE(after->valid());
    }
  }
}

TEST(LoaderThreads, CloseWakesABlockedNextAndLaterCallsAreCancelled) {
  Watchdog watchdog("Close() during Next()", seconds(120));
  int woken = 0;
  for (int round = 0; round < 6; ++round) {
    LoaderOptions o = TestOptions(Shared().slow, 1);
    o.batch_size = 3;
    auto loader = Make(o);
    ASSERT_NE(loader, nullptr);
    std::atomic<bool> returned{false};
    Status status;
    bool got_batch = false;
    std::thread consumer([&] {
      Result<Batch> b = loader->Next();  // a batch takes the one worker ~100 ms
      status = b.status();
      got_batch = b.ok() && b->valid();
      returned = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + 3 * round));
    const bool blocked = !returned;
    loader->Close();
    loader->Close();  // idempotent
    consumer.join();
    if (blocked && !got_batch) {
      ++woken;
      EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
      EXPECT_NE(status.message().find("loader was closed"), std::string::npos);
    }
    Result<Batch> later = loader->Next();
    ASSERT_FALSE(later.ok());
    EXPECT_EQ(later.status().code(), StatusCode::kCancelled);
    EXPECT_EQ(loader->StartEpoch(1).code(), StatusCode::kCancelled);
    EXPECT_EQ(loader->Restore({o.seed, 0, 0}).code(), StatusCode::kCancelled);
    loader.reset();  // after Close(): nothing left to join
  }
  EXPECT_GT(woken, 0) << "Close() never met a blocked Next(); the test did not test it";
}

TEST(LoaderThreads, CloseFromManyThreadsWhileOthersCallNext) {
  Watchdog watchdog("concurrent Close()", seconds(60));
  for (int round = 0; round < 20; ++round) {
    auto loader = Make(TestOptions(Shared().small, 1 + round % 3));
    ASSERT_NE(loader, nullptr);
    std::vector<std::thread> threads;
    std::atomic<int> bad{0};
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        if (t % 2 == 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(100 * round));
          loader->Close();
          return;
        }
        while (true) {
          Result<Batch> b = loader->Next();
          if (!b.ok()) {
            if (b.status().code() != StatusCode::kCancelled) ++bad;
            return;
          }
          if (!b->valid()) loader->StartEpoch(b->epoch() + 1).IgnoreError();  // or Cancelled
        }
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(bad.load(), 0);
  }
}

// In a forked child the loader refuses to run (its workers are the parent's) and destroying it
// or a batch does not touch the parent's locks; the parent's loader keeps working.
TEST(LoaderThreads, AForkedChildGetsAClearErrorAndExitsWithoutHanging) {
  Watchdog watchdog("fork()", seconds(60));
  LoaderOptions o = TestOptions(Shared().small, 3);
  auto loader = Make(o);
  ASSERT_NE(loader, nullptr);
  Result<Batch> held = loader->Next();
  ASSERT_TRUE(held.ok() && held->valid());
  for (int round = 0; round < 5; ++round) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      Result<Batch> b = loader->Next();
      if (b.ok() || b.status().code() != StatusCode::kFailedPrecondition ||
          b.status().message().find("fork") == std::string::npos) {
        code = 1;
      }
      if (loader->StartEpoch(1).code() != StatusCode::kFailedPrecondition) code = 2;
      held->Release();
      loader.reset();
      _exit(code);
    }
    int wstatus = 0;
    const auto deadline = std::chrono::steady_clock::now() + seconds(20);
    pid_t done = 0;
    while ((done = waitpid(pid, &wstatus, WNOHANG)) == 0 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (done == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &wstatus, 0);
      FAIL() << "the forked child hung";
    }
    ASSERT_TRUE(WIFEXITED(wstatus));
    EXPECT_EQ(WEXITSTATUS(wstatus), 0);
    Result<Batch> b = loader->Next();  // the parent goes on
    ASSERT_TRUE(b.ok()) << b.status().ToString();
  }
}

// A bad sample is counted once per epoch however often the workers read it: here the look-ahead
// reads the next epoch's copy of it while the consumer is still in this epoch.
TEST(LoaderThreads, ASkippedSampleIsCountedOnceWithASlowConsumer) {
  TempDir tmp;
  const std::string path = tmp.Join("bad.docfeed");
  PackPages(tmp.path(), path, 10, 30, false, false);
  testing::DamageSample(path, 4);
  for (int threads : {1, 3}) {
    LoaderOptions o = TestOptions(path, threads);
    o.shuffle = false;
    o.on_error = BadSamplePolicy::kSkip;
    o.prefetch = 8;  // room for the whole next epoch ahead
    auto loader = Make(o);
    ASSERT_NE(loader, nullptr);
    const std::vector<std::vector<int64_t>> ids = DrainEpoch(*loader);
    ASSERT_EQ(ids.size(), 4u);
    EXPECT_EQ(ids[1], (std::vector<int64_t>{3, 5, 5}));  // 4 replaced by the next position
    // The slow consumer: wait until the workers have read the next epoch ahead (sample 4
    // included) before asking for the statistics.
    // (10 reads an epoch, plus the failed ones if the read stage counts them.)
    const auto deadline = std::chrono::steady_clock::now() + seconds(20);
    while (loader->stats().read.count < 2 * 10 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_GE(loader->stats().read.count, 2u * 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    LoaderStats s = loader->stats();
    EXPECT_EQ(s.bad_samples, 1u);
    ASSERT_EQ(s.bad_sample_errors.size(), 1u);
    EXPECT_NE(s.bad_sample_errors[0].find("sample 4"), std::string::npos);
    // The next epoch hands out its copy: counted then, once.
    ASSERT_TRUE(loader->StartEpoch(1).ok());
    DrainEpoch(*loader);
    // Replaying epoch 1 reads sample 4 again but it is the same (epoch, sample).
    ASSERT_TRUE(loader->StartEpoch(1).ok());
    DrainEpoch(*loader);
    s = loader->stats();
    EXPECT_EQ(s.bad_samples, 2u);
    EXPECT_EQ(s.bad_sample_errors.size(), 2u);
  }
}

// Two adjacent bad samples: the slot of the first tries both, the slot of the second tries it
// again; still one count per sample.
TEST(LoaderThreads, AdjacentBadSamplesAreCountedOnceEach) {
  TempDir tmp;
  const std::string path = tmp.Join("bad2.docfeed");
  PackPages(tmp.path(), path, 9, 30, false, false);
  testing::DamageSample(path, 4);
  testing::DamageSample(path, 5);
  LoaderOptions o = TestOptions(path, 2);
  o.shuffle = false;
  o.on_error = BadSamplePolicy::kSkip;
  auto loader = Make(o);
  ASSERT_NE(loader, nullptr);
  const std::vector<std::vector<int64_t>> ids = DrainEpoch(*loader);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[1], (std::vector<int64_t>{3, 6, 6}));
  EXPECT_EQ(loader->stats().bad_samples, 2u);
  // The budget counts the same thing: 1 is exceeded by the second sample's batch.
  o.max_bad_samples = 1;
  auto strict = Make(o);
  ASSERT_NE(strict, nullptr);
  ASSERT_TRUE(strict->Next().ok());
  Result<Batch> stop = strict->Next();
  ASSERT_FALSE(stop.ok());
  EXPECT_EQ(stop.status().code(), StatusCode::kResourceExhausted) << stop.status().ToString();
  EXPECT_NE(stop.status().message().find("max_bad_samples"), std::string::npos);
}

// The documented limit: prefetch + max_held batches may be held; asking for one more fails
// (ResourceExhausted naming max_held) instead of blocking, and releasing one lets it go on.
TEST(LoaderThreads, ThePoolLimitIsPrefetchPlusMaxHeld) {
  Watchdog watchdog("pool limit", seconds(60));
  for (int prefetch : {1, 2, 4}) {
    for (int max_held : {1, 3}) {
      LoaderOptions o = TestOptions(Shared().small, 2);
      o.batch_size = 1;
      o.prefetch = prefetch;
      o.max_held = max_held;
      auto loader = Make(o);
      ASSERT_NE(loader, nullptr);
      std::vector<Batch> held;
      for (int i = 0; i < prefetch + max_held; ++i) {
        Result<Batch> b = loader->Next();
        ASSERT_TRUE(b.ok() && b->valid()) << b.status().ToString();
        held.push_back(std::move(*b));
      }
      Result<Batch> over = loader->Next();
      ASSERT_FALSE(over.ok());
      EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
      EXPECT_NE(over.status().message().find("max_held"), std::string::npos);
      held.front().Release();
      Result<Batch> again = loader->Next();
      ASSERT_TRUE(again.ok() && again->valid()) << again.status().ToString();
      EXPECT_EQ(again->index(), static_cast<uint64_t>(prefetch + max_held));
    }
  }
}

}  // namespace
}  // namespace docfeed::internal
