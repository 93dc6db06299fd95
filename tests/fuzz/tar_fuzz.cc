// libFuzzer target for WebDataset shards (src/pack/tar_source.h): the input is one shard (tar,
// or gzip-compressed tar) held in a MemEnv. Listing it must give a Status or a listing in which
// every sample has one value per column and either an image member or a problem naming the
// shard; then every image is read back in sample order, each a Status or at most the decoders'
// byte limit. Any crash, sanitizer report, hang or abort is a bug.
//
// Build and run: tests/fuzz/run_format_fuzz.sh [seconds]
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/mem_env.h"
#include "codec/codec.h"
#include "pack/tar_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  docfeed::internal::MemEnv env;
  if (!env.WriteFile("/shard.tar", std::vector<uint8_t>(data, data + size)).ok()) std::abort();
  auto source = docfeed::internal::OpenTarSource("/shard.tar", &env);
  if (!source.ok()) return 0;
  const auto& listing = (*source)->listing();
  for (size_t i = 0; i < listing.samples.size(); ++i) {
    const auto& sample = listing.samples[i];
    if (sample.values.size() != listing.columns.size()) std::abort();
    if (!sample.problem.ok()) {
      if (std::string(sample.problem.message()).find("/shard.tar") == std::string::npos) {
        std::abort();
      }
      continue;
    }
    auto bytes = (*source)->ReadImage(i);
    if (bytes.ok() && bytes->size() > docfeed::internal::DecodeLimits().max_input_bytes) {
      std::abort();
    }
  }
  return 0;
}
