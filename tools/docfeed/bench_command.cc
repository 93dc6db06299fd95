// docfeed bench: runs the loader with no consumer work and reports what it delivers: pages/s,
// stored MB/s, time per stage, waits, time to the first batch and memory. With --baseline it
// also times, in the same run and on one thread, the floor the loader is held to: reading and
// decoding the stored images alone (plus the exact resize when the dataset holds originals).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "args.h"
#include "commands.h"
#include "docfeed/dataset.h"
#include "docfeed/image.h"
#include "docfeed/loader.h"
#include "docfeed/preprocess.h"
#include "docfeed/remote.h"
#include "progress.h"

namespace docfeed::tools {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kBenchHelp[] =
    "usage: docfeed bench DATASET [options]\n"
    "\n"
    "Runs the loader on DATASET with no consumer and prints pages/s, stored MB/s, the time per\n"
    "stage, waits, time to first batch and peak memory.\n"
    "\n"
    "options:\n"
    "  --batch-size N     samples per batch (default 8)\n"
    "  --threads N        decode workers (default: all cores)\n"
    "  --epochs E         epochs to run (default 1)\n"
    "  --max-batches N    stop each epoch after N batches (default: the whole epoch)\n"
    "  --step-ms N        hold each batch N ms before asking for the next, as a training step\n"
    "                     on an accelerator would (default 0: take each batch at once)\n"
    "  --size HxW         output size (default: the size a preprocessed dataset was packed for,\n"
    "                     else 1553x1200)\n"
    "  --hf-version 4|5   the DonutImageProcessor generation of original images (default 4; a\n"
    "                     preprocessed dataset uses the one it was packed for)\n"
    "  --backend B        with --hf-version 5: pil (default) or torchvision\n"
    "  --dtype T          uint8 (padded pixels, HWC), float32 (default), float16, bfloat16\n"
    "  --pad P            random (default) or center\n"
    "  --prefetch N       batches filled ahead (default 4)\n"
    "  --range-prefetch M auto (default: for s3:// and http(s):// datasets), on or off: read the\n"
    "                     samples' byte ranges by the index ahead of the workers\n"
    "  --prefetch-mb N    fetched and not yet used, at most (default 32)\n"
    "  --prefetch-requests N  range requests in flight, at most (default 8)\n"
    "  --cache-dir DIR    s3:// and http(s):// datasets: keep what is read in DIR, shared with\n"
    "                     every process that names it, each block checked when first read\n"
    "  --cache-limit-mb N the disk the cache may take (default 0: no limit)\n"
    "  --seed N           shuffle and padding seed (default 0)\n"
    "  --baseline N       also time reading + decoding N stored images (+ the exact resize for\n"
    "                     original images) on one thread, in this run (default 0: skip)\n"
    "  --json             print one JSON object instead of the table (\"preset\" and\n"
    "                     \"preset_options\": the preset run and its settings)\n";

struct BenchConfig {
  LoaderOptions loader;
  int epochs = 1;
  uint64_t max_batches = 0;
  int step_ms = 0;  // the consumer's time per batch (sleeping: a step on another device)
  int baseline_samples = 0;
  bool json = false;
  bool size_from_dataset = false;  // no --size: the packed size, else the recipe's
};

Result<DType> ParseDType(const std::string& s) {
  if (s == "uint8") return DType::kUint8;
  if (s == "float32") return DType::kFloat32;
  if (s == "float16") return DType::kFloat16;
  if (s == "bfloat16") return DType::kBfloat16;
  return InvalidArgumentError("--dtype must be uint8, float32, float16 or bfloat16");
}

Result<std::pair<int, int>> ParseSize(const std::string& s) {
  const size_t x = s.find('x');
  if (x == std::string::npos) return InvalidArgumentError("--size must look like 1553x1200");
  DOCFEED_ASSIGN_OR_RETURN(int h, ParseInt("--size", s.substr(0, x), 1, 65535));
  DOCFEED_ASSIGN_OR_RETURN(int w, ParseInt("--size", s.substr(x + 1), 1, 65535));
  return std::make_pair(h, w);
}

Result<BenchConfig> ToConfig(const ParsedArgs& p) {
  if (p.positional.size() != 1) return InvalidArgumentError("bench takes one dataset");
  BenchConfig c;
  LoaderOptions& o = c.loader;
  o.path = p.positional[0];
  DOCFEED_ASSIGN_OR_RETURN(int batch,
                           ParseInt("--batch-size", p.Get("--batch-size", "8"), 1, 1 << 16));
  o.batch_size = static_cast<uint32_t>(batch);
  DOCFEED_ASSIGN_OR_RETURN(o.num_threads, ParseInt("--threads", p.Get("--threads", "0"), 0, 1024));
  DOCFEED_ASSIGN_OR_RETURN(c.epochs, ParseInt("--epochs", p.Get("--epochs", "1"), 1, 1 << 20));
  DOCFEED_ASSIGN_OR_RETURN(int max_batches,
                           ParseInt("--max-batches", p.Get("--max-batches", "0"), 0, 1 << 30));
  c.max_batches = static_cast<uint64_t>(max_batches);
  DOCFEED_ASSIGN_OR_RETURN(c.step_ms, ParseInt("--step-ms", p.Get("--step-ms", "0"), 0, 1 << 20));
  DOCFEED_ASSIGN_OR_RETURN(o.prefetch, ParseInt("--prefetch", p.Get("--prefetch", "4"), 1, 1024));
  const std::string range = p.Get("--range-prefetch", "auto");
  if (range != "auto" && range != "on" && range != "off") {
    return InvalidArgumentError("--range-prefetch must be auto, on or off");
  }
  o.range_prefetch = range == "on"    ? RangePrefetch::kOn
                     : range == "off" ? RangePrefetch::kOff
                                      : RangePrefetch::kAuto;
  DOCFEED_ASSIGN_OR_RETURN(int prefetch_mb,
                           ParseInt("--prefetch-mb", p.Get("--prefetch-mb", "32"), 1, 1 << 20));
  o.prefetch_bytes = static_cast<uint64_t>(prefetch_mb) << 20;
  DOCFEED_ASSIGN_OR_RETURN(
      o.prefetch_requests,
      ParseInt("--prefetch-requests", p.Get("--prefetch-requests", "8"), 1, 256));
  o.cache_dir = p.Get("--cache-dir", "");
  DOCFEED_ASSIGN_OR_RETURN(
      int cache_limit_mb, ParseInt("--cache-limit-mb", p.Get("--cache-limit-mb", "0"), 0, 1 << 30));
  o.cache_limit_bytes = static_cast<uint64_t>(cache_limit_mb) << 20;
  DOCFEED_ASSIGN_OR_RETURN(int seed, ParseInt("--seed", p.Get("--seed", "0"), 0, 1 << 30));
  o.seed = static_cast<uint64_t>(seed);
  DOCFEED_ASSIGN_OR_RETURN(c.baseline_samples,
                           ParseInt("--baseline", p.Get("--baseline", "0"), 0, 1 << 20));
  DOCFEED_ASSIGN_OR_RETURN(o.dtype, ParseDType(p.Get("--dtype", "float32")));
  o.layout = o.dtype == DType::kUint8 ? OutputLayout::kHwc : OutputLayout::kChw;
  const std::string pad = p.Get("--pad", "random");
  if (pad != "random" && pad != "center") {
    return InvalidArgumentError("--pad must be random or center");
  }
  o.preset.pad = pad == "center" ? PadMode::kCenter : PadMode::kRandom;
  o.remainder = Remainder::kPartial;
  c.json = p.Has("--json");
  // The size: given, else (SizeFromDataset, once the arguments are known to be right) the
  // packed one, else the recipe's.
  const std::string size = p.Get("--size", "");
  c.size_from_dataset = size.empty();
  DOCFEED_ASSIGN_OR_RETURN(auto hw, ParseSize(size.empty() ? "1553x1200" : size));
  o.preset.donut.height = hw.first;
  o.preset.donut.width = hw.second;
  DOCFEED_ASSIGN_OR_RETURN(const Generation generation, ParseGeneration(p));
  o.preset.donut.hf_version = generation.hf_version;
  DOCFEED_ASSIGN_OR_RETURN(o.preset.donut.backend, ParseDonutBackend(generation.backend));
  return c;
}

// Reads the dataset: its errors are data errors (exit 1), not usage errors.
Status SizeFromDataset(BenchConfig* c) {
  LoaderOptions& o = c->loader;
  DOCFEED_ASSIGN_OR_RETURN(const DatasetInfo info, ReadDatasetInfo(o.path));
  if (info.preset == "qwen2-vl" || info.preset == "qwen2.5-vl") {
    o.preset.name = info.preset;
    o.preset.qwen_vl.min_pixels = info.min_pixels;
    o.preset.qwen_vl.max_pixels = info.max_pixels;
    o.preset.qwen_vl.patch_size = info.patch_size;
    o.preset.qwen_vl.merge_size = info.merge_size;
    o.preset.qwen_vl.hf_version = info.hf_version;
    DOCFEED_ASSIGN_OR_RETURN(o.preset.qwen_vl.backend, ParseDonutBackend(info.backend));
    return Status::Ok();
  }
  if (info.preset == "nougat") {
    o.preset.name = info.preset;
    o.preset.nougat.height = info.height;
    o.preset.nougat.width = info.width;
    o.preset.nougat.align_long_axis = info.align_long_axis;
    o.preset.nougat.hf_version = info.hf_version;
    return Status::Ok();
  }
  if (info.preset == "idefics3") {
    o.preset.name = info.preset;
    o.preset.idefics3.longest_edge = info.longest_edge;
    o.preset.idefics3.max_image_size = info.max_image_size;
    o.preset.idefics3.do_image_splitting = info.do_image_splitting;
    o.preset.idefics3.hf_version = info.hf_version;
    return Status::Ok();
  }
  if (info.preset == "pix2struct") {
    o.preset.name = info.preset;
    o.preset.pix2struct.hf_version = info.hf_version;
    // Pages at their own size: max_patches is the default; stored patches: their settings.
    if (info.stored_form == "patches") {
      o.preset.pix2struct.max_patches = info.max_patches;
      o.preset.pix2struct.patch_height = info.patch_height;
      o.preset.pix2struct.patch_width = info.patch_width;
    }
    return Status::Ok();
  }
  if (!info.preset.empty()) {
    o.preset.donut.height = info.height;
    o.preset.donut.width = info.width;
    o.preset.donut.align_long_axis = info.align_long_axis;
    o.preset.donut.hf_version = info.hf_version;
    DOCFEED_ASSIGN_OR_RETURN(o.preset.donut.backend, ParseDonutBackend(info.backend));
  }
  return Status::Ok();
}

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// This process's peak RSS: /proc/self/status's VmHWM, the high-water mark of its own address
// space. Not getrusage's ru_maxrss: Linux carries that over execve from the process that forked
// this one, so `bench` started from a large process (a Python harness holding 1.5 GB) reported
// the harness's peak instead of its own. ru_maxrss only where /proc cannot be read.
uint64_t PeakRssBytes() {
  if (FILE* f = std::fopen("/proc/self/status", "r"); f != nullptr) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof(line), f) != nullptr) {
      found = std::sscanf(line, "VmHWM: %llu kB", &kib) == 1;
    }
    std::fclose(f);
    if (found) return static_cast<uint64_t>(kib) * 1024;
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

uint64_t CurrentRssBytes() {
  long pages = 0;
  long resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<uint64_t>(resident) * 4096;
}

// The single-thread floor, in seconds per page: read the stored image of the first `n` samples
// and view its PGM/PPM raster (preprocessed datasets), or run the preset's exact Prepare on it
// (the loader's own, with the recorded EXIF orientation) when the dataset holds originals.
Result<double> MeasureBaseline(const LoaderOptions& o, int n) {
  DOCFEED_ASSIGN_OR_RETURN(const std::unique_ptr<DatasetReader> reader,
                           DatasetReader::Open(o.path, o.env));
  PresetOptions preset_options;
  preset_options.donut = o.preset.donut;
  DOCFEED_ASSIGN_OR_RETURN(const Preset preset, Preset::Create(preset_options));
  const bool preprocessed = reader->preprocessed();
  const uint64_t count = std::min<uint64_t>(static_cast<uint64_t>(n), reader->size());
  if (count == 0) return 0.0;
  uint64_t checksum = 0;  // keeps the work observable
  Image scratch;          // reused across pages, as a loader worker reuses its own
  // Two passes over the same pages, the first untimed: the loader is measured warm too (page
  // cache, mapping, scratch buffers), so the floor must be.
  Clock::time_point start;
  for (int pass = 0; pass < 2; ++pass) {
    start = Clock::now();
    for (uint64_t id = 0; id < count; ++id) {
      DOCFEED_ASSIGN_OR_RETURN(const StoredSample s, reader->Read(id));
      if (preprocessed) {
        // Read() validated the PGM/PPM (or, for Pix2Struct's stored patches, PFM) header and
        // located the raster, as the loader's ViewPpm / ViewPfm; a page stored in another
        // container would need a decode the loader does too.
        if (s.pixels.empty()) {
          return UnsupportedError(o.path + ": sample " + std::to_string(id) +
                                  ": preprocessed page not stored as PGM/PPM or PFM");
        }
        checksum += s.pixels[0];
        continue;
      }
      PrepareOptions prepare;
      prepare.orientation = s.orientation;
      DOCFEED_RETURN_IF_ERROR(preset.Prepare(s.bytes, prepare, &scratch));
      checksum += scratch.pixels[0];
    }
  }
  const double seconds = Seconds(start);
  if (checksum == ~uint64_t{0}) std::fputs("", stderr);
  return seconds / static_cast<double>(count);
}

struct RunResult {
  double first_batch_seconds = 0;
  double seconds = 0;
  uint64_t pages = 0;
  uint64_t batches = 0;
  std::vector<uint64_t> rss_after_epoch;
  LoaderStats stats;
  RemoteStats remote;  // the process-wide remote Env's requests over the run (Create included)
  int threads = 0;
  bool preprocessed = false;
};

Result<RunResult> RunLoader(const BenchConfig& c) {
  RunResult r;
  const RemoteStats remote_before = GetRemoteStats();
  const Clock::time_point created = Clock::now();
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<Loader> loader, Loader::Create(c.loader));
  r.preprocessed = loader->preprocessed();
  r.threads = c.loader.num_threads > 0
                  ? c.loader.num_threads
                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ProgressBar bar("bench");
  Clock::time_point start = created;
  for (int epoch = 0; epoch < c.epochs; ++epoch) {
    DOCFEED_RETURN_IF_ERROR(loader->StartEpoch(static_cast<uint64_t>(epoch)));
    uint64_t total = loader->num_batches();
    if (c.max_batches > 0) total = std::min(total, c.max_batches);
    for (uint64_t k = 0; k < total; ++k) {
      DOCFEED_ASSIGN_OR_RETURN(Batch batch, loader->Next());
      if (!batch.valid()) break;
      if (r.batches == 0) {
        r.first_batch_seconds = Seconds(created);
        start = Clock::now();  // throughput counts from the first batch on
      } else {
        r.pages += batch.size();
      }
      ++r.batches;
      bar.Update(k + 1, total, 0, Seconds(created));
      if (c.step_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(c.step_ms));
    }
    r.rss_after_epoch.push_back(CurrentRssBytes());
  }
  bar.Finish();
  r.seconds = Seconds(start);
  r.stats = loader->stats();
  const RemoteStats after = GetRemoteStats();
  r.remote.requests = after.requests - remote_before.requests;
  r.remote.connections = after.connections - remote_before.connections;
  r.remote.bytes = after.bytes - remote_before.bytes;
  r.remote.retries = after.retries - remote_before.retries;
  r.remote.errors = after.errors - remote_before.errors;
  r.remote.throttled = after.throttled - remote_before.throttled;
  r.remote.throttle_waits = after.throttle_waits - remote_before.throttle_waits;
  r.remote.throttle_wait_ns = after.throttle_wait_ns - remote_before.throttle_wait_ns;
  r.remote.min_concurrency = after.min_concurrency;
  return r;
}

double MsPer(const StageTime& t, uint64_t pages) {
  return pages == 0 ? 0 : static_cast<double>(t.nanos) / 1e6 / static_cast<double>(pages);
}

void PrintTable(const BenchConfig& c, const RunResult& r, double baseline_s) {
  const LoaderStats& s = r.stats;
  const double pages_s = r.seconds > 0 ? static_cast<double>(r.pages) / r.seconds : 0;
  const double mb_s = r.seconds > 0 ? static_cast<double>(s.stored_bytes) / 1e6 /
                                          (r.seconds + r.first_batch_seconds)
                                    : 0;
  if (c.loader.preset.name == "nougat") {
    const NougatConfig& n = c.loader.preset.nougat;
    std::printf("%s: %s, %d threads, batch %u, nougat %dx%d, transformers %d.x pil\n",
                c.loader.path.c_str(), r.preprocessed ? "preprocessed" : "original images",
                r.threads, c.loader.batch_size, n.height, n.width, n.hf_version);
  } else if (c.loader.preset.name == "idefics3") {
    const Idefics3Config& i = c.loader.preset.idefics3;
    std::printf(
        "%s: %s, %d threads, batch %u, idefics3 longest_edge %d max_image_size %d%s, "
        "transformers %d.x pil\n",
        c.loader.path.c_str(), r.preprocessed ? "preprocessed" : "original images", r.threads,
        c.loader.batch_size, i.longest_edge, i.max_image_size,
        i.do_image_splitting ? "" : " no splitting", i.hf_version);
  } else if (c.loader.preset.name == "pix2struct") {
    const Pix2StructConfig& x = c.loader.preset.pix2struct;
    std::printf("%s: %s, %d threads, batch %u, pix2struct max_patches %d, transformers %d.x pil\n",
                c.loader.path.c_str(), r.preprocessed ? "preprocessed" : "original images",
                r.threads, c.loader.batch_size, x.max_patches, x.hf_version);
  } else if (c.loader.preset.name != "donut") {
    const QwenVLConfig& q = c.loader.preset.qwen_vl;
    std::printf("%s: %s, %d threads, batch %u, %s max_pixels %lld, transformers %d.x %s\n",
                c.loader.path.c_str(), r.preprocessed ? "preprocessed" : "original images",
                r.threads, c.loader.batch_size, c.loader.preset.name.c_str(),
                static_cast<long long>(q.max_pixels), q.hf_version,
                std::string(DonutBackendName(q.backend)).c_str());
  } else {
    std::printf("%s: %s, %d threads, batch %u, %dx%d %s, transformers %d.x %s\n",
                c.loader.path.c_str(), r.preprocessed ? "preprocessed" : "original images",
                r.threads, c.loader.batch_size, c.loader.preset.donut.height,
                c.loader.preset.donut.width,
                c.loader.dtype == DType::kUint8 ? "uint8 HWC" : "normalized CHW",
                c.loader.preset.donut.hf_version,
                std::string(DonutBackendName(c.loader.preset.donut.backend)).c_str());
  }
  std::printf("  time to first batch   %8.3f s\n", r.first_batch_seconds);
  std::printf("  pages/s               %8.1f  (%.1f per thread; after the first batch)\n", pages_s,
              pages_s / r.threads);
  std::printf("  stored MB/s           %8.1f\n", mb_s);
  const uint64_t n = std::max<uint64_t>(s.samples, 1);
  std::printf(
      "  per page, summed over workers (ms): read %.2f  decode %.2f  resize %.2f  "
      "decode+resize fused %.2f  pad+normalize %.2f\n",
      MsPer(s.read, n), MsPer(s.decode, n), MsPer(s.resize, n), MsPer(s.decode_resize, n),
      MsPer(s.pad_normalize, n));
  std::printf("  waits (s): consumer %.3f over %llu batches, workers for a free buffer %.3f\n",
              static_cast<double>(s.consumer_wait.nanos) / 1e9,
              static_cast<unsigned long long>(s.consumer_wait.count),
              static_cast<double>(s.buffer_wait.nanos) / 1e9);
  std::printf("  memory: peak RSS %s, batch buffers %s (%llu)", FormatBytes(PeakRssBytes()).c_str(),
              FormatBytes(s.pool_bytes).c_str(), static_cast<unsigned long long>(s.pool_buffers));
  std::printf(", RSS after each epoch:");
  for (uint64_t rss : r.rss_after_epoch) std::printf(" %s", FormatBytes(rss).c_str());
  std::printf("\n");
  if (s.remote.prefetching) {
    const RemoteReadStats& m = s.remote;
    std::printf(
        "  remote: %llu range requests (%llu samples coalesced, %llu refetched, %llu read "
        "directly), %s fetched for %s used; workers waited %.3f s for bytes\n",
        static_cast<unsigned long long>(m.requests), static_cast<unsigned long long>(m.coalesced),
        static_cast<unsigned long long>(m.refetches),
        static_cast<unsigned long long>(m.direct_reads), FormatBytes(m.bytes_fetched).c_str(),
        FormatBytes(m.bytes_used).c_str(), static_cast<double>(m.fetch_wait.nanos) / 1e9);
  }
  if (r.remote.requests > 0) {
    std::printf("  HTTP: %llu requests, %llu connections, %s received, %llu retries\n",
                static_cast<unsigned long long>(r.remote.requests),
                static_cast<unsigned long long>(r.remote.connections),
                FormatBytes(r.remote.bytes).c_str(),
                static_cast<unsigned long long>(r.remote.retries));
  }
  if (r.remote.throttled > 0) {
    std::printf(
        "  throttled: %llu answers 503/429; concurrency lowered to %llu at least, %llu "
        "attempts waited %.3f s for a slot\n",
        static_cast<unsigned long long>(r.remote.throttled),
        static_cast<unsigned long long>(r.remote.min_concurrency),
        static_cast<unsigned long long>(r.remote.throttle_waits),
        static_cast<double>(r.remote.throttle_wait_ns) / 1e9);
  }
  if (s.bad_samples > 0) {
    std::printf("  bad samples skipped: %llu\n", static_cast<unsigned long long>(s.bad_samples));
  }
  if (baseline_s > 0) {
    const double loader_s = pages_s > 0 ? r.threads / pages_s : 0;
    std::printf(
        "  baseline, one thread: %.2f ms/page (%s); loader %.2f ms/page per thread: "
        "%.2fx the baseline\n",
        baseline_s * 1e3,
        r.preprocessed ? "read + decode the stored pages" : "read + decode + exact resize",
        loader_s * 1e3, loader_s / baseline_s);
  }
}

// The settings of the preset the loader ran, by their processor names: what `pack
// --preprocess` writes in the manifest's "preprocess" object, without "preset".
nlohmann::ordered_json PresetJson(const PresetOptions& p) {
  nlohmann::ordered_json j;
  if (p.name == "nougat") {
    j["height"] = p.nougat.height;
    j["width"] = p.nougat.width;
    j["align_long_axis"] = p.nougat.align_long_axis;
    j["hf_version"] = p.nougat.hf_version;
    j["backend"] = "pil";
  } else if (p.name == "idefics3") {
    j["longest_edge"] = p.idefics3.longest_edge;
    j["max_image_size"] = p.idefics3.max_image_size;
    j["do_image_splitting"] = p.idefics3.do_image_splitting;
    j["hf_version"] = p.idefics3.hf_version;
    j["backend"] = "pil";
  } else if (p.name == "pix2struct") {
    j["max_patches"] = p.pix2struct.max_patches;
    j["patch_size"] = {{"height", p.pix2struct.patch_height}, {"width", p.pix2struct.patch_width}};
    j["hf_version"] = p.pix2struct.hf_version;
    j["backend"] = "pil";
  } else if (p.name != "donut") {  // qwen2-vl, qwen2.5-vl
    j["min_pixels"] = p.qwen_vl.min_pixels;
    j["max_pixels"] = p.qwen_vl.max_pixels;
    j["patch_size"] = p.qwen_vl.patch_size;
    j["merge_size"] = p.qwen_vl.merge_size;
    j["hf_version"] = p.qwen_vl.hf_version;
    j["backend"] = DonutBackendName(p.qwen_vl.backend);
  } else {
    j["height"] = p.donut.height;
    j["width"] = p.donut.width;
    j["align_long_axis"] = p.donut.align_long_axis;
    j["hf_version"] = p.donut.hf_version;
    j["backend"] = DonutBackendName(p.donut.backend);
  }
  return j;
}

// One JSON object on one line (strings escaped). "stats" is every loader statistic, as
// LoaderStatsJson writes it for the Python module and doctor too; the rest is this run's summary.
// "height" and "width" are the output size where the preset has a fixed one (Donut, Nougat),
// null otherwise; "preset_options" has the preset's own settings.
void PrintJson(const BenchConfig& c, const RunResult& r, double baseline_s) {
  const LoaderStats& s = r.stats;
  const double pages_s = r.seconds > 0 ? static_cast<double>(r.pages) / r.seconds : 0;
  const uint64_t n = std::max<uint64_t>(s.samples, 1);
  nlohmann::ordered_json j;
  j["dataset"] = c.loader.path;
  j["preprocessed"] = r.preprocessed;
  j["threads"] = r.threads;
  j["batch_size"] = c.loader.batch_size;
  j["step_ms"] = c.step_ms;
  const nlohmann::ordered_json preset = PresetJson(c.loader.preset);
  j["preset"] = c.loader.preset.name;
  j["height"] = preset.contains("height") ? preset["height"] : nlohmann::ordered_json();
  j["width"] = preset.contains("width") ? preset["width"] : nlohmann::ordered_json();
  j["hf_version"] = preset["hf_version"];
  j["backend"] = preset["backend"];
  j["preset_options"] = preset;
  j["dtype"] = c.loader.dtype == DType::kUint8 ? "uint8" : "float";
  j["pages"] = r.pages;
  j["seconds"] = r.seconds;
  j["pages_per_s"] = pages_s;
  j["first_batch_s"] = r.first_batch_seconds;
  j["stored_bytes"] = s.stored_bytes;
  j["ms_per_page"] = {{"read", MsPer(s.read, n)},
                      {"decode", MsPer(s.decode, n)},
                      {"resize", MsPer(s.resize, n)},
                      {"decode_resize", MsPer(s.decode_resize, n)},
                      {"pad_normalize", MsPer(s.pad_normalize, n)}};
  j["consumer_wait_s"] = static_cast<double>(s.consumer_wait.nanos) / 1e9;
  j["buffer_wait_s"] = static_cast<double>(s.buffer_wait.nanos) / 1e9;
  j["peak_rss_bytes"] = PeakRssBytes();
  j["pool_bytes"] = s.pool_bytes;
  j["bad_samples"] = s.bad_samples;
  j["baseline_ms_per_page"] = baseline_s * 1e3;
  j["rss_after_epoch"] = r.rss_after_epoch;
  j["http"] = {{"requests", r.remote.requests},
               {"connections", r.remote.connections},
               {"bytes", r.remote.bytes},
               {"retries", r.remote.retries},
               {"errors", r.remote.errors},
               {"throttled", r.remote.throttled},
               {"throttle_waits", r.remote.throttle_waits},
               {"throttle_wait_s", static_cast<double>(r.remote.throttle_wait_ns) / 1e9},
               {"min_concurrency", r.remote.min_concurrency}};
  j["stats"] = nlohmann::ordered_json::parse(LoaderStatsJson(s));
  std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

}  // namespace

int RunBench(const Args& args, Env* env) {
  Result<ParsedArgs> parsed = ParseArgs(
      args, {"--help", "-h", "--json"},
      {"--batch-size", "--threads", "--epochs", "--max-batches", "--size", "--dtype", "--pad",
       "--prefetch", "--seed", "--baseline", "--hf-version", "--backend", "--range-prefetch",
       "--prefetch-mb", "--prefetch-requests", "--cache-dir", "--cache-limit-mb", "--step-ms"});
  if (parsed.ok() && parsed->Has("--help")) {
    std::fputs(kBenchHelp, stdout);
    return 0;
  }
  Result<BenchConfig> config =
      parsed.ok() ? ToConfig(*parsed) : Result<BenchConfig>(parsed.status());
  if (!config.ok()) {
    std::fprintf(stderr, "docfeed bench: %s\n\n%s", config.status().ToString().c_str(), kBenchHelp);
    return 2;
  }
  config->loader.env = env;
  if (config->size_from_dataset) {
    if (Status s = SizeFromDataset(&*config); !s.ok()) {
      std::fprintf(stderr, "docfeed bench: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  double baseline_s = 0;
  if (config->baseline_samples > 0) {
    Result<double> b = MeasureBaseline(config->loader, config->baseline_samples);
    if (!b.ok()) {
      std::fprintf(stderr, "docfeed bench: baseline: %s\n", b.status().ToString().c_str());
      return 1;
    }
    baseline_s = *b;
  }
  Result<RunResult> run = RunLoader(*config);
  if (!run.ok()) {
    std::fprintf(stderr, "docfeed bench: %s\n", run.status().ToString().c_str());
    return 1;
  }
  if (config->json) {
    PrintJson(*config, *run, baseline_s);
  } else {
    PrintTable(*config, *run, baseline_s);
  }
  return 0;
}

}  // namespace docfeed::tools
