// Builds small image folders (imagefolder layout) for the pack and corruption tests, with
// images encoded by docfeed's own encoders (their decodability is checked against Pillow by the
// codec tests and tests/python).
#ifndef DOCFEED_TESTS_PACK_TEST_FOLDER_H_
#define DOCFEED_TESTS_PACK_TEST_FOLDER_H_

#include <cstdio>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/file.h"
#include "codec/codec.h"

namespace docfeed::testing {

inline internal::Image Gradient(int width, int height, int channels, int seed) {
  internal::Image img;
  img.width = width;
  img.height = height;
  img.channels = channels;
  img.pixels.resize(static_cast<size_t>(width) * height * channels);
  for (size_t i = 0; i < img.pixels.size(); ++i) {
    img.pixels[i] = static_cast<uint8_t>((i * 7 + static_cast<size_t>(seed) * 31) & 0xFF);
  }
  return img;
}

// Plain stdio, without the fsync of internal::WriteFile: the corruption tests rewrite files
// thousands of times.
inline void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  DOCFEED_CHECK(f != nullptr);
  DOCFEED_CHECK(bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  DOCFEED_CHECK(std::fclose(f) == 0);
}

// root/a.png (RGB 9x7), root/sub/b.png (L 5x3), root/c.jpg (RGB 16x16), root/d.webp (RGBA 4x4)
// and a metadata.jsonl naming them with a string, an int, a list and a null.
inline void MakeSmallFolder(const std::string& root) {
  DOCFEED_CHECK(internal::CreateDirectory(root).ok());
  DOCFEED_CHECK(internal::CreateDirectory(internal::JoinPath(root, "sub")).ok());
  WriteBytes(internal::JoinPath(root, "a.png"), *internal::EncodePng(Gradient(9, 7, 3, 1)));
  WriteBytes(internal::JoinPath(root, "sub/b.png"), *internal::EncodePng(Gradient(5, 3, 1, 2)));
  WriteBytes(internal::JoinPath(root, "c.jpg"), *internal::EncodeJpeg(Gradient(16, 16, 3, 3), 90));
  WriteBytes(internal::JoinPath(root, "d.webp"),
             *internal::EncodeWebpLossless(Gradient(4, 4, 4, 4)));
  DOCFEED_CHECK(
      internal::WriteTextFile(
          internal::JoinPath(root, "metadata.jsonl"),
          R"({"file_name": "a.png", "ground_truth": "{\"gt_parse\": {\"total\": \"9.00\"}}", "n": 1, "labels": [0, 5, 2]})"
          "\n"
          R"({"file_name": "sub/b.png", "ground_truth": "héllo", "n": 2, "labels": []})"
          "\n"
          R"({"file_name": "c.jpg", "ground_truth": null, "n": 3})"
          "\n"
          R"({"file_name": "./d.webp", "ground_truth": "", "n": 4, "labels": [7]})"
          "\n")
          .ok());
}

}  // namespace docfeed::testing

#endif  // DOCFEED_TESTS_PACK_TEST_FOLDER_H_
