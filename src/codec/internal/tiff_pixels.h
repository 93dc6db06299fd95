// The TIFF sample layouts Pillow opens, and the conversion of libtiff's decoded rows to the 8-bit
// pixels docfeed returns for them. The rules mirror Pillow 13's TiffImagePlugin (the OPEN_INFO
// table: byte order, photometric interpretation, sample format, bits and extra samples -> mode
// and raw mode), its raw-mode unpackers (libImaging/Unpack.c) and its conversions to L/RGB/RGBA
// (libImaging/Convert.c). Tag meanings: TIFF 6.0 sections 3-8 (PhotometricInterpretation,
// BitsPerSample, ExtraSamples, PlanarConfiguration, ColorMap) and section 16 (CMYK).
#ifndef DOCFEED_CODEC_INTERNAL_TIFF_PIXELS_H_
#define DOCFEED_CODEC_INTERNAL_TIFF_PIXELS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "docfeed/status.h"

namespace docfeed::internal {

// The tags of one directory that decide the pixel layout, as libtiff reports them (fields that
// are absent hold the TIFF 6.0 defaults).
struct TiffFields {
  uint16_t photometric = 0;
  uint16_t compression = 1;
  uint16_t planar_config = 1;    // 1 contiguous (chunky), 2 separate planes
  uint16_t bits_per_sample = 1;  // libtiff refuses differing values per sample
  uint16_t samples_per_pixel = 1;
  uint16_t sample_format = 1;           // 1 unsigned, 2 signed, 3 IEEE float
  std::vector<uint16_t> extra_samples;  // 0 unspecified, 1 associated alpha, 2 unassociated alpha
  bool big_endian = false;              // "MM" byte order
};

// What a layout decodes through.
enum class TiffPixelKind {
  kBilevel,    // 1-bit gray, Pillow mode "1" -> L with 0/255
  kGray,       // 2/4/8-bit gray, mode "L" (2/4 bits scaled to 0..255)
  kGray16,     // 16-bit gray, mode "I;16"/"I;16B" -> L as convert("L"): min(value, 255)
  kGrayAlpha,  // 8-bit gray + unassociated alpha, mode "LA"
  kRgb,        // 8/16-bit RGB (+ alpha, + ignored extra samples), mode "RGB"/"RGBA"
  kPalette,    // 1/2/4/8-bit palette (+ alpha), mode "P"/"PA" -> RGB/RGBA through the ColorMap
  kCmyk,       // 8-bit CMYK (+ ignored extra samples), mode "CMYK" -> RGB as convert("RGB")
  kYcbcr,      // YCbCr, mode "RGB": libjpeg converts JPEG data, libtiff's TIFFRGBAImage the rest
};

enum class TiffAlpha { kNone, kStraight, kPremultiplied };

struct TiffPixelLayout {
  TiffPixelKind kind = TiffPixelKind::kGray;
  std::string_view pillow_mode;  // Image.open(...).mode: "1", "L", "I;16", "RGB", "P", ...
  bool min_is_white = false;     // samples inverted (Pillow's ";I" raw modes)
  int32_t bits = 8;              // bits per sample
  int32_t samples = 1;           // samples per pixel in the decoded data
  int32_t kept = 1;              // leading samples that form Pillow's mode pixel; the rest skipped
  TiffAlpha alpha = TiffAlpha::kNone;
  bool separate_planes = false;  // planar configuration 2 with more than one plane to read
  int32_t out_channels = 1;      // channels of the decoded Image: 1 L, 2 LA, 3 RGB, 4 RGBA

  // Bytes per pixel of the intermediate "mode" pixel (before palette/CMYK/alpha conversion).
  int32_t mode_channels() const { return kind == TiffPixelKind::kYcbcr ? 3 : kept; }
  // True when mode pixels differ from the output (palette, CMYK, premultiplied alpha).
  bool needs_finish() const {
    return kind == TiffPixelKind::kPalette || kind == TiffPixelKind::kCmyk ||
           alpha == TiffAlpha::kPremultiplied;
  }
};

// The layout Pillow gives `fields`, or Unsupported naming the TIFF feature Pillow (and so
// docfeed) cannot open as an 8-bit image.
Result<TiffPixelLayout> ClassifyTiff(const TiffFields& fields);

// A ColorMap reduced as Pillow does (each 16-bit entry's high byte, `value // 256`).
using TiffPalette = std::array<std::array<uint8_t, 3>, 256>;

// Converts the first `pixels` pixels of one decoded row into mode pixels
// (layout.mode_channels() bytes each). `in` is libtiff's output for the row: samples
// interleaved, 16-bit samples in native byte order, sub-byte samples most significant bit first.
// REQUIRES: `in` holds at least ceil(pixels * samples * bits / 8) bytes.
void UnpackTiffRow(const TiffPixelLayout& layout, const uint8_t* in, int32_t pixels, uint8_t* out);

// Like UnpackTiffRow for one plane of a planar-separate image: writes byte `plane` of each mode
// pixel from `in` (one sample per pixel). REQUIRES: layout.separate_planes, plane < kept.
void UnpackTiffPlaneRow(const TiffPixelLayout& layout, int32_t plane, const uint8_t* in,
                        int32_t pixels, uint8_t* out);

// Turns `pixels` mode pixels into output pixels (layout.out_channels bytes each): palette
// lookup, CMYK to RGB, premultiplied alpha undone; `out` may equal `in` when both have the same
// number of channels. REQUIRES: layout.needs_finish().
void FinishTiffPixels(const TiffPixelLayout& layout, const TiffPalette& palette, const uint8_t* in,
                      size_t pixels, uint8_t* out);

}  // namespace docfeed::internal

#endif  // DOCFEED_CODEC_INTERNAL_TIFF_PIXELS_H_
