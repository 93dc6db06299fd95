// The bytes of a file under tests/data, for tests that feed real files to the decoders.
#ifndef DOCFEED_TESTS_TESTING_TEST_DATA_H_
#define DOCFEED_TESTS_TESTING_TEST_DATA_H_

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/file.h"

namespace docfeed::testing {

// The file `name` (relative to tests/data); a failed read fails the test and gives no bytes.
inline std::vector<uint8_t> ReadTestData(const std::string& name) {
  Result<std::vector<uint8_t>> bytes =
      internal::ReadFile(std::string(DOCFEED_TEST_DATA_DIR) + "/" + name);
  EXPECT_TRUE(bytes.ok()) << name << ": " << bytes.status().ToString();
  return bytes.ok() ? std::move(*bytes) : std::vector<uint8_t>{};
}

// `jpeg` with its first scan's entropy-coded data cut to `scan_bytes` and an EOI after it: a file
// libjpeg decodes (the missing blocks gray) but that cannot hold the image. Empty, failing the
// test, when `jpeg` has no SOS marker.
inline std::vector<uint8_t> JpegWithScanCutShort(std::vector<uint8_t> jpeg, size_t scan_bytes) {
  size_t sos = 2;
  while (sos + 4 < jpeg.size() && !(jpeg[sos] == 0xFF && jpeg[sos + 1] == 0xDA)) ++sos;
  EXPECT_LT(sos + 4, jpeg.size()) << "no SOS marker";
  if (sos + 4 >= jpeg.size()) return {};
  jpeg.resize(sos + 2 + (size_t{jpeg[sos + 2]} << 8 | jpeg[sos + 3]) + scan_bytes);
  jpeg.insert(jpeg.end(), {0xFF, 0xD9});
  return jpeg;
}

}  // namespace docfeed::testing

#endif  // DOCFEED_TESTS_TESTING_TEST_DATA_H_
