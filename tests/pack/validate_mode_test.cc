// `pack --codec keep --validate structure` against `--validate full`: the same
// dataset, byte for byte, from good inputs (tests/data/images: real JPEG, PNG, WebP, GIF, TIFF
// files, plus the BMP and 12-bit JPEG both modes reject), and a damaged PNG refused naming the
// file.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/file.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::TempDir;

PackOptions Options(const std::string& src, const std::string& out, ValidationMode mode) {
  PackOptions o;
  o.source = src;
  o.output = out;
  o.threads = 2;
  o.skip_bad = true;  // tiny.bmp and precision12.jpg are refused by both modes
  o.encode.validation = mode;
  return o;
}

TEST(ValidateMode, StructureGivesTheSameDatasetAsFull) {
  TempDir dir;
  const std::string src = std::string(DOCFEED_TEST_DATA_DIR) + "/images";
  const std::string full_out = dir.Join("full");
  const std::string structure_out = dir.Join("structure");
  Result<PackSummary> full = Pack(Options(src, full_out, ValidationMode::kFull));
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  Result<PackSummary> structure = Pack(Options(src, structure_out, ValidationMode::kStructure));
  ASSERT_TRUE(structure.ok()) << structure.status().ToString();
  EXPECT_GE(full->samples, 30u);
  EXPECT_EQ(full->samples, structure->samples);
  EXPECT_EQ(full->rejected, structure->rejected);
  EXPECT_EQ(full->stored_codecs, structure->stored_codecs);
  // Every file of the output (data files with the stored images, index, manifest, rejects).
  Result<std::vector<std::string>> files = ListFilesRecursive(full_out);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  Result<std::vector<std::string>> structure_files = ListFilesRecursive(structure_out);
  ASSERT_TRUE(structure_files.ok()) << structure_files.status().ToString();
  EXPECT_EQ(*files, *structure_files);
  EXPECT_GE(files->size(), 3u);
  for (const std::string& name : *files) {
    Result<std::vector<uint8_t>> a = ReadFile(JoinPath(full_out, name));
    Result<std::vector<uint8_t>> b = ReadFile(JoinPath(structure_out, name));
    ASSERT_TRUE(a.ok() && b.ok()) << name;
    EXPECT_TRUE(*a == *b) << name << " differs between --validate full and structure";
  }
}

TEST(ValidateMode, DamagedPngIsRefusedNamingTheFile) {
  TempDir dir;
  const std::string src = dir.Join("src");
  testing::MakeSmallFolder(src);
  Result<std::vector<uint8_t>> png =
      ReadFile(std::string(DOCFEED_TEST_DATA_DIR) + "/images/FlipkartInvoice.png");
  ASSERT_TRUE(png.ok());
  std::vector<uint8_t> damaged = *png;
  damaged[damaged.size() / 2] ^= 0x55;  // inside the IDAT data: its CRC no longer matches
  testing::WriteBytes(JoinPath(src, "a.png"), damaged);
  PackOptions options = Options(src, dir.Join("out"), ValidationMode::kStructure);
  options.skip_bad = false;
  Result<PackSummary> summary = Pack(options);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kCorruption) << summary.status().ToString();
  EXPECT_NE(summary.status().message().find("a.png"), std::string::npos)
      << summary.status().ToString();
  EXPECT_NE(summary.status().message().find("CRC"), std::string::npos)
      << summary.status().ToString();
}

TEST(ValidateMode, ParsesItsNames) {
  EXPECT_EQ(*ParseValidationMode("full"), ValidationMode::kFull);
  EXPECT_EQ(*ParseValidationMode("structure"), ValidationMode::kStructure);
  EXPECT_EQ(*ParseValidationMode("auto"), ValidationMode::kAuto);
  EXPECT_FALSE(ParseValidationMode("none").ok());
}

// --validate auto: structure for a Hugging Face dataset's images, full for files and with
// --strict; an explicit choice is kept.
TEST(ValidateMode, AutoResolvesBySourceAndStrict) {
  EXPECT_EQ(ResolveValidation(ValidationMode::kAuto, /*dataset_images=*/true, /*strict=*/false),
            ValidationMode::kStructure);
  EXPECT_EQ(ResolveValidation(ValidationMode::kAuto, true, /*strict=*/true), ValidationMode::kFull);
  EXPECT_EQ(ResolveValidation(ValidationMode::kAuto, false, false), ValidationMode::kFull);
  EXPECT_EQ(ResolveValidation(ValidationMode::kFull, true, false), ValidationMode::kFull);
  EXPECT_EQ(ResolveValidation(ValidationMode::kStructure, false, true), ValidationMode::kStructure);
}

// An image folder packed with the default reports the JPEG that decodes only with warnings, as
// --validate full does: auto decodes files.
TEST(ValidateMode, AutoDecodesAFoldersFiles) {
  TempDir dir;
  const std::string src = dir.Join("src");
  testing::MakeSmallFolder(src);
  Result<std::vector<uint8_t>> jpeg =
      ReadFile(std::string(DOCFEED_TEST_DATA_DIR) + "/images/modes/warn_huffman.jpg");
  ASSERT_TRUE(jpeg.ok());
  testing::WriteBytes(JoinPath(src, "c.jpg"), *jpeg);  // a listed file
  Result<PackSummary> summary = Pack(Options(src, dir.Join("out"), ValidationMode::kAuto));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->decode_warnings.size(), 1u);
}

}  // namespace
}  // namespace docfeed::internal
