// ValidateImage against DecodeImage: over every file of tests/data (recursively) and of the JPEG
// and PNG fuzz corpora, and over damaged copies of every JPEG and PNG among them (the formats
// where ValidateImage does not simply run DecodeImage), the two must agree on success, on the
// error (code and message), on the warnings (count and first text) and on the decoded sides and
// channels. `docfeed pack --codec keep` relies on this to refuse and report exactly what a full
// decode would. The PNG files and copies also go through DecodeImage and ValidateImage twice,
// with the whole-buffer PNG path and with libspng's rows alone, which must agree.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "base/file.h"
#include "codec/codec.h"
#include "codec/internal/formats.h"

namespace docfeed::internal {
namespace {

struct SourceFile {
  std::string name;
  std::vector<uint8_t> bytes;
};

void AddFilesBelow(const std::string& root, std::vector<SourceFile>& out) {
  Result<std::vector<std::string>> names = ListFilesRecursive(root);
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  for (const std::string& name : *names) {
    Result<std::vector<uint8_t>> bytes = ReadFile(root + "/" + name);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    out.push_back({root + "/" + name, std::move(bytes).value()});
  }
}

const std::vector<SourceFile>& Sources() {
  static const std::vector<SourceFile>* sources = [] {
    auto* out = new std::vector<SourceFile>;
    const std::string data = DOCFEED_TEST_DATA_DIR;
    AddFilesBelow(data, *out);
    AddFilesBelow(data + "/../fuzz/corpus/jpeg", *out);
    AddFilesBelow(data + "/../fuzz/corpus/png", *out);
    return out;
  }();
  return *sources;
}

bool FastPathCodec(std::span<const uint8_t> bytes) {
  const ImageCodec codec = SniffCodec(bytes);
  return codec == ImageCodec::kJpeg || codec == ImageCodec::kPng;
}

// What one input did: counted so the test can show it covered both outcomes and warnings.
struct Tally {
  int inputs = 0;
  int accepted = 0;
  int refused = 0;
  int warned = 0;
};

void ExpectSameOutcome(const std::string& what, std::span<const uint8_t> bytes,
                       const DecodeLimits& limits, Tally& tally) {
  DecodeReport full_report;
  DecodeReport fast_report;
  fast_report.warnings = -1;  // ValidateImage must reset it, as DecodeImage does.
  const Result<Image> full = DecodeImage(bytes, limits, &full_report);
  const Result<DecodedGeometry> fast = ValidateImage(bytes, limits, &fast_report);
  ++tally.inputs;
  ASSERT_EQ(full.ok(), fast.ok()) << what << ": DecodeImage "
                                  << (full.ok() ? "OK" : full.status().ToString())
                                  << ", ValidateImage "
                                  << (fast.ok() ? "OK" : fast.status().ToString());
  if (!full.ok()) {
    ++tally.refused;
    EXPECT_EQ(full.status().code(), fast.status().code()) << what;
    EXPECT_EQ(full.status().message(), fast.status().message()) << what;
    return;
  }
  ++tally.accepted;
  if (full_report.warnings > 0) ++tally.warned;
  EXPECT_EQ(full_report.warnings, fast_report.warnings) << what;
  EXPECT_EQ(full_report.first_warning, fast_report.first_warning) << what;
  EXPECT_EQ(full->width, fast->width) << what;
  EXPECT_EQ(full->height, fast->height) << what;
  EXPECT_EQ(full->channels, fast->channels) << what;
}

// Prefixes: cut inside the headers, at eighths of the file, and just before the end (a missing
// EOI, a PNG's final CRC and IEND).
std::vector<size_t> TruncationLengths(size_t size) {
  std::vector<size_t> lengths = {size / 64, size / 16};
  for (size_t k = 1; k < 8; ++k) lengths.push_back(size * k / 8);
  for (size_t back : {size_t{1}, size_t{2}, size_t{16}}) {
    if (back < size) lengths.push_back(size - back);
  }
  return lengths;
}

// Damaged copies: one byte flipped at twentieths of the file (headers, entropy-coded or deflated
// data, CRCs), and a run of 0xFF bytes in the middle ("bad Huffman code" in a JPEG scan).
std::vector<std::vector<uint8_t>> Corruptions(const std::vector<uint8_t>& bytes) {
  std::vector<std::vector<uint8_t>> out;
  for (size_t k = 1; k < 20; ++k) {
    std::vector<uint8_t> copy = bytes;
    copy[std::min(bytes.size() - 1, bytes.size() * k / 20 + 3)] ^= 0x55;
    out.push_back(std::move(copy));
  }
  std::vector<uint8_t> run = bytes;
  const size_t start = bytes.size() / 2;
  std::fill(run.begin() + static_cast<ptrdiff_t>(start),
            run.begin() + static_cast<ptrdiff_t>(std::min(bytes.size(), start + 24)), 0xFF);
  out.push_back(std::move(run));
  return out;
}

TEST(ValidateParity, EveryTestFileAndDamagedCopiesOfEveryJpegAndPng) {
  Tally originals;
  Tally damaged;
  int fast_path_files = 0;
  for (const SourceFile& file : Sources()) {
    ExpectSameOutcome(file.name, file.bytes, DecodeLimits{}, originals);
    if (file.bytes.empty() || !FastPathCodec(file.bytes)) continue;
    ++fast_path_files;
    for (size_t length : TruncationLengths(file.bytes.size())) {
      ExpectSameOutcome(file.name + " cut to " + std::to_string(length),
                        std::span(file.bytes).first(length), DecodeLimits{}, damaged);
    }
    int i = 0;
    for (const std::vector<uint8_t>& copy : Corruptions(file.bytes)) {
      ExpectSameOutcome(file.name + " corruption " + std::to_string(i++), copy, DecodeLimits{},
                        damaged);
    }
  }
  std::printf(
      "files: %d (%d JPEG/PNG): %d accepted (%d with warnings), %d refused; damaged copies: %d: "
      "%d accepted (%d with warnings), %d refused\n",
      originals.inputs, fast_path_files, originals.accepted, originals.warned, originals.refused,
      damaged.inputs, damaged.accepted, damaged.warned, damaged.refused);
  // The corpus must exercise every outcome, or the comparison above proves little.
  EXPECT_GE(fast_path_files, 400);
  EXPECT_GE(originals.warned, 3);
  EXPECT_GE(damaged.warned, 500);
  EXPECT_GE(damaged.refused, 5000);
  EXPECT_GE(damaged.accepted, 1000);
}

// The whole-buffer PNG path (src/codec/internal/png_inflate.h) against libspng's own rows, over
// the same PNG files and damaged copies: DecodeImage must give the same pixels or the same error
// either way, and ValidateImage the same verdict.
TEST(PngWholeBuffer, SameOutcomeAsLibspngRowsOnEveryPngAndDamagedCopy) {
  struct Outcome {
    Result<Image> decoded;
    Result<DecodedGeometry> validated;
  };
  auto run = [](std::span<const uint8_t> bytes, bool whole_buffer) {
    SetPngWholeBufferForTesting(whole_buffer);
    Outcome outcome{DecodeImage(bytes), ValidateImage(bytes)};
    SetPngWholeBufferForTesting(true);
    return outcome;
  };
  Tally tally;
  auto compare = [&](const std::string& what, std::span<const uint8_t> bytes) {
    const Outcome fast = run(bytes, true);
    const Outcome spng = run(bytes, false);
    ++tally.inputs;
    ASSERT_EQ(fast.decoded.ok(), spng.decoded.ok())
        << what << ": " << (fast.decoded.ok() ? "OK" : fast.decoded.status().ToString())
        << " against libspng's rows: "
        << (spng.decoded.ok() ? "OK" : spng.decoded.status().ToString());
    ASSERT_EQ(fast.validated.ok(), spng.validated.ok()) << what;
    if (!fast.decoded.ok()) {
      ++tally.refused;
      EXPECT_EQ(fast.decoded.status().code(), spng.decoded.status().code()) << what;
      EXPECT_EQ(fast.decoded.status().message(), spng.decoded.status().message()) << what;
      EXPECT_EQ(fast.validated.status().message(), spng.validated.status().message()) << what;
      return;
    }
    ++tally.accepted;
    EXPECT_EQ(fast.decoded->channels, spng.decoded->channels) << what;
    EXPECT_TRUE(fast.decoded->pixels == spng.decoded->pixels) << what;
  };
  int png_files = 0;
  for (const SourceFile& file : Sources()) {
    if (file.bytes.empty() || SniffCodec(file.bytes) != ImageCodec::kPng) continue;
    ++png_files;
    compare(file.name, file.bytes);
    for (size_t length : TruncationLengths(file.bytes.size())) {
      compare(file.name + " cut to " + std::to_string(length), std::span(file.bytes).first(length));
    }
    int i = 0;
    for (const std::vector<uint8_t>& copy : Corruptions(file.bytes)) {
      compare(file.name + " corruption " + std::to_string(i++), copy);
    }
  }
  std::printf("PNG files: %d; with damaged copies %d inputs: %d decoded, %d refused\n", png_files,
              tally.inputs, tally.accepted, tally.refused);
  EXPECT_GE(png_files, 100);
  EXPECT_GE(tally.accepted, 200);
  EXPECT_GE(tally.refused, 5000);
}

TEST(ValidateParity, SameLimitsRefusals) {
  Tally tally;
  const DecodeLimits few_pixels{.max_pixels = 640 * 480, .max_input_bytes = uint64_t{256} << 20};
  const DecodeLimits few_bytes{.max_pixels = DecodeLimits::kPillowBombPixels,
                               .max_input_bytes = 100'000};
  for (const SourceFile& file : Sources()) {
    if (file.bytes.empty() || !FastPathCodec(file.bytes)) continue;
    ExpectSameOutcome(file.name + " (pixel limit)", file.bytes, few_pixels, tally);
    ExpectSameOutcome(file.name + " (byte limit)", file.bytes, few_bytes, tally);
  }
  EXPECT_GE(tally.refused, 50);
}

}  // namespace
}  // namespace docfeed::internal
