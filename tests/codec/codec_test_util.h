// Shared helpers for the codec tests: test-image loading and the Pillow golden file
// (tests/data/codec/golden.json, written by tests/data/codec/make_golden.py).
#ifndef DOCFEED_TESTS_CODEC_CODEC_TEST_UTIL_H_
#define DOCFEED_TESTS_CODEC_CODEC_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/file.h"
#include "codec/codec.h"

namespace docfeed::internal::testing {

inline std::string ImagePath(const std::string& name) {
  return std::string(DOCFEED_TEST_DATA_DIR) + "/images/" + name;
}

// Reads tests/data/images/<name>; fails the test (and returns empty) when missing.
inline std::vector<uint8_t> ReadImage(const std::string& name) {
  Result<std::vector<uint8_t>> bytes = ReadFile(ImagePath(name));
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? std::move(bytes).value() : std::vector<uint8_t>{};
}

inline const nlohmann::json& Golden() {
  static const nlohmann::json* golden = [] {
    Result<std::string> text =
        ReadTextFile(std::string(DOCFEED_TEST_DATA_DIR) + "/codec/golden.json");
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    return new nlohmann::json(nlohmann::json::parse(text.ok() ? *text : "{}"));
  }();
  return *golden;
}

// Golden entries of images Pillow decodes and docfeed must decode identically.
inline std::vector<nlohmann::json> DecodableGoldenImages() {
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& entry : Golden()["images"]) {
    if (entry["decodable"].get<bool>()) out.push_back(entry);
  }
  return out;
}

// A deterministic pseudo-random image (xorshift), so failures reproduce.
inline Image MakeNoiseImage(int32_t width, int32_t height, int32_t channels, uint32_t seed) {
  Image image{.width = width, .height = height, .channels = channels, .pixels = {}};
  image.pixels.resize(static_cast<size_t>(width) * static_cast<size_t>(height) *
                      static_cast<size_t>(channels));
  uint32_t state = seed * 2654435761u + 1;
  for (uint8_t& v : image.pixels) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    v = static_cast<uint8_t>(state >> 24);
  }
  return image;
}

}  // namespace docfeed::internal::testing

#endif  // DOCFEED_TESTS_CODEC_CODEC_TEST_UTIL_H_
