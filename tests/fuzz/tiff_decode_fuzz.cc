// libFuzzer target: docfeed's image decoder on TIFF-seeded input (see codec_fuzz_common.h). Every
// page the probe reports is decoded too, so damaged IFD chains and later pages are explored.
// Build and run: tests/fuzz/run_codec_fuzz.sh.
#include <cstddef>
#include <cstdint>

#include "codec_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  docfeed::internal::FuzzDecodeOnce(data, size);
  docfeed::internal::FuzzDecodePages(data, size);
  return 0;
}
