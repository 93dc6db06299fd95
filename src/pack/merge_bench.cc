// merge_bench: a split pack at the scale of a large index (docs/benchmarks.md, "Parts and
// merge"). White-box: the parts are made by the packer's internal PackFrom over an in-memory
// listing of tiny images (a 1,000,000-file image folder would be listed again by every part),
// each part encoding only its slice, exactly as `docfeed pack --part I/N` does after listing.
//
//   merge_bench make DIR --samples 1000000 --parts 1000 [--threads 2]
//       writes DIR/PPPPP for each part (an 8x8 PNG and an int64 column per sample)
//   merge_bench open DATASET
//       times DatasetReader::Open (what a loader does first) and prints the process's peak RSS
//
// The merge itself is timed with the CLI: /usr/bin/time -v docfeed merge DIR/* -o OUT.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "base/file.h"
#include "codec/codec.h"
#include "docfeed/dataset.h"
#include "pack/packer.h"

namespace docfeed::internal {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double PeakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// `samples` rows named img/NNNNNNN.png with a column n = row, every image the same 8x8 PNG.
class TinySource final : public SampleSource {
 public:
  explicit TinySource(uint64_t samples) {
    Image img;
    img.width = img.height = 8;
    img.channels = 1;
    img.pixels.resize(64);
    for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<uint8_t>(i * 4);
    png_ = EncodePng(img).value();
    folder_.root = "tiny";
    folder_.columns = {ColumnSpec("n", ColumnType::kInt64)};
    folder_.samples.resize(samples);
    char name[32];
    for (uint64_t i = 0; i < samples; ++i) {
      std::snprintf(name, sizeof(name), "img/%07llu.png", static_cast<unsigned long long>(i));
      folder_.samples[i].relative_path = name;
      folder_.samples[i].values = {static_cast<int64_t>(i)};
    }
  }
  const ImageFolder& listing() const override { return folder_; }
  Result<std::vector<uint8_t>> ReadImage(size_t) override { return png_; }
  std::string Where(size_t i) const override { return folder_.samples[i].relative_path; }
  std::string Name() const override { return "tiny source"; }

 private:
  ImageFolder folder_;
  std::vector<uint8_t> png_;
};

int Make(const std::string& dir, uint64_t samples, uint32_t parts, int threads) {
  auto start = Clock::now();
  TinySource source(samples);
  std::printf("listing of %llu samples built in %.2f s\n", static_cast<unsigned long long>(samples),
              Seconds(start));
  if (!CreateDirectory(dir).ok()) return 1;
  start = Clock::now();
  std::vector<std::thread> workers;
  std::vector<int> failed(static_cast<size_t>(threads), 0);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (uint32_t i = static_cast<uint32_t>(t); i < parts; i += static_cast<uint32_t>(threads)) {
        char name[16];
        std::snprintf(name, sizeof(name), "%05u", i);
        PackOptions o;
        o.output = JoinPath(dir, name);
        o.threads = 1;
        o.part = {i, parts};
        Result<PackSummary> s = PackFrom(source, o);
        if (!s.ok()) {
          std::fprintf(stderr, "part %u: %s\n", i, s.status().ToString().c_str());
          failed[static_cast<size_t>(t)] = 1;
          return;
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  for (int f : failed) {
    if (f != 0) return 1;
  }
  std::printf("%u parts packed in %.2f s (%d threads)\n", parts, Seconds(start), threads);
  return 0;
}

int Open(const std::string& path) {
  const double rss_before = PeakRssMiB();
  const auto start = Clock::now();
  Result<std::unique_ptr<DatasetReader>> reader = DatasetReader::Open(path);
  const double open_s = Seconds(start);
  if (!reader.ok()) {
    std::fprintf(stderr, "%s\n", reader.status().ToString().c_str());
    return 1;
  }
  const auto read_start = Clock::now();
  Result<StoredSample> last = (*reader)->Read((*reader)->size() - 1);
  if (!last.ok()) return 1;
  std::printf(
      "open %s: %llu samples in %.3f s, read of the last sample %.6f s, peak RSS %.1f MiB "
      "(%.1f MiB before opening)\n",
      path.c_str(), static_cast<unsigned long long>((*reader)->size()), open_s, Seconds(read_start),
      PeakRssMiB(), rss_before);
  return 0;
}

}  // namespace
}  // namespace docfeed::internal

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  auto flag = [&](const std::string& name, uint64_t fallback) -> uint64_t {
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == name) return std::strtoull(args[i + 1].c_str(), nullptr, 10);
    }
    return fallback;
  };
  if (args.size() >= 2 && args[0] == "make") {
    return docfeed::internal::Make(args[1], flag("--samples", 1'000'000),
                                   static_cast<uint32_t>(flag("--parts", 1000)),
                                   static_cast<int>(flag("--threads", 2)));
  }
  if (args.size() == 2 && args[0] == "open") return docfeed::internal::Open(args[1]);
  std::fputs(
      "usage: merge_bench make DIR [--samples N] [--parts P] [--threads T]\n"
      "       merge_bench open DATASET\n",
      stderr);
  return 2;
}
