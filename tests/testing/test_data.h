// The bytes of a file under tests/data, for tests that feed real files to the decoders.
#ifndef DOCFEED_TESTS_TESTING_TEST_DATA_H_
#define DOCFEED_TESTS_TESTING_TEST_DATA_H_

#include <gtest/gtest.h>

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

}  // namespace docfeed::testing

#endif  // DOCFEED_TESTS_TESTING_TEST_DATA_H_
