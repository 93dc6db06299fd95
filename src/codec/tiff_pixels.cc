// TIFF sample layouts to Pillow modes, and the row conversions. Every rule below is a line of
// Pillow 13's TiffImagePlugin.OPEN_INFO (keys with FillOrder 2 behave as FillOrder 1, since
// libtiff undoes the bit order before Pillow's unpacker runs) or of its unpackers/converters;
// tests/data/tiff/make_tiff_cases.py checks them against Pillow file by file.
#include "codec/internal/tiff_pixels.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

namespace docfeed::internal {
namespace {

constexpr uint16_t kMinIsWhite = 0, kMinIsBlack = 1, kRgb = 2, kPalette = 3, kSeparated = 5,
                   kYcbcr = 6;
constexpr uint16_t kUnspecified = 0, kAssociated = 1, kUnassociated = 2;

Status Refuse(const TiffFields& f, std::string_view what) {
  return UnsupportedError(
      "TIFF " + std::string(what) + " is not supported (photometric " +
      std::to_string(f.photometric) + ", " + std::to_string(f.samples_per_pixel) + " samples of " +
      std::to_string(f.bits_per_sample) + " bits; Pillow cannot open it as an 8-bit image either)");
}

bool ExtrasAre(const TiffFields& f, std::initializer_list<uint16_t> want) {
  return f.extra_samples.size() == want.size() &&
         std::equal(want.begin(), want.end(), f.extra_samples.begin());
}

// Photometric 0 (min-is-white) and 1 (min-is-black).
Result<TiffPixelLayout> ClassifyGray(const TiffFields& f) {
  TiffPixelLayout l;
  l.min_is_white = f.photometric == kMinIsWhite;
  l.bits = f.bits_per_sample;
  l.samples = l.kept = f.samples_per_pixel;
  // Pillow reads signed samples only for 8-bit min-is-black gray (as unsigned bytes, mode L).
  const bool signed_l = f.sample_format == 2 && l.bits == 8 && l.samples == 1 && !l.min_is_white;
  if (f.sample_format != 1 && !signed_l) return Refuse(f, "signed or floating-point gray");
  if (f.samples_per_pixel == 2) {
    if (l.min_is_white || l.bits != 8 || !ExtrasAre(f, {kUnassociated})) {
      return Refuse(f, "gray with this extra sample");
    }
    l.kind = TiffPixelKind::kGrayAlpha;
    l.pillow_mode = "LA";
    l.alpha = TiffAlpha::kStraight;
    l.out_channels = 2;
    return l;
  }
  if (f.samples_per_pixel != 1 || !f.extra_samples.empty()) return Refuse(f, "gray layout");
  if (l.bits == 16) {
    // Pillow has I;16 for little-endian min-is-black and min-is-white (not inverted) and I;16B
    // for big-endian min-is-black only.
    if (f.big_endian && l.min_is_white) return Refuse(f, "big-endian 16-bit min-is-white gray");
    l.kind = TiffPixelKind::kGray16;
    l.min_is_white = false;
    l.pillow_mode = f.big_endian ? "I;16B" : "I;16";
    return l;
  }
  if (l.bits != 1 && l.bits != 2 && l.bits != 4 && l.bits != 8) return Refuse(f, "gray depth");
  l.kind = l.bits == 1 ? TiffPixelKind::kBilevel : TiffPixelKind::kGray;
  l.pillow_mode = l.bits == 1 ? "1" : "L";
  return l;
}

// RGB with optional extra samples: the first decides alpha, the others are skipped.
Result<TiffPixelLayout> ClassifyRgb(const TiffFields& f) {
  TiffPixelLayout l;
  l.kind = TiffPixelKind::kRgb;
  l.bits = f.bits_per_sample;
  l.samples = f.samples_per_pixel;
  if (f.sample_format != 1 || (l.bits != 8 && l.bits != 16)) return Refuse(f, "RGB sample type");
  if (l.samples < 3 || l.samples > (l.bits == 8 ? 6 : 4)) return Refuse(f, "RGB layout");
  const size_t extras = static_cast<size_t>(l.samples - 3);
  uint16_t first = kUnassociated;  // Four samples without ExtraSamples: Pillow reads RGBA.
  if (f.extra_samples.empty() && extras == 1) {
    first = kUnassociated;
  } else if (f.extra_samples.size() != extras) {
    return Refuse(f, "RGB with mismatched ExtraSamples");
  } else if (extras > 0) {
    first = f.extra_samples[0];
    for (size_t i = 1; i < extras; ++i) {
      if (f.extra_samples[i] != kUnspecified) return Refuse(f, "RGB with several alpha samples");
    }
    // 999 is Corel Draw 10's value, which Pillow reads as alpha (8-bit only).
    const bool known = first <= kUnassociated || (first == 999 && l.bits == 8 && extras == 1);
    if (!known) return Refuse(f, "RGB with this ExtraSamples value");
  }
  const bool alpha = extras > 0 && first != kUnspecified;
  l.kept = alpha ? 4 : 3;
  l.alpha = !alpha ? TiffAlpha::kNone
                   : (first == kAssociated ? TiffAlpha::kPremultiplied : TiffAlpha::kStraight);
  l.out_channels = l.kept;
  l.pillow_mode = alpha ? "RGBA" : "RGB";
  return l;
}

Result<TiffPixelLayout> ClassifyPalette(const TiffFields& f) {
  TiffPixelLayout l;
  l.kind = TiffPixelKind::kPalette;
  l.bits = f.bits_per_sample;
  l.samples = f.samples_per_pixel;
  if (f.sample_format != 1) return Refuse(f, "palette sample type");
  if (l.samples == 1 && f.extra_samples.empty() &&
      (l.bits == 1 || l.bits == 2 || l.bits == 4 || l.bits == 8)) {
    l.pillow_mode = "P";
    l.out_channels = 3;
    return l;
  }
  if (l.samples != 2 || l.bits != 8) return Refuse(f, "palette layout");
  if (ExtrasAre(f, {kUnspecified})) {  // "PX": the extra sample is skipped.
    l.pillow_mode = "P";
    l.out_channels = 3;
    return l;
  }
  if (!ExtrasAre(f, {kUnassociated})) return Refuse(f, "palette with this extra sample");
  l.kept = 2;
  l.alpha = TiffAlpha::kStraight;
  l.pillow_mode = "PA";
  l.out_channels = 4;
  return l;
}

Result<TiffPixelLayout> ClassifyCmyk(const TiffFields& f) {
  TiffPixelLayout l;
  l.kind = TiffPixelKind::kCmyk;
  l.samples = f.samples_per_pixel;
  l.bits = f.bits_per_sample;
  // 16-bit CMYK: Pillow keeps the high byte of each sample ("CMYK;16L"/"CMYK;16B"/"CMYK;16N").
  if (f.sample_format != 1 || (l.bits != 8 && l.bits != 16)) return Refuse(f, "CMYK sample type");
  if (l.samples < 4 || l.samples > (l.bits == 8 ? 6 : 4) ||
      f.extra_samples.size() != size_t(l.samples - 4)) {
    return Refuse(f, "CMYK layout");
  }
  for (uint16_t e : f.extra_samples) {
    if (e != kUnspecified) return Refuse(f, "CMYK with alpha");
  }
  l.kept = 4;
  l.pillow_mode = "CMYK";
  l.out_channels = 3;
  return l;
}

}  // namespace

Result<TiffPixelLayout> ClassifyTiff(const TiffFields& fields) {
  TiffFields f = fields;
  // Pillow ignores unspecified extra samples stored in planes of their own.
  if (f.planar_config == 2 && !f.extra_samples.empty() &&
      std::all_of(f.extra_samples.begin(), f.extra_samples.end(),
                  [](uint16_t e) { return e == kUnspecified; })) {
    f.samples_per_pixel = static_cast<uint16_t>(f.samples_per_pixel - f.extra_samples.size());
    f.extra_samples.clear();
  }
  Result<TiffPixelLayout> layout = Refuse(f, "photometric interpretation");
  switch (f.photometric) {
    case kMinIsWhite:
    case kMinIsBlack:
      layout = ClassifyGray(f);
      break;
    case kRgb:
      layout = ClassifyRgb(f);
      break;
    case kPalette:
      layout = ClassifyPalette(f);
      break;
    case kSeparated:
      layout = ClassifyCmyk(f);
      break;
    case kYcbcr:
      if (f.samples_per_pixel != 3 || f.bits_per_sample != 8 || !f.extra_samples.empty()) {
        return Refuse(f, "YCbCr layout");
      }
      layout = TiffPixelLayout{.kind = TiffPixelKind::kYcbcr,
                               .pillow_mode = "RGB",
                               .samples = 3,
                               .kept = 3,
                               .out_channels = 3};
      break;
    default:
      break;
  }
  if (!layout.ok()) return layout;
  layout->separate_planes = f.planar_config == 2 && layout->kept > 1;
  // Pillow reads the alpha plane of a planar gray+alpha or palette+alpha image into the wrong
  // band of its LA/PA image; refuse rather than copy that.
  if (layout->separate_planes && layout->kept == 2) {
    return Refuse(f, "planar-separate image with two samples");
  }
  return layout;
}

namespace {

uint16_t Native16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// 8 output bytes (0 or 255) per input byte of 1-bit samples, most significant bit first.
constexpr std::array<uint64_t, 256> MakeBitExpansion() {
  std::array<uint64_t, 256> table{};
  for (int byte = 0; byte < 256; ++byte) {
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) {
      if ((byte >> (7 - k)) & 1) v |= uint64_t{0xFF} << (8 * k);  // byte k of the output
    }
    table[static_cast<size_t>(byte)] = v;
  }
  return table;
}
constexpr std::array<uint64_t, 256> kBitExpansion = MakeBitExpansion();

// Bilevel rows (Pillow's "1" and "1;I" unpackers, then convert("L")): a set bit is 255 for
// min-is-black and 0 for min-is-white. Eight pixels per step.
void UnpackBilevel(bool min_is_white, const uint8_t* in, int32_t pixels, uint8_t* out) {
  const uint64_t flip = min_is_white ? ~uint64_t{0} : 0;
  const size_t whole = static_cast<size_t>(pixels) / 8;
  for (size_t i = 0; i < whole; ++i) {
    const uint64_t v = kBitExpansion[in[i]] ^ flip;
    std::memcpy(out + 8 * i, &v, 8);  // little-endian host: byte k is pixel 8 * i + k
  }
  for (size_t x = whole * 8; x < static_cast<size_t>(pixels); ++x) {
    const bool set = (in[x / 8] >> (7 - x % 8)) & 1;
    out[x] = static_cast<uint8_t>((set != min_is_white) ? 255 : 0);
  }
}

// 1/2/4-bit samples, most significant bits first (Pillow's "1", "L;2", "L;4", "P;N" unpackers):
// gray scales the value to 0..255 (x255, x0x55, x0x11) and min-is-white inverts it; palette
// keeps the index.
void UnpackLowBits(const TiffPixelLayout& l, const uint8_t* in, int32_t pixels, uint8_t* out) {
  const int bits = l.bits;
  const int mask = (1 << bits) - 1;
  const int per_byte = 8 / bits;
  const bool palette = l.kind == TiffPixelKind::kPalette;
  const int scale = palette ? 1 : 255 / mask;
  const int flip = l.min_is_white ? 255 : 0;
  for (int32_t x = 0; x < pixels; ++x) {
    const int shift = 8 - bits * (x % per_byte + 1);
    const int value = ((in[x / per_byte] >> shift) & mask) * scale;
    out[x] = static_cast<uint8_t>(palette ? value : value ^ flip);
  }
}

}  // namespace

void UnpackTiffRow(const TiffPixelLayout& l, const uint8_t* in, int32_t pixels, uint8_t* out) {
  const size_t n = static_cast<size_t>(pixels);
  if (l.kind == TiffPixelKind::kBilevel) {
    UnpackBilevel(l.min_is_white, in, pixels, out);
    return;
  }
  if (l.bits < 8) {
    UnpackLowBits(l, in, pixels, out);
    return;
  }
  const size_t samples = static_cast<size_t>(l.samples);
  const size_t kept = static_cast<size_t>(l.kept);
  if (l.kind == TiffPixelKind::kGray16) {  // Convert.c I16_L: values above 255 clip to 255.
    for (size_t x = 0; x < n; ++x) {
      const uint16_t v = Native16(in + 2 * x);
      out[x] = static_cast<uint8_t>(v > 255 ? 255 : v);
    }
    return;
  }
  if (l.bits == 16) {  // Colour: the high byte of each sample ("RGB;16N" etc.).
    for (size_t x = 0; x < n; ++x) {
      for (size_t c = 0; c < kept; ++c) {
        out[x * kept + c] = static_cast<uint8_t>(Native16(in + 2 * (x * samples + c)) >> 8);
      }
    }
    return;
  }
  if (samples == kept && !l.min_is_white) {
    std::memcpy(out, in, n * kept);
    return;
  }
  const uint8_t flip = l.min_is_white ? 0xFF : 0;  // "L;I": 255 - value.
  for (size_t x = 0; x < n; ++x) {
    for (size_t c = 0; c < kept; ++c) out[x * kept + c] = in[x * samples + c] ^ flip;
  }
}

void UnpackTiffPlaneRow(const TiffPixelLayout& l, int32_t plane, const uint8_t* in, int32_t pixels,
                        uint8_t* out) {
  const size_t n = static_cast<size_t>(pixels);
  const size_t kept = static_cast<size_t>(l.kept);
  uint8_t* dst = out + plane;
  if (l.bits == 16) {  // Pillow's "R;16N".."A;16N" band unpackers keep the high byte.
    for (size_t x = 0; x < n; ++x) dst[x * kept] = static_cast<uint8_t>(Native16(in + 2 * x) >> 8);
    return;
  }
  for (size_t x = 0; x < n; ++x) dst[x * kept] = in[x];
}

namespace {

// Convert.c cmyk2rgb: each channel is nk - nk * ink / 255 with nk = 255 - black, rounded like
// Pillow's MULDIV255.
uint8_t InkToRgb(uint8_t ink, int nk) {
  const int tmp = ink * nk + 128;
  return static_cast<uint8_t>(nk - (((tmp >> 8) + tmp) >> 8));
}

// Unpack.c unpackRGBa: alpha 0 gives all zeros, 255 keeps the colour, otherwise each channel is
// value * 255 / alpha (integer division) clipped to 255.
void Unpremultiply(const uint8_t* in, uint8_t* out) {
  const int a = in[3];
  for (int c = 0; c < 3; ++c) {
    const int v = a == 0 ? 0 : (a == 255 ? in[c] : in[c] * 255 / a);
    out[c] = static_cast<uint8_t>(v > 255 ? 255 : v);
  }
  out[3] = static_cast<uint8_t>(a);
}

}  // namespace

void FinishTiffPixels(const TiffPixelLayout& l, const TiffPalette& palette, const uint8_t* in,
                      size_t pixels, uint8_t* out) {
  if (l.kind == TiffPixelKind::kPalette) {  // P/PA convert("RGB"/"RGBA"): the palette entry.
    const size_t in_step = static_cast<size_t>(l.kept);
    const size_t out_step = static_cast<size_t>(l.out_channels);
    for (size_t i = 0; i < pixels; ++i) {
      const std::array<uint8_t, 3>& rgb = palette[in[i * in_step]];
      std::memcpy(out + i * out_step, rgb.data(), 3);
      if (out_step == 4) out[i * 4 + 3] = in[i * in_step + 1];
    }
    return;
  }
  if (l.kind == TiffPixelKind::kCmyk) {
    for (size_t i = 0; i < pixels; ++i) {
      const uint8_t* p = in + 4 * i;
      const int nk = 255 - p[3];
      const uint8_t r = InkToRgb(p[0], nk), g = InkToRgb(p[1], nk), b = InkToRgb(p[2], nk);
      out[3 * i] = r;
      out[3 * i + 1] = g;
      out[3 * i + 2] = b;
    }
    return;
  }
  for (size_t i = 0; i < pixels; ++i) Unpremultiply(in + 4 * i, out + 4 * i);
}

}  // namespace docfeed::internal
