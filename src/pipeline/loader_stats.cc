#include "pipeline/loader_stats.h"

#include <nlohmann/json.hpp>

namespace docfeed::internal {
namespace {

constexpr size_t kMaxRecordedErrors = 16;

nlohmann::json StageJson(const StageTime& t) { return {{"count", t.count}, {"nanos", t.nanos}}; }

}  // namespace

uint64_t StatsRecorder::RecordBad(uint64_t epoch, uint64_t id, const std::string& message) {
  MutexLock lock(&mu_);
  if (!bad_seen_.emplace(epoch, id).second) return bad_samples_.load(std::memory_order_relaxed);
  if (bad_errors_.size() < kMaxRecordedErrors) bad_errors_.push_back(message);
  return bad_samples_.fetch_add(1, std::memory_order_relaxed) + 1;
}

LoaderStats StatsRecorder::Snapshot() const {
  LoaderStats s;
  s.read = read.Load();
  s.decode = decode.Load();
  s.resize = resize.Load();
  s.decode_resize = decode_resize.Load();
  s.pad_normalize = pad_normalize.Load();
  s.buffer_wait = buffer_wait.Load();
  s.consumer_wait = consumer_wait.Load();
  s.batches = batches.load(std::memory_order_relaxed);
  s.samples = samples.load(std::memory_order_relaxed);
  s.stored_bytes = stored_bytes.load(std::memory_order_relaxed);
  s.bad_samples = bad_samples();
  MutexLock lock(&mu_);
  s.bad_sample_errors = bad_errors_;
  return s;
}

}  // namespace docfeed::internal

namespace docfeed {

std::string LoaderStatsJson(const LoaderStats& s) {
  const StageTime* stages[] = {&s.read,          &s.decode,      &s.resize,       &s.decode_resize,
                               &s.pad_normalize, &s.buffer_wait, &s.consumer_wait};
  nlohmann::ordered_json j;
  for (size_t i = 0; i < std::size(stages); ++i)
    j[internal::kLoaderStageNames[i]] = internal::StageJson(*stages[i]);
  j["batches"] = s.batches;
  j["samples"] = s.samples;
  j["stored_bytes"] = s.stored_bytes;
  j["bad_samples"] = s.bad_samples;
  j["bad_sample_errors"] = s.bad_sample_errors;
  j["ready_depth_sum"] = s.ready_depth_sum;
  j["pool_buffers"] = s.pool_buffers;
  j["pool_bytes"] = s.pool_bytes;
  const RemoteReadStats& r = s.remote;
  j["remote"] = {{"prefetching", r.prefetching},
                 {"requests", r.requests},
                 {"bytes_fetched", r.bytes_fetched},
                 {"bytes_used", r.bytes_used},
                 {"coalesced", r.coalesced},
                 {"refetches", r.refetches},
                 {"direct_reads", r.direct_reads},
                 {"rereads", r.rereads},
                 {"retries", r.retries},
                 {"throttled", r.throttled},
                 {"throttle_waits", r.throttle_waits},
                 {"fetch_wait", internal::StageJson(r.fetch_wait)},
                 {"peak_bytes", r.peak_bytes},
                 {"cached", r.cached},
                 {"cache_reads", r.cache_reads},
                 {"cache_hit_bytes", r.cache_hit_bytes},
                 {"cache_fetched_bytes", r.cache_fetched_bytes},
                 {"cache_stored_bytes", r.cache_stored_bytes},
                 {"cache_bad_blocks", r.cache_bad_blocks},
                 {"cache_invalidated", r.cache_invalidated},
                 {"cache_io_errors", r.cache_io_errors},
                 {"cache_evicted_bytes", r.cache_evicted_bytes}};
  // Invalid UTF-8 in a message (a file name) is replaced rather than thrown on.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace docfeed
