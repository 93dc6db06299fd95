// libFuzzer target: docfeed's image decoder on GIF-seeded input (see codec_fuzz_common.h).
// Build and run: tests/fuzz/run_codec_fuzz.sh.
#include <cstddef>
#include <cstdint>

#include "codec_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  docfeed::internal::FuzzDecodeOnce(data, size);
  return 0;
}
