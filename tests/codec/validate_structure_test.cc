// ValidateImageStructure (`pack --validate structure`) against DecodeImage, the reference that
// `--validate full` reproduces exactly (validate_parity_test.cc): over every file of tests/data
// and of the JPEG and PNG fuzz corpora, and over damaged copies of every JPEG and PNG among them.
// Structure validation cannot see everything a decode sees, so the test asserts the properties it
// promises (src/pack/README.md) and prints how often the two modes disagree, each way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/file.h"
#include "codec/codec.h"

namespace docfeed::internal {
namespace {

struct SourceFile {
  std::string name;
  std::vector<uint8_t> bytes;
  bool in_test_data = false;  // tests/data, as opposed to a fuzz corpus
};

void AddFilesBelow(const std::string& root, bool in_test_data, std::vector<SourceFile>& out) {
  Result<std::vector<std::string>> names = ListFilesRecursive(root);
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  for (const std::string& name : *names) {
    Result<std::vector<uint8_t>> bytes = ReadFile(root + "/" + name);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    out.push_back({root + "/" + name, std::move(bytes).value(), in_test_data});
  }
}

// The files validate_parity_test.cc enumerates.
const std::vector<SourceFile>& Sources() {
  static const std::vector<SourceFile>* sources = [] {
    auto* out = new std::vector<SourceFile>;
    const std::string data = DOCFEED_TEST_DATA_DIR;
    AddFilesBelow(data, true, *out);
    AddFilesBelow(data + "/../fuzz/corpus/jpeg", false, *out);
    AddFilesBelow(data + "/../fuzz/corpus/png", false, *out);
    return out;
  }();
  return *sources;
}

uint32_t ReadBe32(const std::vector<uint8_t>& b, size_t pos) {
  return (uint32_t{b[pos]} << 24) | (uint32_t{b[pos + 1]} << 16) | (uint32_t{b[pos + 2]} << 8) |
         b[pos + 3];
}

// The end of a PNG's IEND chunk, found by reading the chunk lengths of a file DecodeImage
// accepted (0 when the walk does not reach IEND).
size_t PngIendEnd(const std::vector<uint8_t>& b) {
  size_t pos = 8;
  while (b.size() >= pos + 12) {
    const uint32_t length = ReadBe32(b, pos);
    if (length > b.size() - pos - 12) return 0;
    if (std::memcmp(&b[pos + 4], "IEND", 4) == 0) return pos + 12 + length;
    pos += size_t{length} + 12;
  }
  return 0;
}

// Prefixes: validate_parity_test.cc's (headers, eighths, the last 16, 2 and 1 bytes) and 32
// more at even spacing.
std::vector<size_t> TruncationLengths(size_t size) {
  std::vector<size_t> lengths = {size / 64, size / 16};
  for (size_t k = 1; k < 8; ++k) lengths.push_back(size * k / 8);
  for (size_t back : {size_t{1}, size_t{2}, size_t{16}}) {
    if (back < size) lengths.push_back(size - back);
  }
  for (size_t k = 1; k <= 32; ++k) lengths.push_back(size * k / 33);
  return lengths;
}

// One byte flipped (^0x55) at each of these offsets: validate_parity_test.cc's twentieths plus
// 40 more, so headers, chunk data, entropy-coded data and checksums are all hit.
std::vector<size_t> FlipOffsets(size_t size) {
  std::vector<size_t> offsets;
  for (size_t k = 1; k < 20; ++k) offsets.push_back(std::min(size - 1, size * k / 20 + 3));
  for (size_t k = 0; k < 40; ++k) offsets.push_back(size * k / 40);
  return offsets;
}

// Disagreements between the modes over the damaged copies, each way.
struct Comparison {
  int inputs = 0;
  int both_refuse = 0;
  int both_accept = 0;
  int full_refuses_structure_accepts = 0;
  int structure_refuses_full_accepts = 0;
  int full_warns_structure_silent = 0;  // both accept, DecodeImage warned, structure did not
  int structure_warns_full_silent = 0;
  int code_differs = 0;  // both refuse with a different StatusCode
};

struct Outcome {
  bool full_ok = false;
  bool structure_ok = false;
  StatusCode full_code = StatusCode::kOk;
  StatusCode structure_code = StatusCode::kOk;
  std::string full_error;
  std::string structure_error;
};

Outcome Compare(const std::string& what, std::span<const uint8_t> bytes, Comparison& c) {
  DecodeReport full_report;
  DecodeReport structure_report;
  structure_report.warnings = -1;  // must be reset
  const Result<Image> full = DecodeImage(bytes, DecodeLimits{}, &full_report);
  const Result<DecodedGeometry> structure =
      ValidateImageStructure(bytes, DecodeLimits{}, &structure_report);
  Outcome o{full.ok(),
            structure.ok(),
            full.status().code(),
            structure.status().code(),
            full.ok() ? "" : full.status().ToString(),
            structure.ok() ? "" : structure.status().ToString()};
  // DOCFEED_STRUCTURE_VERBOSE=1 prints every disagreement (what each mode said).
  if (std::getenv("DOCFEED_STRUCTURE_VERBOSE") != nullptr &&
      (o.full_ok != o.structure_ok || o.full_code != o.structure_code)) {
    std::printf("disagree: %s: full %s | structure %s\n", what.c_str(),
                full.status().ToString().c_str(), structure.status().ToString().c_str());
  }
  ++c.inputs;
  if (!o.full_ok && !o.structure_ok) {
    ++c.both_refuse;
    if (o.full_code != o.structure_code) ++c.code_differs;
  } else if (o.full_ok && o.structure_ok) {
    ++c.both_accept;
    EXPECT_GE(structure_report.warnings, 0);
    if (full_report.warnings > 0 && structure_report.warnings == 0) ++c.full_warns_structure_silent;
    if (full_report.warnings == 0 && structure_report.warnings > 0) ++c.structure_warns_full_silent;
  } else if (o.full_ok) {
    ++c.structure_refuses_full_accepts;
  } else {
    ++c.full_refuses_structure_accepts;
  }
  return o;
}

void Print(const char* what, const Comparison& c) {
  std::printf(
      "%s: %d damaged copies: both refuse %d (different code %d), both accept %d (full warns, "
      "structure silent %d; structure warns, full silent %d); full refuses, structure accepts "
      "%d; structure refuses, full accepts %d\n",
      what, c.inputs, c.both_refuse, c.code_differs, c.both_accept, c.full_warns_structure_silent,
      c.structure_warns_full_silent, c.full_refuses_structure_accepts,
      c.structure_refuses_full_accepts);
}

TEST(ValidateStructure, AcceptsEveryFileFullValidationAccepts) {
  int accepted = 0;
  int corpus_refused_by_structure_only = 0;
  for (const SourceFile& file : Sources()) {
    DecodeReport full_report;
    DecodeReport structure_report;
    const Result<Image> full = DecodeImage(file.bytes, DecodeLimits{}, &full_report);
    const Result<DecodedGeometry> structure =
        ValidateImageStructure(file.bytes, DecodeLimits{}, &structure_report);
    if (!full.ok()) continue;
    ++accepted;
    if (!structure.ok() && !file.in_test_data) {
      // A fuzz corpus file: counted and printed, asserted below to be rare.
      ++corpus_refused_by_structure_only;
      std::printf("fuzz corpus file accepted by full, refused by structure: %s: %s\n",
                  file.name.c_str(), structure.status().ToString().c_str());
      continue;
    }
    ASSERT_TRUE(structure.ok()) << file.name << ": " << structure.status().ToString();
    // The same geometry the index records.
    EXPECT_EQ(full->width, structure->width) << file.name;
    EXPECT_EQ(full->height, structure->height) << file.name;
    EXPECT_EQ(full->channels, structure->channels) << file.name;
  }
  std::printf("files accepted by full validation: %d; fuzz corpus files structure refuses: %d\n",
              accepted, corpus_refused_by_structure_only);
  EXPECT_GE(accepted, 200);
}

TEST(ValidateStructure, DamagedPngs) {
  Comparison truncations;
  Comparison flips;
  int pngs = 0;
  for (const SourceFile& file : Sources()) {
    if (SniffCodec(file.bytes) != ImageCodec::kPng) continue;
    // Damaged copies of files both modes accept (a few fuzz corpus files only the decode
    // accepts: AcceptsEveryFileFullValidationAccepts prints them).
    if (!DecodeImage(file.bytes).ok() || !ValidateImageStructure(file.bytes).ok()) continue;
    const size_t iend_end = PngIendEnd(file.bytes);
    ASSERT_GT(iend_end, 0u) << file.name;
    ++pngs;
    const std::span<const uint8_t> whole(file.bytes);
    for (size_t length : TruncationLengths(file.bytes.size())) {
      const Outcome o = Compare(file.name + " cut to " + std::to_string(length),
                                whole.first(length), truncations);
      // Every PNG cut before the end of its IEND chunk is refused.
      // (Shorter than the 8-byte signature it is not a PNG: Unsupported in both modes.)
      if (length < iend_end) {
        EXPECT_FALSE(o.structure_ok) << file.name << " cut to " << length;
        EXPECT_EQ(o.structure_code, length < 8 ? StatusCode::kUnsupported : StatusCode::kCorruption)
            << file.name << " cut to " << length;
      }
    }
    for (size_t offset : FlipOffsets(file.bytes.size())) {
      std::vector<uint8_t> copy = file.bytes;
      copy[offset] ^= 0x55;
      const Outcome o =
          Compare(file.name + " byte " + std::to_string(offset) + " flipped", copy, flips);
      // Every flipped byte in the signature or inside a chunk (length, type, data, CRC) is
      // refused; after IEND it is ignored by both modes.
      if (offset < iend_end) {
        EXPECT_FALSE(o.structure_ok) << file.name << " byte " << offset << " flipped";
      } else {
        EXPECT_TRUE(o.structure_ok) << file.name << " byte " << offset << ": " << o.structure_error;
      }
    }
  }
  std::printf("PNG files: %d\n", pngs);
  Print("PNG truncations", truncations);
  Print("PNG byte flips", flips);
  EXPECT_GE(pngs, 20);
  // A PNG's CRC-32 covers every byte of every chunk: structure mode refuses at least what the
  // decode refuses.
  EXPECT_EQ(truncations.full_refuses_structure_accepts, 0);
  EXPECT_EQ(flips.full_refuses_structure_accepts, 0);
}

TEST(ValidateStructure, DamagedJpegs) {
  Comparison truncations;
  Comparison flips;
  int jpegs = 0;
  for (const SourceFile& file : Sources()) {
    if (SniffCodec(file.bytes) != ImageCodec::kJpeg) continue;
    if (!DecodeImage(file.bytes).ok() || !ValidateImageStructure(file.bytes).ok()) continue;
    ++jpegs;
    const std::span<const uint8_t> whole(file.bytes);
    for (size_t length : TruncationLengths(file.bytes.size())) {
      const Outcome o = Compare(file.name + " cut to " + std::to_string(length),
                                whole.first(length), truncations);
      // A JPEG cut anywhere before its EOI is refused by the decode (libjpeg's premature end of
      // data is Pillow's "truncated"); structure mode must give the same outcome and code.
      EXPECT_EQ(o.full_ok, o.structure_ok)
          << file.name << " cut to " << length << ": " << o.structure_error;
      if (!o.full_ok && !o.structure_ok) {
        EXPECT_EQ(o.full_code, o.structure_code) << file.name << " cut to " << length;
        EXPECT_EQ(o.full_error, o.structure_error) << file.name << " cut to " << length;
      }
    }
    for (size_t offset : FlipOffsets(file.bytes.size())) {
      std::vector<uint8_t> copy = file.bytes;
      copy[offset] ^= 0x55;
      Compare(file.name + " byte " + std::to_string(offset) + " flipped", copy, flips);
    }
    std::vector<uint8_t> run = file.bytes;  // a run of 0xFF bytes mid-file
    const size_t start = run.size() / 2;
    std::fill(run.begin() + static_cast<ptrdiff_t>(start),
              run.begin() + static_cast<ptrdiff_t>(std::min(run.size(), start + 24)), 0xFF);
    Compare(file.name + " 0xFF run", run, flips);
  }
  std::printf("JPEG files: %d\n", jpegs);
  Print("JPEG truncations", truncations);
  Print("JPEG byte flips and 0xFF runs", flips);
  EXPECT_GE(jpegs, 80);
  EXPECT_EQ(truncations.full_refuses_structure_accepts, 0);
  EXPECT_EQ(truncations.structure_refuses_full_accepts, 0);
  // Over this corpus the two modes also refuse the same flipped copies (the marker, table and
  // scan-header checks mirror libjpeg's); what structure mode cannot see is damage inside the
  // entropy-coded data that libjpeg only warns about (full_warns_structure_silent, printed).
  EXPECT_EQ(flips.full_refuses_structure_accepts, 0);
  EXPECT_EQ(flips.structure_refuses_full_accepts, 0);
  EXPECT_EQ(flips.code_differs, 0);
  EXPECT_EQ(flips.structure_warns_full_silent, 0);
}

// Arbitrary bytes behind a valid signature must never crash the walkers (run under ASan too).
TEST(ValidateStructure, BoundsSafeOnArbitraryPrefixesAndFlips) {
  int inputs = 0;
  for (const SourceFile& file : Sources()) {
    const ImageCodec codec = SniffCodec(file.bytes);
    if (codec != ImageCodec::kJpeg && codec != ImageCodec::kPng) continue;
    for (size_t length = 0; length <= std::min<size_t>(file.bytes.size(), 300); ++length) {
      (void)ValidateImageStructure(std::span(file.bytes).first(length));
      ++inputs;
    }
  }
  EXPECT_GT(inputs, 1000);
}

}  // namespace
}  // namespace docfeed::internal
