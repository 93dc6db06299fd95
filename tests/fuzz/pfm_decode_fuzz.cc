// libFuzzer target: the float PFM parser (ViewPfm, DecodePfm; and DecodeImage, which must refuse
// a PFM, through codec_fuzz_common.h) on PFM-seeded input. Build and run:
// tests/fuzz/run_codec_fuzz.sh.
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
  DecodeLimits limits;
  limits.max_pixels = 1 << 20;
  const Result<FloatRowsView> view = ViewPfm(bytes, limits);
  const Result<FloatRows> decoded = DecodePfm(bytes, limits);
  if (view.ok() != decoded.ok()) std::abort();
  if (!view.ok()) return 0;
  // The rows lie inside the input and the raster ends exactly at its end: the top row is the
  // last one stored.
  const size_t row_bytes = static_cast<size_t>(view->width) * sizeof(float);
  if (view->stride_bytes != -static_cast<ptrdiff_t>(row_bytes) || view->top_row < data ||
      view->top_row + row_bytes != data + size ||
      row_bytes * static_cast<size_t>(view->height) > size) {
    std::abort();
  }
  // Re-encoding the values gives a canonical PFM of the same values.
  if (decoded->values.size() <= (1u << 16)) {
    const Result<std::vector<uint8_t>> again =
        EncodePfm(decoded->values.data(), decoded->width, decoded->height);
    if (!again.ok()) std::abort();
    const Result<FloatRows> back = DecodePfm(*again);
    if (!back.ok() || back->values.size() != decoded->values.size() ||
        std::memcmp(back->values.data(), decoded->values.data(),
                    decoded->values.size() * sizeof(float)) != 0) {
      std::abort();
    }
  }
  return 0;
}
