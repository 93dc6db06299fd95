// The range prefetcher (pipeline/range_prefetcher.h) on local datasets (LoaderOptions::
// range_prefetch = kOn): the same batches as reading the files directly, for several thread
// counts, over an epoch boundary and a restart; its bounds; a damaged sample as an error naming
// it (after one refetch) and under on_error = skip the same replacements as without it. The
// faults on the wire (resets, truncation, flipped bytes, latency) are tested through a proxy in
// tests/python/test_loader_remote_faults.py.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "base/fault_env.h"
#include "pipeline/loader_testing.h"
#include "pipeline/range_prefetcher.h"

namespace docfeed::testing {
namespace {

struct Epochs {
  std::vector<std::vector<uint8_t>> pixels;
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<int64_t>> labels;
  LoaderStats stats;
};

// Two epochs (the second through StartEpoch, as the Python front does) and a restart in the
// middle of the second.
Epochs RunEpochs(LoaderOptions o) {
  Epochs out;
  Result<std::unique_ptr<Loader>> loader = Loader::Create(o);
  EXPECT_TRUE(loader.ok()) << loader.status().ToString();
  if (!loader.ok()) return out;
  auto epoch = [&](uint64_t e, uint64_t position, int max_batches) {
    EXPECT_TRUE((*loader)->StartEpoch(e, position).ok());
    for (int n = 0; n != max_batches; ++n) {
      Result<Batch> b = (*loader)->Next();
      EXPECT_TRUE(b.ok()) << b.status().ToString();
      if (!b.ok() || !b->valid()) break;
      const auto* p = static_cast<const uint8_t*>(b->pixels());
      out.pixels.emplace_back(p, p + b->pixel_bytes());
      out.ids.emplace_back(b->sample_ids(), b->sample_ids() + b->size());
      out.labels.emplace_back(b->labels(), b->labels() + b->size() * b->label_length());
    }
  };
  epoch(0, 0, -1);
  epoch(1, 0, 3);
  epoch(1, 6, -1);  // a restart: a new order the prefetcher had not planned
  out.stats = (*loader)->stats();
  return out;
}

class RangePrefetchTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    path_ = dir_.Join("ds");
    PackPages(dir_.path(), path_, 31, 48, /*jpeg=*/true, /*preprocess=*/GetParam());
  }
  LoaderOptions Options(int threads, RangePrefetch prefetch) const {
    LoaderOptions o = TestOptions(path_, threads);
    o.dtype = DType::kUint8;
    o.range_prefetch = prefetch;
    return o;
  }
  TempDir dir_;
  std::string path_;
};

TEST_P(RangePrefetchTest, SameBatchesAsReadingTheFiles) {
  Watchdog watchdog("range prefetch batches", std::chrono::seconds(120));
  for (const char* labels : {"", "-"}) {
    LoaderOptions base = Options(2, RangePrefetch::kOff);
    base.label_column = labels;
    const Epochs want = RunEpochs(base);
    ASSERT_GT(want.pixels.size(), 10u);
    EXPECT_FALSE(want.stats.remote.prefetching);
    for (int threads : {1, 3}) {
      LoaderOptions o = Options(threads, RangePrefetch::kOn);
      o.label_column = labels;
      const Epochs got = RunEpochs(o);
      EXPECT_EQ(got.ids, want.ids) << "threads " << threads << " labels '" << labels << "'";
      EXPECT_EQ(got.labels, want.labels);
      EXPECT_TRUE(got.pixels == want.pixels);
      const RemoteReadStats& r = got.stats.remote;
      EXPECT_TRUE(r.prefetching);
      EXPECT_GT(r.requests, 0u);
      EXPECT_EQ(r.refetches, 0u);
      EXPECT_GT(r.bytes_used, 0u);
      // Only what the workers read is fetched: the samples the restart dropped from the plan
      // were already fetched or in flight, a few at most.
      EXPECT_LE(static_cast<double>(r.bytes_fetched), 1.25 * static_cast<double>(r.bytes_used));
    }
  }
}

// The plan in the file's own order (no shuffle): consecutive samples' ranges are neighbours and
// are coalesced, within the waste bound.
TEST_P(RangePrefetchTest, CoalescesNeighboursWithinTheWasteBound) {
  LoaderOptions o = Options(2, RangePrefetch::kOn);
  o.shuffle = false;
  o.label_column = "-";
  Result<std::unique_ptr<Loader>> loader = Loader::Create(o);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  while (true) {
    Result<Batch> b = (*loader)->Next();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    if (!b->valid()) break;
  }
  const LoaderStats s = (*loader)->stats();
  EXPECT_GT(s.remote.coalesced, 0u);
  EXPECT_LT(s.remote.requests, s.samples);
  // Only the next epoch's batches past the first (the look-ahead the plan does not hold) are
  // read directly.
  EXPECT_LE(s.remote.direct_reads, static_cast<uint64_t>(o.prefetch - 1) * o.batch_size);
  // The plan also holds the next epoch's first batch (the scheduler's look-ahead), which this
  // test never asks for: at most that much more may have been fetched.
  Result<std::unique_ptr<internal::Dataset>> ds = internal::Dataset::Open(path_);
  ASSERT_TRUE(ds.ok());
  uint64_t largest = 0;
  for (uint64_t id = 0; id < (*ds)->size(); ++id) {
    largest = std::max(largest, (*ds)->PlanSample(id, false)->range.length);
  }
  const double look_ahead = static_cast<double>(o.batch_size * largest);
  EXPECT_LE(static_cast<double>(s.remote.bytes_fetched),
            1.05 * static_cast<double>(s.remote.bytes_used) + look_ahead);
}

// A budget smaller than one sample: each sample is fetched when its worker asks (never a
// stall), and the bytes held stay within one request per worker.
TEST_P(RangePrefetchTest, TinyBudgetStillCompletes) {
  Watchdog watchdog("range prefetch tiny budget", std::chrono::seconds(60));
  const Epochs want = RunEpochs(Options(2, RangePrefetch::kOff));
  LoaderOptions o = Options(3, RangePrefetch::kOn);
  o.prefetch_bytes = 1;
  o.prefetch_requests = 2;
  const Epochs got = RunEpochs(o);
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_TRUE(got.pixels == want.pixels);
}

TEST_P(RangePrefetchTest, BytesHeldStayWithinTheBudget) {
  Result<std::unique_ptr<internal::Dataset>> ds = internal::Dataset::Open(path_);
  ASSERT_TRUE(ds.ok());
  uint64_t largest = 0;
  std::vector<uint64_t> ids;
  for (uint64_t id = 0; id < (*ds)->size(); ++id) {
    largest = std::max(largest, (*ds)->PlanSample(id, true)->range.length);
    ids.push_back((id * 7) % (*ds)->size());
  }
  internal::RangePrefetchOptions po;
  po.with_labels = true;
  po.max_bytes = 3 * largest;
  po.max_requests = 3;
  internal::RangePrefetcher prefetcher(ds->get(), po);
  prefetcher.Plan(0, ids);
  uint64_t most = 0;
  for (uint64_t id : ids) {
    most = std::max(most, prefetcher.bytes_held());
    Result<std::unique_ptr<internal::PrefetchedSample>> s = prefetcher.Take(id);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_NE(*s, nullptr);
    internal::ReadScratch scratch;
    Result<internal::SampleBytes> bytes = (*ds)->ReadSample(id, true, &scratch, &(*s)->range());
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    EXPECT_EQ(std::vector<uint8_t>(bytes->image.begin(), bytes->image.end()),
              *(*ds)->ReadImage(id));
  }
  EXPECT_LE(most, 3 * largest);
  EXPECT_EQ(prefetcher.counters().misses.load(), 0u);
  // Not planned: the caller reads it itself.
  Result<std::unique_ptr<internal::PrefetchedSample>> extra = prefetcher.Take(0);
  ASSERT_TRUE(extra.ok());
  EXPECT_EQ(*extra, nullptr);
  prefetcher.Close();
  EXPECT_EQ(prefetcher.Take(1).status().code(), StatusCode::kCancelled);
}

INSTANTIATE_TEST_SUITE_P(OriginalAndPreprocessed, RangePrefetchTest, ::testing::Bool());

// A sample whose stored bytes are damaged: fetched twice (one refetch), then an error naming
// the sample; under skip the same replacements as reading the files directly.
TEST(RangePrefetchDamage, ChecksumMismatchIsRefetchedThenNamesTheSample) {
  TempDir dir;
  const std::string path = dir.Join("ds");
  PackPages(dir.path(), path, 12, 48, true, false);
  DamageSample(path, 5);
  LoaderOptions o = TestOptions(path, 2);
  o.label_column = "-";
  o.shuffle = false;
  o.batch_size = 12;
  o.range_prefetch = RangePrefetch::kOn;
  {
    Result<std::unique_ptr<Loader>> loader = Loader::Create(o);
    ASSERT_TRUE(loader.ok());
    Result<Batch> b = (*loader)->Next();
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.status().code(), StatusCode::kCorruption) << b.status().ToString();
    EXPECT_NE(b.status().ToString().find("sample 5"), std::string::npos) << b.status().ToString();
    EXPECT_NE(b.status().ToString().find("data-"), std::string::npos) << b.status().ToString();
    EXPECT_GE((*loader)->stats().remote.refetches, 1u);
  }
  o.on_error = BadSamplePolicy::kSkip;
  o.batch_size = 4;
  o.range_prefetch = RangePrefetch::kOff;
  const Epochs want = RunEpochs(o);
  o.range_prefetch = RangePrefetch::kOn;
  const Epochs got = RunEpochs(o);
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_TRUE(got.pixels == want.pixels);
  EXPECT_EQ(got.stats.bad_samples, want.stats.bad_samples);
  EXPECT_GE(got.stats.bad_samples, 1u);
}

// Files that say a cache holds some of their ranges (RandomAccessFile::HeldLocally): every
// other one asked about (the samples of these datasets share one record batch), or all.
class HeldFile : public RandomAccessFile {
 public:
  HeldFile(std::unique_ptr<RandomAccessFile> file, bool all) : file_(std::move(file)), all_(all) {}
  Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
    return file_->ReadAt(offset, out);
  }
  uint64_t size_bytes() const override { return file_->size_bytes(); }
  const std::string& path() const override { return file_->path(); }
  bool HeldLocally(uint64_t, uint64_t) const override { return all_ || (asked_++ % 2) == 0; }

 private:
  std::unique_ptr<RandomAccessFile> file_;
  bool all_;
  mutable std::atomic<uint64_t> asked_{0};
};

class HeldEnv : public internal::FaultInjectionEnv {
 public:
  explicit HeldEnv(bool all) : FaultInjectionEnv(Env::Default()), all_(all) {}
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                             FaultInjectionEnv::NewRandomAccessFile(path));
    return std::unique_ptr<RandomAccessFile>(new HeldFile(std::move(file), all_));
  }

 private:
  bool all_;
};

// Ranges a local cache holds are not fetched ahead: the workers read them (from the cache)
// and the batches are the same.
TEST_P(RangePrefetchTest, RangesACacheHoldsAreLeftToTheWorkers) {
  const Epochs want = RunEpochs(Options(2, RangePrefetch::kOff));
  for (const bool all : {true, false}) {
    HeldEnv env(all);
    LoaderOptions o = Options(2, RangePrefetch::kOn);
    o.env = &env;
    const Epochs got = RunEpochs(o);
    EXPECT_EQ(got.ids, want.ids);
    EXPECT_TRUE(got.pixels == want.pixels);
    const RemoteReadStats& r = got.stats.remote;
    EXPECT_TRUE(r.prefetching);
    EXPECT_GT(r.cache_reads, 0u);
    EXPECT_GE(r.direct_reads, r.cache_reads);
    if (all) {
      // Nothing fetched ahead; the samples outside the plan (the look-ahead's) count as misses.
      EXPECT_EQ(r.requests, 0u);
      EXPECT_GE(r.cache_reads, got.stats.samples / 2);
    } else {
      EXPECT_GT(r.requests, 0u);
      EXPECT_LT(r.cache_reads, got.stats.samples);
    }
  }
}

}  // namespace
}  // namespace docfeed::testing
