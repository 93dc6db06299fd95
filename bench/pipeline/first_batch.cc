// Time to the first batch on a large index: writes (once) a dataset of N tiny preprocessed pages
// with a token-id label column, then times Loader::Create + the first Next() several times, with
// shuffling on (so the full permutation of N ids is built) and at the recipe's 1553x1200 size.
// The loader issue asks for under 0.5 s at N = 1,000,000.
//
//   build/bin/loader_first_batch /tmp/first_batch_1m --samples 1000000 --repeats 5 [--uint8]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/file.h"
#include "codec/codec.h"
#include "format/manifest.h"
#include "format/shard_writer.h"
#include "pipeline/loader.h"

namespace docfeed::internal {
namespace {

using Clock = std::chrono::steady_clock;

Status WriteDataset(const std::string& dir, uint64_t samples) {
  DOCFEED_RETURN_IF_ERROR(CreateDirectory(dir));
  ShardWriterOptions o;
  o.directory = dir;
  o.columns = {{"labels", ColumnType::kInt64List}};
  o.label_column = "labels";
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> writer, ShardWriter::Create(o));
  Image page;
  page.width = 6;
  page.height = 8;
  page.channels = 3;
  page.pixels.assign(6 * 8 * 3, 200);
  const ImageView view{page.pixels.data(), page.width, page.height, 3,
                       static_cast<ptrdiff_t>(page.stride_bytes())};
  DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> ppm, EncodePpm(view));
  for (uint64_t i = 0; i < samples; ++i) {
    SampleToWrite s;
    s.image = ppm;
    s.path = "p" + std::to_string(i) + ".png";
    s.codec = StoredCodec::kPpm;
    s.width = 6;
    s.height = 8;
    s.channels = 3;
    s.values.push_back(std::vector<int64_t>(1 + i % 24, static_cast<int64_t>(i % 1000)));
    DOCFEED_RETURN_IF_ERROR(writer->Add(s));
  }
  Manifest m;
  m.codec = "ppm";
  m.compression = "none";
  m.preprocess.preset = kPreprocessDonut;
  m.preprocess.height = 1553;
  m.preprocess.width = 1200;
  return writer->Finish(std::move(m)).status();
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
  if (!PathExists(dir)) {
    const Clock::time_point start = Clock::now();
    Status st = WriteDataset(dir, samples);
    if (!st.ok()) {
      std::fprintf(stderr, "writing %s: %s\n", dir.c_str(), st.ToString().c_str());
      return 1;
    }
    std::printf("wrote %llu samples to %s in %.1f s\n", static_cast<unsigned long long>(samples),
                dir.c_str(), std::chrono::duration<double>(Clock::now() - start).count());
  }
  LoaderOptions o;
  o.path = dir;
  o.preset.donut.height = 1553;
  o.preset.donut.width = 1200;
  o.batch_size = 8;
  o.num_threads = 2;
  o.dtype = dtype;
  o.layout = dtype == DType::kUint8 ? OutputLayout::kHwc : OutputLayout::kChw;
  for (int r = 0; r < repeats; ++r) {
    const Clock::time_point start = Clock::now();
    Result<std::unique_ptr<Loader>> loader = Loader::Create(o);
    if (!loader.ok()) {
      std::fprintf(stderr, "%s\n", loader.status().ToString().c_str());
      return 1;
    }
    const double created = std::chrono::duration<double>(Clock::now() - start).count();
    Result<Batch> batch = (*loader)->Next();
    const double first = std::chrono::duration<double>(Clock::now() - start).count();
    if (!batch.ok() || !batch->valid()) {
      std::fprintf(stderr, "no first batch\n");
      return 1;
    }
    std::printf("run %d: %s, %llu samples, Create %.3f s, first batch %.3f s (label length %u)\n",
                r, dtype == DType::kUint8 ? "uint8 HWC" : "float32 CHW",
                static_cast<unsigned long long>((*loader)->num_samples()), created, first,
                batch->label_length());
  }
  return 0;
}

}  // namespace
}  // namespace docfeed::internal

int main(int argc, char** argv) { return docfeed::internal::Main(argc, argv); }
