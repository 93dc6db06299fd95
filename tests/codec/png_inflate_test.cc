// The whole-buffer PNG decode (src/codec/png_inflate.cc) against libspng, the decoder it stands
// in for: for every 8-bit colour type, each of the five filters and sizes down to one pixel, the
// rows must be the ones libspng's own decode gives, and the fast path must have been the one that
// made them. Files it must decline (IDAT chunks not in one run, a bad CRC, a bad Adler-32, a
// stream too short or too long, a filter type above 4, trailing bytes) must come out of
// DecodeImage exactly as libspng alone makes of them: the same pixels, or the same error.
// The same for every other bit depth and colour type, palettes with and without tRNS: the raw
// rows must be libspng's, and the pixels those DecodeImage gives when libspng makes the rows.
// The golden files (decode_test.cc) compare the same path with Pillow.
#include <gtest/gtest.h>
#include <spng.h>
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "codec/internal/png_inflate.h"
#include "codec_test_util.h"

namespace docfeed::internal {
namespace {

using testing::MakeNoiseImage;

void PutU32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

uint32_t GetU32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

void PutChunk(std::vector<uint8_t>& out, const char* type, std::span<const uint8_t> data) {
  PutU32(out, static_cast<uint32_t>(data.size()));
  const size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  // zlib's crc32 is PNG's CRC-32 (PNG spec 5.5): an independent implementation from libdeflate's.
  PutU32(out, static_cast<uint32_t>(crc32(0, out.data() + start, static_cast<uInt>(4 + data.size()))));
}

// A PNG of the given header and zlib stream, the stream cut into IDAT chunks of `chunk` bytes,
// with a tEXt chunk after the first IDAT when `split_run`.
std::vector<uint8_t> Assemble(uint32_t width, uint32_t height, uint8_t color_type,
                              std::span<const uint8_t> stream, size_t chunk,
                              bool split_run = false) {
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<uint8_t> ihdr;
  PutU32(ihdr, width);
  PutU32(ihdr, height);
  ihdr.insert(ihdr.end(), {8, color_type, 0, 0, 0});
  PutChunk(png, "IHDR", ihdr);
  for (size_t pos = 0; pos < stream.size(); pos += chunk) {
    PutChunk(png, "IDAT", stream.subspan(pos, std::min(chunk, stream.size() - pos)));
    if (split_run && pos == 0) {
      const uint8_t text[] = {'C', 'o', 'm', 'm', 'e', 'n', 't', 0, 'x'};
      PutChunk(png, "tEXt", text);
    }
  }
  PutChunk(png, "IEND", {});
  return png;
}

std::vector<uint8_t> Deflate(std::span<const uint8_t> raw) {
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::vector<uint8_t> out(size);
  EXPECT_EQ(compress2(out.data(), &size, raw.data(), static_cast<uLong>(raw.size()), 6), Z_OK);
  out.resize(size);
  return out;
}

// The IDAT data of a PNG joined, inflated: the filtered scanlines.
std::vector<uint8_t> FilteredScanlines(const std::vector<uint8_t>& png, size_t expected) {
  std::vector<uint8_t> stream;
  for (size_t pos = 8; pos + 12 <= png.size();) {
    const uint32_t length = GetU32(&png[pos]);
    if (std::memcmp(&png[pos + 4], "IDAT", 4) == 0) {
      stream.insert(stream.end(), &png[pos + 8], &png[pos + 8] + length);
    }
    pos += size_t{length} + 12;
  }
  std::vector<uint8_t> raw(expected);
  uLongf size = static_cast<uLongf>(raw.size());
  EXPECT_EQ(uncompress(raw.data(), &size, stream.data(), static_cast<uLong>(stream.size())), Z_OK);
  EXPECT_EQ(size, expected);
  return raw;
}

uint8_t ColorType(int channels) {
  constexpr uint8_t kTypes[] = {0, 4, 2, 6};
  return kTypes[channels - 1];
}

// Noise rows, flat rows and ramps, so every predictor branch (Paeth's three choices, Average's
// carries) is taken.
Image TestImage(int32_t width, int32_t height, int32_t channels, uint32_t seed) {
  Image image = MakeNoiseImage(width, height, channels, seed);
  const size_t stride = image.stride_bytes();
  for (int32_t y = 0; y < height; ++y) {
    uint8_t* row = image.pixels.data() + static_cast<size_t>(y) * stride;
    if (y % 3 == 1) std::memset(row, 255, stride);
    if (y % 3 == 2) {
      for (size_t i = 0; i < stride; ++i) row[i] = static_cast<uint8_t>(i * 7 + y * 3);
    }
  }
  return image;
}

// libspng's encoder with one filter forced (libspng is also the decoding reference below; the
// fast path never calls it): `rows` in the file's own packing, and a palette (tRNS with it)
// when `plte` is given.
std::vector<uint8_t> SpngEncode(const spng_ihdr& header, std::span<const uint8_t> rows,
                                int filter_choice, spng_plte* plte = nullptr,
                                spng_trns* trns = nullptr) {
  spng_ctx* ctx = spng_ctx_new(SPNG_CTX_ENCODER);
  EXPECT_NE(ctx, nullptr);
  spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
  spng_set_option(ctx, SPNG_FILTER_CHOICE, filter_choice);
  spng_ihdr ihdr = header;
  EXPECT_EQ(spng_set_ihdr(ctx, &ihdr), 0);
  if (plte != nullptr) {
    EXPECT_EQ(spng_set_plte(ctx, plte), 0);
  }
  if (trns != nullptr) {
    EXPECT_EQ(spng_set_trns(ctx, trns), 0);
  }
  // libspng's API takes a non-const pointer but only reads the rows.
  EXPECT_EQ(spng_encode_image(ctx, const_cast<uint8_t*>(rows.data()), rows.size(), SPNG_FMT_PNG,
                              SPNG_ENCODE_FINALIZE),
            0);
  size_t size = 0;
  int error = 0;
  void* buffer = spng_get_png_buffer(ctx, &size, &error);
  std::vector<uint8_t> out(static_cast<uint8_t*>(buffer), static_cast<uint8_t*>(buffer) + size);
  std::free(buffer);
  spng_ctx_free(ctx);
  return out;
}

std::vector<uint8_t> EncodeWithFilter(const Image& image, int filter_choice) {
  spng_ihdr ihdr{};
  ihdr.width = static_cast<uint32_t>(image.width);
  ihdr.height = static_cast<uint32_t>(image.height);
  ihdr.bit_depth = 8;
  ihdr.color_type = ColorType(image.channels);
  return SpngEncode(ihdr, image.pixels, filter_choice);
}

// What libspng alone makes of `png`: its raw rows, or its error code.
struct SpngOutcome {
  int error = 0;
  std::vector<uint8_t> rows;
};

SpngOutcome SpngDecode(std::span<const uint8_t> png) {
  SpngOutcome outcome;
  spng_ctx* ctx = spng_ctx_new(0);
  spng_set_png_buffer(ctx, png.data(), png.size());
  size_t size = 0;
  outcome.error = spng_decoded_image_size(ctx, SPNG_FMT_RAW, &size);
  if (outcome.error == 0) {
    outcome.rows.resize(size);
    outcome.error = spng_decode_image(ctx, outcome.rows.data(), size, SPNG_FMT_RAW, 0);
  }
  spng_ctx_free(ctx);
  return outcome;
}

// DecodeImage must give libspng's outcome: the same rows, or an error carrying its message.
void ExpectSameAsSpng(const std::string& what, std::span<const uint8_t> png) {
  const SpngOutcome want = SpngDecode(png);
  Result<Image> got = DecodeImage(png);
  if (want.error == 0) {
    ASSERT_TRUE(got.ok()) << what << ": " << got.status().ToString();
    EXPECT_TRUE(got->pixels == want.rows) << what;
  } else {
    ASSERT_FALSE(got.ok()) << what << ": libspng refuses (" << spng_strerror(want.error) << ")";
    EXPECT_NE(got.status().message().find(spng_strerror(want.error)), std::string::npos)
        << what << ": " << got.status().ToString();
  }
}

bool FastPathTakes(std::span<const uint8_t> png, const Image& like) {
  const PngRows rows{.width = static_cast<uint32_t>(like.width),
                     .height = static_cast<uint32_t>(like.height),
                     .samples_per_pixel = like.channels,
                     .bit_depth = 8};
  std::vector<uint8_t> out(rows.height * (rows.row_bytes() + 1));
  return InflatePngRows(png, rows, out.data(), out.size());
}

constexpr int kFilters[] = {SPNG_FILTER_CHOICE_NONE, SPNG_FILTER_CHOICE_SUB,
                            SPNG_FILTER_CHOICE_UP, SPNG_FILTER_CHOICE_AVG,
                            SPNG_FILTER_CHOICE_PAETH, SPNG_FILTER_CHOICE_ALL};

TEST(PngInflate, EveryFilterAndColourTypeGivesLibspngRows) {
  struct Size {
    int32_t width, height;
  };
  int cases = 0;
  for (const Size size : {Size{1, 1}, Size{1, 9}, Size{5, 3}, Size{17, 4}, Size{301, 67}}) {
    for (int32_t channels = 1; channels <= 4; ++channels) {
      const Image image = TestImage(size.width, size.height, channels, 40 + channels);
      for (int filter : kFilters) {
        const std::vector<uint8_t> png = EncodeWithFilter(image, filter);
        const std::string what = std::to_string(size.width) + "x" + std::to_string(size.height) +
                                 " c" + std::to_string(channels) + " filter choice " +
                                 std::to_string(filter);
        ASSERT_TRUE(FastPathTakes(png, image)) << what;
        Result<Image> decoded = DecodeImage(png);
        ASSERT_TRUE(decoded.ok()) << what << ": " << decoded.status().ToString();
        EXPECT_TRUE(decoded->pixels == SpngDecode(png).rows) << what;
        EXPECT_TRUE(decoded->pixels == image.pixels) << what;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 5 * 4 * 6);
}

// Every colour type at every bit depth IHDR allows (PNG spec 11.2.2 table 11.1).
struct Layout {
  uint8_t color_type;
  uint8_t bit_depth;
};
constexpr Layout kLayouts[] = {{0, 1}, {0, 2}, {0, 4}, {0, 8}, {0, 16}, {2, 8},  {2, 16},
                               {3, 1}, {3, 2}, {3, 4}, {3, 8}, {4, 8},  {4, 16}, {6, 8},
                               {6, 16}};

int Samples(uint8_t color_type) {
  constexpr int kSamples[] = {1, 0, 3, 1, 2, 0, 4};
  return kSamples[color_type];
}

// A PNG of `layout` written by libspng's encoder from rows in the file's own packing: noise,
// palette indices below `palette_entries` (when a palette: that many entries, the first
// `trns_entries` with a tRNS alpha), one filter choice for all rows.
std::vector<uint8_t> EncodeLayout(Layout layout, uint32_t width, uint32_t height, int filter,
                                  uint32_t palette_entries, uint32_t trns_entries,
                                  uint32_t seed) {
  const size_t row_bytes =
      (size_t{width} * static_cast<size_t>(Samples(layout.color_type) * layout.bit_depth) + 7) /
      8;
  Image noise = MakeNoiseImage(static_cast<int32_t>(row_bytes), static_cast<int32_t>(height), 1,
                               seed);
  std::vector<uint8_t>& rows = noise.pixels;
  if (layout.color_type == 3) {  // each index below palette_entries
    const int bits = layout.bit_depth;
    for (size_t y = 0; y < height; ++y) {
      for (uint32_t x = 0; x < width; ++x) {
        const uint32_t index = (x * 7 + static_cast<uint32_t>(y) * 3 + seed) % palette_entries;
        uint8_t& byte = rows[y * row_bytes + x * static_cast<uint32_t>(bits) / 8];
        const int shift = 8 - bits * static_cast<int>(x % static_cast<uint32_t>(8 / bits) + 1);
        const int mask = ((1 << bits) - 1) << shift;
        byte = static_cast<uint8_t>((byte & ~mask) | static_cast<int>(index) << shift);
      }
    }
  }
  spng_ihdr ihdr{};
  ihdr.width = width;
  ihdr.height = height;
  ihdr.bit_depth = layout.bit_depth;
  ihdr.color_type = layout.color_type;
  if (layout.color_type != 3) return SpngEncode(ihdr, rows, filter);
  spng_plte plte{};
  plte.n_entries = palette_entries;
  for (uint32_t i = 0; i < palette_entries; ++i) {
    plte.entries[i] = {.red = static_cast<uint8_t>(i * 37 + 5),
                       .green = static_cast<uint8_t>(255 - i),
                       .blue = static_cast<uint8_t>(i * 11),
                       .alpha = 0};
  }
  spng_trns trns{};
  trns.n_type3_entries = trns_entries;
  for (uint32_t i = 0; i < trns_entries; ++i) trns.type3_alpha[i] = static_cast<uint8_t>(i * 29);
  return SpngEncode(ihdr, rows, filter, &plte, trns_entries > 0 ? &trns : nullptr);
}

// `png` with its IDAT data replaced by one IDAT whose stream inflates to the filtered rows and
// then 65 zero bytes: libspng stops once the last row is inflated and decodes it; the
// whole-buffer path, which wants the stream to end there, declines and leaves it to libspng.
std::vector<uint8_t> WithLongerStream(const std::vector<uint8_t>& png, size_t filtered_bytes) {
  std::vector<uint8_t> filtered = FilteredScanlines(png, filtered_bytes);
  filtered.insert(filtered.end(), 65, 0);
  const std::vector<uint8_t> stream = Deflate(filtered);
  std::vector<uint8_t> out(png.begin(), png.begin() + 8);
  bool idat_written = false;
  for (size_t pos = 8; pos + 12 <= png.size();) {
    const size_t length = GetU32(&png[pos]);
    if (std::memcmp(&png[pos + 4], "IDAT", 4) != 0) {
      out.insert(out.end(), png.begin() + static_cast<ptrdiff_t>(pos),
                 png.begin() + static_cast<ptrdiff_t>(pos + length + 12));
    } else if (!idat_written) {
      PutChunk(out, "IDAT", stream);
      idat_written = true;
    }
    pos += length + 12;
  }
  return out;
}

// For every layout: the whole-buffer rows are libspng's SPNG_FMT_RAW rows, and DecodeImage's
// pixels (palette expansion, low bit depths scaled, 16 bits reduced) are those it gives when the
// rows come from libspng instead (the longer-stream copy), which for palettes are libspng's own
// expanded pixels.
TEST(PngInflate, EveryBitDepthAndPaletteGivesLibspngPixels) {
  struct Size {
    uint32_t width, height;
  };
  int cases = 0;
  for (const Layout layout : kLayouts) {
    const bool palette = layout.color_type == 3;
    const uint32_t full = palette ? 1u << layout.bit_depth : 0;
    for (const Size size : {Size{1, 1}, Size{5, 3}, Size{17, 4}, Size{301, 23}}) {
      for (int filter : kFilters) {
        for (const uint32_t trns : palette ? std::vector<uint32_t>{0, full / 2 + 1}
                                           : std::vector<uint32_t>{0}) {
          const uint32_t entries = std::min(full, 200u);
          const std::vector<uint8_t> png =
              EncodeLayout(layout, size.width, size.height, filter, entries,
                           std::min(trns, entries), static_cast<uint32_t>(cases));
          const std::string what = "colour type " + std::to_string(layout.color_type) + " " +
                                   std::to_string(layout.bit_depth) + "-bit " +
                                   std::to_string(size.width) + "x" +
                                   std::to_string(size.height) + " filter choice " +
                                   std::to_string(filter) + " tRNS " + std::to_string(trns);
          const PngRows rows{.width = size.width,
                             .height = size.height,
                             .samples_per_pixel = Samples(layout.color_type),
                             .bit_depth = layout.bit_depth};
          std::vector<uint8_t> raw(rows.height * (rows.row_bytes() + 1));
          ASSERT_TRUE(InflatePngRows(png, rows, raw.data(), raw.size())) << what;
          const SpngOutcome spng_raw = SpngDecode(png);
          ASSERT_EQ(spng_raw.error, 0) << what;
          EXPECT_TRUE(std::equal(spng_raw.rows.begin(), spng_raw.rows.end(), raw.begin()) &&
                      spng_raw.rows.size() == rows.height * rows.row_bytes())
              << what;

          Result<Image> fast = DecodeImage(png);
          ASSERT_TRUE(fast.ok()) << what << ": " << fast.status().ToString();
          const std::vector<uint8_t> longer = WithLongerStream(png, raw.size());
          ASSERT_FALSE(InflatePngRows(longer, rows, raw.data(), raw.size())) << what;
          Result<Image> by_libspng = DecodeImage(longer);
          ASSERT_TRUE(by_libspng.ok()) << what << ": " << by_libspng.status().ToString();
          EXPECT_EQ(fast->channels, by_libspng->channels) << what;
          EXPECT_TRUE(fast->pixels == by_libspng->pixels) << what;
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, (11 + 4 * 2) * 4 * 6);
}

// A palette index past the last PLTE entry: libspng decides what the file gives, and
// DecodeImage gives that.
TEST(PngInflate, PaletteIndexWithoutAnEntryIsLibspngs) {
  for (const uint8_t bits : {uint8_t{2}, uint8_t{8}}) {
    // Indices 0..2 with three entries, then the same rows under a two-entry palette.
    const std::vector<uint8_t> png = EncodeLayout({3, bits}, 9, 4, SPNG_FILTER_CHOICE_ALL, 3, 0, 1);
    SpngOutcome want;
    {
      std::vector<uint8_t> two = png;
      // PLTE follows IHDR: shorten it from 9 to 6 bytes and fix its length and CRC.
      const size_t plte = 8 + 25;
      ASSERT_EQ(std::memcmp(&two[plte + 4], "PLTE", 4), 0);
      ASSERT_EQ(GetU32(&two[plte]), 9u);
      two.erase(two.begin() + static_cast<ptrdiff_t>(plte + 8 + 6),
                two.begin() + static_cast<ptrdiff_t>(plte + 8 + 9));
      two[plte + 3] = 6;
      const uint32_t crc = static_cast<uint32_t>(crc32(0, &two[plte + 4], 10));
      for (int i = 0; i < 4; ++i) {
        two[plte + 14 + static_cast<size_t>(i)] = static_cast<uint8_t>(crc >> (24 - 8 * i));
      }
      spng_ctx* ctx = spng_ctx_new(0);
      spng_set_png_buffer(ctx, two.data(), two.size());
      size_t size = 0;
      want.error = spng_decoded_image_size(ctx, SPNG_FMT_RGB8, &size);
      if (want.error == 0) {
        want.rows.resize(size);
        want.error = spng_decode_image(ctx, want.rows.data(), size, SPNG_FMT_RGB8, SPNG_DECODE_TRNS);
      }
      spng_ctx_free(ctx);
      Result<Image> got = DecodeImage(two);
      if (want.error == 0) {
        ASSERT_TRUE(got.ok()) << int{bits} << ": " << got.status().ToString();
        EXPECT_TRUE(got->pixels == want.rows) << int{bits};
      } else {
        ASSERT_FALSE(got.ok()) << int{bits};
        EXPECT_NE(got.status().message().find(spng_strerror(want.error)), std::string::npos)
            << got.status().ToString();
      }
    }
  }
}

TEST(PngInflate, ManySmallIdatChunksAreOneStream) {
  const Image image = TestImage(120, 40, 3, 7);
  const std::vector<uint8_t> filtered =
      FilteredScanlines(EncodeWithFilter(image, SPNG_FILTER_CHOICE_ALL), 40 * (360 + 1));
  const std::vector<uint8_t> stream = Deflate(filtered);
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{4096}}) {
    const std::vector<uint8_t> png = Assemble(120, 40, 2, stream, chunk);
    EXPECT_TRUE(FastPathTakes(png, image)) << chunk;
    ExpectSameAsSpng("IDAT chunks of " + std::to_string(chunk), png);
  }
}

// The files the fast path declines, and what DecodeImage does with them: libspng's outcome.
TEST(PngInflate, DeclinesAnythingUnusualAndLibspngDecides) {
  const Image image = TestImage(64, 30, 4, 11);
  const size_t filtered_bytes = 30 * (64 * 4 + 1);
  const std::vector<uint8_t> filtered =
      FilteredScanlines(EncodeWithFilter(image, SPNG_FILTER_CHOICE_ALL), filtered_bytes);
  const std::vector<uint8_t> stream = Deflate(filtered);
  const size_t chunk = stream.size() / 3 + 1;
  int declined = 0;
  auto check = [&](const std::string& what, const std::vector<uint8_t>& png) {
    EXPECT_FALSE(FastPathTakes(png, image)) << what;
    declined += FastPathTakes(png, image) ? 0 : 1;
    ExpectSameAsSpng(what, png);
  };

  check("IDAT run split by a tEXt chunk", Assemble(64, 30, 6, stream, chunk, true));

  std::vector<uint8_t> bad_crc = Assemble(64, 30, 6, stream, chunk);
  const size_t second_idat = 8 + 25 + 12 + chunk;  // signature, IHDR, first IDAT
  ASSERT_EQ(std::memcmp(&bad_crc[second_idat + 4], "IDAT", 4), 0);
  bad_crc[second_idat + 8 + chunk] ^= 0x01;  // the second IDAT's CRC
  check("a bad CRC in the second IDAT", bad_crc);

  std::vector<uint8_t> bad_adler = stream;
  bad_adler.back() ^= 0x01;
  check("a bad Adler-32", Assemble(64, 30, 6, bad_adler, chunk));

  std::vector<uint8_t> short_filtered(filtered.begin(), filtered.end() - 10);
  check("a stream 10 bytes short", Assemble(64, 30, 6, Deflate(short_filtered), chunk));

  std::vector<uint8_t> long_filtered = filtered;
  long_filtered.insert(long_filtered.end(), 65, 0);
  check("a stream 65 bytes too long", Assemble(64, 30, 6, Deflate(long_filtered), chunk));

  std::vector<uint8_t> bad_filter = filtered;
  bad_filter[7 * (64 * 4 + 1)] = 7;  // row 7's filter type
  check("filter type 7 on row 7", Assemble(64, 30, 6, Deflate(bad_filter), chunk));

  std::vector<uint8_t> cut = Assemble(64, 30, 6, stream, chunk);
  cut.resize(second_idat + 20);
  check("cut inside the second IDAT", cut);
  EXPECT_EQ(declined, 7);

  // Bytes after the zlib stream inside IDAT: libdeflate stops at the stream's end, as libspng
  // stops after the last row; both decode the image.
  std::vector<uint8_t> trailing = stream;
  trailing.insert(trailing.end(), {1, 2, 3, 4, 5});
  const std::vector<uint8_t> with_trailing = Assemble(64, 30, 6, trailing, chunk);
  EXPECT_TRUE(FastPathTakes(with_trailing, image));
  ExpectSameAsSpng("5 bytes after the stream", with_trailing);
}

TEST(PngInflate, UnfilterScanlineRefusesFilterTypesAboveFour) {
  const uint8_t filtered[4] = {1, 2, 3, 4};
  uint8_t out[4];
  EXPECT_TRUE(UnfilterScanline(4, filtered, nullptr, 4, 2, out));
  EXPECT_FALSE(UnfilterScanline(5, filtered, nullptr, 4, 2, out));
  EXPECT_FALSE(UnfilterScanline(255, filtered, nullptr, 4, 2, out));
}

}  // namespace
}  // namespace docfeed::internal
