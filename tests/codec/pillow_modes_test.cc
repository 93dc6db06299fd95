// The inputs that need a conversion or a choice of frame to become Pillow's pixels
// (tests/data/images/modes/, made by tests/data/codec/make_mode_images.py; their Pillow pixels
// are in golden.json and checked by decode_test.cc with every other image): what DecodeReport
// says about JPEGs that decode with warnings, what is refused as truncated, frame counts, and
// truncation at every length of a few of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "codec_test_util.h"

namespace docfeed::internal {
namespace {

using testing::Golden;
using testing::ReadImage;

void ExpectWarning(const std::string& file, const std::string& needle) {
  DecodeReport report;
  Result<Image> image = DecodeImage(ReadImage(file), {}, &report);
  ASSERT_TRUE(image.ok()) << file << ": " << image.status().ToString();
  EXPECT_GE(report.warnings, 1) << file;
  EXPECT_NE(report.first_warning.find(needle), std::string::npos)
      << file << ": " << report.first_warning;
}

TEST(DecodeReport, NamesTheWarningsPillowDecodesThrough) {
  ExpectWarning("modes/warn_huffman.jpg", "Corrupt JPEG data: bad Huffman code");
  ExpectWarning("modes/warn_eoi_in_scan.jpg", "premature end of data segment");
  ExpectWarning("modes/warn_extraneous.jpg", "3 extraneous bytes before marker");
}

TEST(DecodeReport, IsEmptyForCleanImagesAndResetOnEveryCall) {
  DecodeReport report;
  ASSERT_TRUE(DecodeImage(ReadImage("modes/warn_huffman.jpg"), {}, &report).ok());
  ASSERT_GE(report.warnings, 1);
  for (const char* file : {"sroie_000.jpg", "gen/progressive.jpg", "modes/cmyk_adobe.jpg",
                           "modes/ycck.jpg", "modes/anim.gif", "FlipkartInvoice.png"}) {
    Result<Image> image = DecodeImage(ReadImage(file), {}, &report);
    ASSERT_TRUE(image.ok()) << file << ": " << image.status().ToString();
    EXPECT_EQ(report.warnings, 0) << file << ": " << report.first_warning;
    EXPECT_TRUE(report.first_warning.empty()) << file;
  }
}

// Every golden file Pillow opens but cannot load ("image file is truncated") is refused too.
TEST(DecodeImage, RefusesWhatPillowFindsTruncated) {
  size_t checked = 0;
  for (const nlohmann::json& entry : Golden()["images"]) {
    if (!entry.contains("pillow_error") ||
        entry["pillow_error"].get<std::string>().find("truncated") == std::string::npos) {
      continue;
    }
    const std::string file = entry["file"];
    Result<Image> image = DecodeImage(ReadImage(file));
    ASSERT_FALSE(image.ok()) << file;
    EXPECT_EQ(image.status().code(), StatusCode::kCorruption) << image.status().ToString();
    EXPECT_NE(image.status().message().find("truncated"), std::string::npos)
        << image.status().ToString();
    ++checked;
  }
  EXPECT_GE(checked, 1u);
}

TEST(ProbeImage, ReportsPillowsModeAndFramesForTheNewInputs) {
  Result<ImageInfo> ycck = ProbeImage(ReadImage("modes/ycck.jpg"));
  ASSERT_TRUE(ycck.ok());
  EXPECT_EQ(PillowModeName(*ycck), "CMYK");
  EXPECT_EQ(ycck->channels, 3);
  Result<ImageInfo> gif = ProbeImage(ReadImage("modes/anim_trns.gif"));
  ASSERT_TRUE(gif.ok());
  EXPECT_EQ(PillowModeName(*gif), "P");
  EXPECT_EQ(gif->channels, 4);  // frame 0 has a transparent index: convert("RGBA")
  EXPECT_EQ(gif->frames, 3);
  // An identity gray palette is mode L for Pillow, its transparent index a colour key.
  Result<ImageInfo> gray = ProbeImage(ReadImage("modes/gray_ramp.gif"));
  ASSERT_TRUE(gray.ok());
  EXPECT_EQ(PillowModeName(*gray), "L");
  ASSERT_TRUE(gray->transparency.has_value());
  EXPECT_EQ((*gray->transparency)[0], 200);
  Result<ImageInfo> apng = ProbeImage(ReadImage("modes/anim_default_image.png"));
  ASSERT_TRUE(apng.ok());
  EXPECT_EQ(apng->frames, 3);  // two animation frames + the default image
  Result<ImageInfo> gray16 = ProbeImage(ReadImage("modes/gray16_mixed.png"));
  ASSERT_TRUE(gray16.ok());
  EXPECT_EQ(PillowModeName(*gray16), "I;16");
  EXPECT_EQ(gray16->channels, 1);
}

// Cuts `file` at every length: a cut either fails or, from `intact_from` bytes on, decodes to
// the full image (a GIF without its trailer, an animation with frame 0 complete).
void ExpectEveryCutFailsOrIsIntact(const std::string& file, size_t intact_from) {
  const std::vector<uint8_t> bytes = ReadImage(file);
  Result<Image> full = DecodeImage(bytes);
  ASSERT_TRUE(full.ok()) << file;
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::span<const uint8_t> cut = std::span(bytes).first(n);
    Result<ImageInfo> info = ProbeImage(cut);
    Result<Image> image = DecodeImage(cut);
    if (!image.ok()) continue;
    EXPECT_GE(n, intact_from) << file << " cut to " << n;
    EXPECT_EQ(image->pixels, full->pixels) << file << " cut to " << n;
  }
}

TEST(Robustness, EveryTruncationOfTheNewInputsFailsOrKeepsEveryPixel) {
  for (const char* jpeg : {"modes/cmyk_adobe.jpg", "modes/ycck.jpg", "modes/warn_huffman.jpg"}) {
    ExpectEveryCutFailsOrIsIntact(jpeg, ReadImage(jpeg).size());
  }
  // A PNG keeps its pixels without the last IDAT's CRC and IEND (robustness_test.cc).
  ExpectEveryCutFailsOrIsIntact("modes/gray16_mixed.png",
                                ReadImage("modes/gray16_mixed.png").size() - 16);
  // Pillow 13 decodes a GIF without its trailer and its last block terminator, not shorter.
  for (const char* gif : {"modes/interlaced.gif", "modes/offset_trns.gif"}) {
    ExpectEveryCutFailsOrIsIntact(gif, ReadImage(gif).size() - 2);
  }
  // An animated GIF's later frames are not needed for frame 0, whose data ends one byte (its
  // terminator) before the second frame's graphic control extension (21 F9 04).
  const std::vector<uint8_t> anim = ReadImage("modes/anim.gif");
  const std::vector<uint8_t> gce = {0x21, 0xF9, 0x04};
  auto first = std::search(anim.begin(), anim.end(), gce.begin(), gce.end());
  ASSERT_NE(first, anim.end());
  auto second = std::search(first + 1, anim.end(), gce.begin(), gce.end());
  ASSERT_NE(second, anim.end());
  ExpectEveryCutFailsOrIsIntact("modes/anim.gif",
                                static_cast<size_t>(second - anim.begin()) - 1);
}

}  // namespace
}  // namespace docfeed::internal
