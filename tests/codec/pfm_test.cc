// Grayscale float PFM ("Pf", the container of Pix2Struct's stored patch rows): the exact bytes
// (header, bottom-to-top rows, little-endian floats), round trips through ViewPfm and DecodePfm,
// and the refusal of every malformed or unsupported header with a clear message. Pillow's
// reading of these files (mode "F", the values exactly) is checked in
// tests/python/test_hf_pix2struct_stored_patches.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "codec/codec.h"

namespace docfeed::internal {
namespace {

std::vector<uint8_t> Bytes(const std::string& header, size_t raster_bytes, uint8_t fill = 0) {
  std::vector<uint8_t> out(header.begin(), header.end());
  out.resize(out.size() + raster_bytes, fill);
  return out;
}

// Values that are distinct in every bit position that matters: negative, fractional, huge,
// denormal, infinite, and the row / column ids of a patch row.
std::vector<float> Rows(int32_t width, int32_t height) {
  std::vector<float> v(static_cast<size_t>(width) * static_cast<size_t>(height));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * -0.37f + 1.0f / 3.0f;
  if (v.size() > 3) {
    v[1] = std::numeric_limits<float>::denorm_min();
    v[2] = std::numeric_limits<float>::infinity();
    v[3] = 3.0e38f;
  }
  return v;
}

float FloatAt(const std::vector<uint8_t>& bytes, size_t offset) {
  float f;
  std::memcpy(&f, bytes.data() + offset, sizeof(f));
  return f;
}

TEST(PfmTest, EncodeWritesTheHeaderThenTheRowsBottomToTop) {
  const std::vector<float> rows = {1.0f, 2.0f, 3.0f,   // top row
                                   4.0f, 5.0f, 6.0f};  // bottom row
  Result<std::vector<uint8_t>> pfm = EncodePfm(rows.data(), 3, 2);
  ASSERT_TRUE(pfm.ok()) << pfm.status().ToString();
  const std::string header = "Pf\n3 2\n-1.0\n";
  ASSERT_EQ(pfm->size(), header.size() + 6 * sizeof(float));
  EXPECT_EQ(std::string(pfm->begin(), pfm->begin() + static_cast<ptrdiff_t>(header.size())),
            header);
  // The file's first row is the image's bottom row (PFM's order), little-endian floats.
  EXPECT_EQ(FloatAt(*pfm, header.size()), 4.0f);
  EXPECT_EQ(FloatAt(*pfm, header.size() + 8), 6.0f);
  EXPECT_EQ(FloatAt(*pfm, header.size() + 12), 1.0f);
  EXPECT_EQ((*pfm)[header.size() + 12], 0x00);  // 1.0f = 00 00 80 3F little-endian
  EXPECT_EQ((*pfm)[header.size() + 15], 0x3F);
  EXPECT_EQ(SniffCodec(*pfm), ImageCodec::kPfm);
  EXPECT_EQ(ImageCodecName(ImageCodec::kPfm), "pfm");
}

TEST(PfmTest, RoundTripsThroughViewAndDecodeBitExactly) {
  for (const auto& [width, height] : {std::pair{770, 37}, std::pair{1, 1}, std::pair{5, 2}}) {
    const std::vector<float> rows = Rows(width, height);
    Result<std::vector<uint8_t>> pfm = EncodePfm(rows.data(), width, height);
    ASSERT_TRUE(pfm.ok()) << pfm.status().ToString();
    Result<FloatRows> decoded = DecodePfm(*pfm);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(decoded->width, width);
    EXPECT_EQ(decoded->height, height);
    ASSERT_EQ(decoded->values.size(), rows.size());
    EXPECT_EQ(std::memcmp(decoded->values.data(), rows.data(), rows.size() * sizeof(float)), 0);

    Result<FloatRowsView> view = ViewPfm(*pfm);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    EXPECT_EQ(view->stride_bytes, -static_cast<ptrdiff_t>(width * sizeof(float)));
    // Rows 1.. of the view only: CopyFloatRows takes any range.
    if (height > 1) {
      std::vector<float> tail(static_cast<size_t>(width) * static_cast<size_t>(height - 1));
      CopyFloatRows(*view, 1, height - 1, tail.data());
      EXPECT_EQ(std::memcmp(tail.data(), rows.data() + width, tail.size() * sizeof(float)), 0);
    }
  }
}

TEST(PfmTest, ReadsAnUnalignedRaster) {
  const std::vector<float> rows = Rows(7, 3);
  Result<std::vector<uint8_t>> pfm = EncodePfm(rows.data(), 7, 3);
  ASSERT_TRUE(pfm.ok());
  // The raster at an odd address, as inside a decompressed record batch.
  std::vector<uint8_t> shifted(pfm->size() + 1);
  std::memcpy(shifted.data() + 1, pfm->data(), pfm->size());
  Result<FloatRows> decoded = DecodePfm(std::span<const uint8_t>(shifted).subspan(1));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->values, rows);
}

TEST(PfmTest, AcceptsNetpbmWhitespaceAndScaleSpellingsOfMinusOne) {
  for (const std::string header :
       {"Pf\n2 1\n-1\n", "Pf 2 1 -1.0 ", "Pf\t2\r\n1\n\n-1.000000\n", "Pf\n2 1\n-1.\n"}) {
    Result<FloatRows> decoded = DecodePfm(Bytes(header, 8));
    EXPECT_TRUE(decoded.ok()) << header << ": " << decoded.status().ToString();
  }
}

struct BadCase {
  std::vector<uint8_t> bytes;
  StatusCode code;
  std::string message;
};

TEST(PfmTest, RefusesBadHeadersClearly) {
  const std::string long_space = "Pf\n" + std::string(5000, ' ') + "1 1\n-1.0\n";
  const std::vector<BadCase> cases = {
      {Bytes("PF\n1 1\n-1.0\n", 12), StatusCode::kUnsupported, "colour PFM"},
      {Bytes("Pf\n1 1\n1.0\n", 4), StatusCode::kUnsupported, "big-endian"},
      {Bytes("Pf\n1 1\n-2.5\n", 4), StatusCode::kUnsupported, "scale -2.5"},
      {Bytes("Pf\n1 1\n0.0\n", 4), StatusCode::kCorruption, "scale is 0"},
      {Bytes("Pf\n1 1\nabc\n", 4), StatusCode::kCorruption, "not a real number"},
      {Bytes("Pf\n1 1\nnan\n", 4), StatusCode::kCorruption, "not a real number"},
      {Bytes("Pf\n1 1\n-1.0x\n", 4), StatusCode::kCorruption, "not a real number"},
      {Bytes("Pf\n1 1\n-" + std::string(40, '1') + "\n", 4), StatusCode::kCorruption,
       "scale is too long"},
      {Bytes("Pf\n0 1\n-1.0\n", 0), StatusCode::kCorruption, "zero size"},
      {Bytes("Pf\n2 2\n-1.0\n", 15), StatusCode::kCorruption, "truncated"},
      {Bytes("Pf\n2 2\n-1.0\n", 17), StatusCode::kCorruption, "bytes after the raster"},
      {Bytes("Pf\n1x1\n-1.0\n", 4), StatusCode::kCorruption, "no whitespace before height"},
      {Bytes("Pf\n1 -1\n-1.0\n", 4), StatusCode::kCorruption, "height is not a decimal"},
      {Bytes("Pf\n#c\n1 1\n-1.0\n", 4), StatusCode::kCorruption, "width is not a decimal"},
      {Bytes("Pf\n99999999999 1\n-1.0\n", 4), StatusCode::kCorruption, "width is too large"},
      {Bytes("Pf\n1 1\n-1.0", 0), StatusCode::kCorruption, "truncated in its header"},
      {Bytes("Pf\n1 1", 0), StatusCode::kCorruption, "truncated in its header"},
      {Bytes("Pf", 0), StatusCode::kCorruption, "truncated in its header"},
      {Bytes(long_space, 4), StatusCode::kCorruption, "longer than 4096"},
      {Bytes("P6\n1 1\n255\n", 3), StatusCode::kCorruption, "not a PFM"},
      {Bytes("Pf\n2147483647 2147483647\n-1.0\n", 4), StatusCode::kResourceExhausted, "exceeds"},
  };
  DecodeLimits limits;
  limits.max_pixels = uint64_t{1} << 32;
  for (const BadCase& c : cases) {
    const std::string what(c.bytes.begin(), c.bytes.begin() + std::min<size_t>(c.bytes.size(), 24));
    Result<FloatRowsView> view = ViewPfm(c.bytes, limits);
    ASSERT_FALSE(view.ok()) << what;
    EXPECT_EQ(view.status().code(), c.code) << what << ": " << view.status().ToString();
    EXPECT_NE(view.status().message().find(c.message), std::string::npos)
        << what << ": " << view.status().ToString();
    Result<FloatRows> decoded = DecodePfm(c.bytes, limits);
    ASSERT_FALSE(decoded.ok()) << what;
    EXPECT_EQ(decoded.status().code(), c.code) << what;
  }
}

TEST(PfmTest, EnforcesTheInputAndPixelLimits) {
  const std::vector<float> rows = Rows(10, 10);
  Result<std::vector<uint8_t>> pfm = EncodePfm(rows.data(), 10, 10);
  ASSERT_TRUE(pfm.ok());
  DecodeLimits small_input;
  small_input.max_input_bytes = pfm->size() - 1;
  EXPECT_EQ(ViewPfm(*pfm, small_input).status().code(), StatusCode::kResourceExhausted);
  DecodeLimits few_pixels;
  few_pixels.max_pixels = 99;
  EXPECT_EQ(ViewPfm(*pfm, few_pixels).status().code(), StatusCode::kResourceExhausted);
}

TEST(PfmTest, EncodeRefusesEmptyRows) {
  const float one = 1.0f;
  EXPECT_EQ(EncodePfm(&one, 0, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodePfm(&one, 1, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodePfm(nullptr, 1, 1).status().code(), StatusCode::kInvalidArgument);
}

TEST(PfmTest, IsNoImageForTheImageDecoders) {
  const float one = 1.0f;
  Result<std::vector<uint8_t>> pfm = EncodePfm(&one, 1, 1);
  ASSERT_TRUE(pfm.ok());
  for (const Status& st : {ProbeImage(*pfm).status(), DecodeImage(*pfm).status()}) {
    EXPECT_EQ(st.code(), StatusCode::kUnsupported);
    EXPECT_NE(st.message().find("float PFM"), std::string::npos) << st.ToString();
  }
  EXPECT_EQ(SniffCodec(Bytes("PF ", 0)), ImageCodec::kPfm);
  EXPECT_EQ(SniffCodec(Bytes("Pfx", 0)), ImageCodec::kUnknown);
  EXPECT_EQ(SniffCodec(Bytes("Pf", 0)), ImageCodec::kUnknown);
}

}  // namespace
}  // namespace docfeed::internal
