// Concurrency and lifetime torture: several threads call Next / Release / state / Restore /
// StartEpoch / stats / Close on one loader in seeded random interleavings for a bounded time.
// Each call must succeed or return one of the errors its contract names (never hang, crash or
// hand out a wrong or torn batch), and afterwards the loader's invariants must hold. Runs under
// ThreadSanitizer (make test-tsan) and ASan (build/asan).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/hash.h"
#include "loader_testing.h"
#include "pipeline/epoch_order.h"
#include "pipeline/loader.h"

namespace docfeed::internal {
namespace {

using testing::PackPages;
using testing::TempDir;
using testing::TestOptions;
using testing::Watchdog;

constexpr int kPages = 17;
constexpr int kThreads = 4;

const std::string& Dataset() {
  // Function-local statics, not leaked pointers: the TempDir is removed when the test exits.
  static const TempDir tmp;
  static const std::string path = [] {
    std::string p = tmp.Join("torture.docfeed");
    PackPages(tmp.path(), p, kPages, 40, false, true);
    return p;
  }();
  return path;
}

uint64_t ExpectedSample(const LoaderOptions& o, uint64_t epoch, uint64_t position) {
  return testing::ReferenceOrder(o, kPages, epoch).SampleAt(position);
}

uint64_t PixelHash(const Batch& b) {
  return Hash64({static_cast<const uint8_t*>(b.pixels()), b.pixel_bytes()});
}

// A batch is right when its ids are the positions its resume state says it covers, and each
// slot's label row is that sample's ([id]; the test dataset's labels), so no slot is stale.
std::string CheckBatch(const LoaderOptions& o, const Batch& b) {
  const LoaderState& s = b.resume_state();
  if (s.seed != o.seed || s.position < b.size()) return "bad resume state";
  if (b.label_length() != 1) return "label length " + std::to_string(b.label_length());
  for (uint32_t j = 0; j < b.size(); ++j) {
    const uint64_t want = ExpectedSample(o, b.epoch(), s.position - b.size() + j);
    if (static_cast<uint64_t>(b.sample_ids()[j]) != want) {
      return "slot " + std::to_string(j) + " holds sample " + std::to_string(b.sample_ids()[j]) +
             ", the order says " + std::to_string(want);
    }
    if (b.labels()[j] != b.sample_ids()[j]) return "slot " + std::to_string(j) + " label";
  }
  return "";
}

struct Held {
  Batch batch;
  uint64_t hash = 0;
};

struct Shared {
  LoaderOptions options;
  Loader* loader = nullptr;
  std::atomic<bool> closing{false};  // set just before Close() is called
  std::atomic<bool> closed{false};   // set once it returned
  std::atomic<int> failures{0};
  std::atomic<uint64_t> ops{0};
  std::mutex mu;
  std::vector<std::string> messages;
  void Fail(const std::string& what) {
    ++failures;
    std::lock_guard<std::mutex> lock(mu);
    if (messages.size() < 10) messages.push_back(what);
  }
};

// Releases a held batch after checking that nothing wrote into it while it was held.
void ReleaseOne(Shared& sh, std::vector<Held>& held, size_t i) {
  if (PixelHash(held[i].batch) != held[i].hash) sh.Fail("a held batch changed");
  held[i].batch.Release();
  held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
}

// `s` is what `op` returned; `closed_before` whether Close() had returned before it started.
void CheckCode(Shared& sh, const char* op, const Status& s, bool closed_before,
               std::initializer_list<StatusCode> allowed) {
  if (s.ok()) {
    if (closed_before) sh.Fail(std::string(op) + " succeeded after Close()");
    return;
  }
  for (StatusCode c : allowed) {
    if (s.code() != c) continue;
    if (c == StatusCode::kCancelled && !sh.closing) sh.Fail(std::string(op) + " cancelled");
    return;
  }
  sh.Fail(std::string(op) + ": " + s.ToString());
}

void Torture(Shared& sh, uint32_t seed, int thread, std::chrono::steady_clock::time_point end) {
  std::mt19937 rng(seed * 131 + static_cast<uint32_t>(thread));
  std::vector<Held> held;
  Loader& l = *sh.loader;
  while (std::chrono::steady_clock::now() < end) {
    ++sh.ops;
    const uint32_t op = static_cast<uint32_t>(rng() % 100);
    const bool closed_before = sh.closed;
    if (op < 45 && held.size() < 2) {
      Result<Batch> b = l.Next();
      if (!b.ok()) {
        CheckCode(sh, "Next", b.status(), closed_before,
                  {StatusCode::kResourceExhausted, StatusCode::kCancelled});
      } else if (closed_before) {
        sh.Fail("Next gave a batch after Close()");
      } else if (b->valid()) {
        const std::string bad = CheckBatch(sh.options, *b);
        if (!bad.empty()) sh.Fail(bad);
        held.push_back({std::move(*b), 0});
        held.back().hash = PixelHash(held.back().batch);
      }
    } else if (op < 70) {
      if (!held.empty()) ReleaseOne(sh, held, rng() % held.size());
    } else if (op < 78) {
      const LoaderState s = l.state();
      if (s.seed != sh.options.seed || s.position > kPages) sh.Fail("state out of range");
    } else if (op < 86) {
      const LoaderState s{sh.options.seed, rng() % 3, rng() % (kPages + 1)};
      CheckCode(sh, "Restore", l.Restore(s), closed_before, {StatusCode::kCancelled});
    } else if (op < 94) {
      CheckCode(sh, "StartEpoch", l.StartEpoch(rng() % 3, 0), closed_before,
                {StatusCode::kCancelled});
    } else if (op < 99) {
      static_cast<void>(l.stats());
    } else if (thread == 0 && seed % 2 == 1 && !sh.closing) {
      sh.closing = true;  // a call racing Close() may see Cancelled from here on
      l.Close();
      sh.closed = true;
    }
  }
  while (!held.empty()) ReleaseOne(sh, held, held.size() - 1);
}

// After the storm: a full epoch in order, every buffer back in the pool, Close() final.
void CheckAfter(Shared& sh) {
  Loader& l = *sh.loader;
  const LoaderOptions& o = sh.options;
  if (!sh.closed) {
    ASSERT_TRUE(l.Restore({o.seed, 1, 0}).ok());
    std::vector<Batch> kept;
    uint64_t positions = 0;
    while (true) {
      Result<Batch> b = l.Next();
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      if (!b->valid()) break;
      EXPECT_EQ(CheckBatch(o, *b), "");
      EXPECT_EQ(b->epoch(), 1u);
      EXPECT_EQ(b->index(), kept.size());
      positions += b->size();
      kept.push_back(std::move(*b));  // 6 batches < prefetch + max_held: every buffer is free
    }
    EXPECT_EQ(positions, static_cast<uint64_t>(kPages));
    l.Close();
  }
  Result<Batch> after = l.Next();
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), StatusCode::kCancelled);
}

TEST(LoaderTorture, RandomInterleavingsFromSeveralThreads) {
  Watchdog watchdog("the loader torture test", std::chrono::seconds(120));
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    Shared sh;
    sh.options = TestOptions(Dataset(), 1 + static_cast<int>(seed % 3));
    sh.options.prefetch = 1 + static_cast<int>(seed % 3);
    sh.options.max_held = 6;  // every thread may hold a few
    Result<std::unique_ptr<Loader>> loader = Loader::Create(sh.options);
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    sh.loader = loader->get();
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1200);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&sh, seed, t, end] { Torture(sh, seed, t, end); });
    }
    for (std::thread& t : threads) t.join();
    for (const std::string& m : sh.messages) ADD_FAILURE() << "seed " << seed << ": " << m;
    EXPECT_EQ(sh.failures.load(), 0);
    EXPECT_GT(sh.ops.load(), 100u);
    CheckAfter(sh);
  }
}

}  // namespace
}  // namespace docfeed::internal
