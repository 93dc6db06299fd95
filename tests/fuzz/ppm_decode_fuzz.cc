// libFuzzer target: the PGM/PPM parser (ViewPpm, and DecodeImage through the shared checks of
// codec_fuzz_common.h) on PPM-seeded input. Build and run: tests/fuzz/run_codec_fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "codec_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace docfeed::internal;
  using docfeed::Result;
  FuzzDecodeOnce(data, size);
  const std::span<const uint8_t> bytes(data, size);
  const Result<ImageView> view = ViewPpm(bytes);
  if (!view.ok()) return 0;
  // A view lies inside the input and ends exactly at its end; it re-encodes to a canonical PPM
  // that decodes to the same pixels.
  const size_t raster = static_cast<size_t>(view->stride_bytes) * static_cast<size_t>(view->height);
  if (view->data < data || view->data + raster != data + size) std::abort();
  if (raster <= (1u << 16)) {
    const Result<std::vector<uint8_t>> again = EncodePpm(*view);
    if (!again.ok()) std::abort();
    const Result<Image> decoded = DecodeImage(*again);
    if (!decoded.ok() || decoded->pixels.size() != raster ||
        std::memcmp(decoded->pixels.data(), view->data, raster) != 0) {
      std::abort();
    }
  }
  return 0;
}
