// A training input loop on docfeed's public API alone (include/docfeed/): what a dataset holds,
// one epoch of Donut batches, and one image through the preset by hand.
//
//   loader_example DATASET IMAGE
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include "docfeed/dataset.h"
#include "docfeed/loader.h"
#include "docfeed/preprocess.h"

namespace {

int Fail(const docfeed::Status& status) {
  std::fprintf(stderr, "loader_example: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: loader_example DATASET IMAGE\n");
    return 2;
  }
  docfeed::Result<docfeed::DatasetInfo> info = docfeed::ReadDatasetInfo(argv[1]);
  if (!info.ok()) return Fail(info.status());
  std::printf("samples: %llu\n", static_cast<unsigned long long>(info->num_samples));

  docfeed::LoaderOptions options;
  options.path = argv[1];
  options.preset.donut.height = 64;
  options.preset.donut.width = 48;
  options.batch_size = 2;
  options.num_threads = 2;
  docfeed::Result<std::unique_ptr<docfeed::Loader>> loader = docfeed::Loader::Create(options);
  if (!loader.ok()) return Fail(loader.status());
  uint64_t delivered = 0;
  double checksum = 0;
  while (true) {
    docfeed::Result<docfeed::Batch> batch = (*loader)->Next();
    if (!batch.ok()) return Fail(batch.status());
    if (!batch->valid()) break;
    const float* pixels = static_cast<const float*>(batch->pixels());
    checksum += pixels[0];
    delivered += batch->size();
  }
  std::printf("delivered: %llu\n", static_cast<unsigned long long>(delivered));
  std::printf("stats: %s\n", docfeed::LoaderStatsJson((*loader)->stats()).c_str());

  std::ifstream file(argv[2], std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                                   std::istreambuf_iterator<char>());
  docfeed::Result<docfeed::Preset> preset = docfeed::Preset::Create(options.preset);
  if (!preset.ok()) return Fail(preset.status());
  docfeed::Image page;
  if (docfeed::Status s = preset->Prepare(bytes, {}, &page); !s.ok()) return Fail(s);
  std::vector<float> out(preset->SampleBytes(docfeed::DType::kFloat32) / sizeof(float));
  docfeed::Result<docfeed::Placement> placed =
      preset->Finish(page, {.seed = 0, .epoch = 0, .sample_id = 0}, docfeed::DType::kFloat32,
                     docfeed::OutputLayout::kChw, out.data());
  if (!placed.ok()) return Fail(placed.status());
  std::printf("prepared: %dx%d, %d channels, at (%d, %d) in %dx%d\n", page.width, page.height,
              page.channels, placed->top, placed->left, preset->output_shape().width,
              preset->output_shape().height);
  if (checksum != checksum) return 1;  // keeps the reads observable
  return 0;
}
