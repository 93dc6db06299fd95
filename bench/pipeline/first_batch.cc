// Time to the first batch on a large index, through the public API only: packs (once, with
// docfeed::PackFrom) a dataset of N tiny 6x8 pages with a token-id label column, then times
// Loader::Create + the first Next() several times, with shuffling on (so the full permutation of
// N ids is built) at the recipe's 1553x1200 output. The loader issue asks for under 0.5 s at
// N = 1,000,000.
//
// The pages are stored as binary PPMs (pack keeps the source bytes) and loaded with the Donut
// preset's do_resize off, so a sample costs what a preprocessed page does: the read, a
// decode of a few bytes, and the padding + normalization into the 1553x1200 slot. The time
// measured is the index, the permutation and the first batch, not a resize.
//
//   build/bin/loader_first_batch /tmp/first_batch_1m --samples 1000000 --repeats 5 [--uint8]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "docfeed/env.h"
#include "docfeed/loader.h"
#include "docfeed/pack.h"
#include "docfeed/status.h"

namespace docfeed {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int32_t kPageWidth = 6;
constexpr int32_t kPageHeight = 8;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Every sample's image: the same light-gray 6x8 binary PPM ("P6", maxval 255).
class TinyPages final : public SampleSource {
 public:
  TinyPages() {
    const std::string header =
        "P6\n" + std::to_string(kPageWidth) + " " + std::to_string(kPageHeight) + "\n255\n";
    page_.assign(header.begin(), header.end());
    page_.resize(page_.size() + static_cast<size_t>(kPageWidth) * kPageHeight * 3, 200);
  }
  Result<std::vector<uint8_t>> ReadImage(size_t) override { return page_; }
  std::string Where(size_t i) const override { return "page " + std::to_string(i); }
  std::string Name() const override { return "the tiny pages"; }

 private:
  std::vector<uint8_t> page_;
};

// One JSON line per sample: its file name and 1..24 token ids.
std::string Rows(uint64_t samples) {
  std::string rows;
  for (uint64_t i = 0; i < samples; ++i) {
    rows += "{\"file_name\": \"p" + std::to_string(i) + ".ppm\", \"labels\": [";
    const std::string id = std::to_string(i % 1000);
    for (uint64_t k = 0; k <= i % 24; ++k) rows += (k == 0 ? "" : ", ") + id;
    rows += "]}\n";
  }
  return rows;
}

Status WriteDataset(const std::string& dir, uint64_t samples) {
  PackOptions o;
  o.output = dir;
  o.codec = PackCodec::kKeep;
  TinyPages pages;
  return PackFrom(Rows(samples), pages, o).status();
}

LoaderOptions Options(const std::string& dir, DType dtype) {
  LoaderOptions o;
  o.path = dir;
  o.preset.donut.height = 1553;
  o.preset.donut.width = 1200;
  o.preset.donut.do_resize = false;  // the stored page is padded as it is (see the top)
  o.batch_size = 8;
  o.num_threads = 2;
  o.dtype = dtype;
  o.layout = dtype == DType::kUint8 ? OutputLayout::kHwc : OutputLayout::kChw;
  return o;
}

int TimeFirstBatches(const LoaderOptions& o, int repeats) {
  for (int r = 0; r < repeats; ++r) {
    const Clock::time_point start = Clock::now();
    Result<std::unique_ptr<Loader>> loader = Loader::Create(o);
    if (!loader.ok()) {
      std::fprintf(stderr, "%s\n", loader.status().ToString().c_str());
      return 1;
    }
    const double created = SecondsSince(start);
    Result<Batch> batch = (*loader)->Next();
    const double first = SecondsSince(start);
    if (!batch.ok() || !batch->valid()) {
      std::fprintf(stderr, "no first batch: %s\n",
                   batch.ok() ? "end of epoch" : batch.status().ToString().c_str());
      return 1;
    }
    std::printf("run %d: %s, %llu samples, Create %.3f s, first batch %.3f s (label length %u)\n",
                r, o.dtype == DType::kUint8 ? "uint8 HWC" : "float32 CHW",
                static_cast<unsigned long long>((*loader)->num_samples()), created, first,
                batch->label_length());
  }
  return 0;
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: loader_first_batch DIR [--samples N] [--repeats R] [--uint8]\n");
    return 2;
  }
  const std::string dir = argv[1];
  uint64_t samples = 1'000'000;
  int repeats = 5;
  DType dtype = DType::kFloat32;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--uint8") {
      dtype = DType::kUint8;
      continue;
    }
    if (i + 1 >= argc) break;
    if (flag == "--samples") samples = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--repeats") repeats = std::atoi(argv[i + 1]);
    ++i;
  }
  if (!Env::Default()->PathExists(dir)) {
    const Clock::time_point start = Clock::now();
    if (Status st = WriteDataset(dir, samples); !st.ok()) {
      std::fprintf(stderr, "writing %s: %s\n", dir.c_str(), st.ToString().c_str());
      return 1;
    }
    std::printf("wrote %llu samples to %s in %.1f s\n", static_cast<unsigned long long>(samples),
                dir.c_str(), SecondsSince(start));
  }
  return TimeFirstBatches(Options(dir, dtype), repeats);
}

}  // namespace
}  // namespace docfeed

int main(int argc, char** argv) { return docfeed::Main(argc, argv); }
