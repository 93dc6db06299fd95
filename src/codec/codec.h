// docfeed's image codec: sniffs, probes, decodes and encodes the document images that go into
// shards (JPEG via libjpeg-turbo, PNG via libspng, WebP via libwebp, GIF via giflib and TIFF via
// libtiff (decode only); binary PGM/PPM, the container of preprocessed samples, in ppm.cc).
//
// The decoders are a C++ mirror of what Hugging Face `datasets` does with an Image column:
// `PIL.Image.open(...).load()`, i.e. Pillow's natural 8-bit mode, pixel for pixel. EXIF
// orientation is reported by ProbeImage and applied separately by ApplyOrientation, exactly like
// `PIL.ImageOps.exif_transpose`. See src/codec/README.md for the parity rules and the variants
// that are refused.
//
// Thread safety: every function here is reentrant and keeps no global state; images and byte
// buffers are plain values owned by the caller.
#ifndef DOCFEED_CODEC_CODEC_H_
#define DOCFEED_CODEC_CODEC_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "docfeed/image.h"
#include "docfeed/status.h"
#include "kernels/resize.h"  // ImageView (a plain struct; no link dependency)

namespace docfeed::internal {

// Container formats docfeed can recognise. JPEG, PNG, WebP, GIF, TIFF and binary PGM/PPM (P5/P6,
// maxval 255) are decoded; BMP and the other Netpbm variants are recognised so the error can say
// which format was refused. A PDF ("%PDF-") is a document, not an image: DecodeImage refuses it,
// and `docfeed pack` renders its pages through src/pdf instead.
// kPfm is a float PFM ("Pf" grayscale, or "PF" colour, which is refused): not an 8-bit image but
// the container of stored model output (Pix2Struct's patch rows; ViewPfm), so DecodeImage and
// ProbeImage refuse it.
enum class ImageCodec { kUnknown, kJpeg, kPng, kWebp, kGif, kBmp, kTiff, kPpm, kPdf, kPfm };

// "jpeg", "png", "webp", "gif", "bmp", "tiff", "ppm", "pdf", "pfm" or "unknown".
std::string_view ImageCodecName(ImageCodec codec);

// Identifies the format from its magic bytes (never from a file name). Returns kUnknown when no
// signature matches, including for empty or too-short input.
ImageCodec SniffCodec(std::span<const uint8_t> bytes);

// What the headers say about an image, without decoding pixels.
struct ImageInfo {
  int32_t width = 0;
  int32_t height = 0;
  // Channels DecodeImage returns: 1 L, 2 LA, 3 RGB, 4 RGBA. For palette PNGs that is 3, or 4 when
  // a tRNS chunk is present; for a GIF 3, or 4 when frame 0 has a transparent index (1 when
  // Pillow opens it as L); for a CMYK/YCCK JPEG it is 3 (`cmyk` is set; decoded to RGB).
  // For TIFF: bilevel and 16-bit gray give 1, palette 3 (4 with an alpha sample), CMYK 3.
  int32_t channels = 0;
  ImageCodec codec = ImageCodec::kUnknown;
  // Bits per stored sample: JPEG 8/12, PNG 1/2/4/8/16, WebP/GIF 8, TIFF 1/2/4/8/16.
  int32_t bit_depth = 8;
  // PNG colour type 3, a GIF Pillow opens as mode P, TIFF photometric palette.
  bool palette = false;
  bool progressive_or_interlaced = false;  // Progressive JPEG or Adam7-interlaced PNG.
  bool cmyk = false;  // 4-component (CMYK or YCCK) JPEG; TIFF photometric separated (CMYK).
  bool has_alpha = false;
  bool big_endian = false;  // TIFF in "MM" byte order (Pillow's mode I;16B for 16-bit gray).
  // Pillow's info["transparency"] of a grayscale (mode 1 or L) or RGB PNG with a tRNS chunk
  // before the image data: the gray value in [0], or the R, G, B values, as Pillow reads them
  // (16-bit fields; mode 1 gives 0 or 255). DecodeImage ignores it, as Image.open + np.asarray
  // do; a pixel whose decoded 8-bit samples equal it is transparent to convert("RGBA")
  // (imaging's transformers 5 colour conversion). Palette transparency is decoded as alpha.
  std::optional<std::array<uint16_t, 3>> transparency;
  // The EXIF Orientation tag (1..8) as PIL.ImageOps.exif_transpose reads it (IFD0 of the EXIF
  // block, else `tiff:Orientation` in XMP; for TIFF the Orientation tag of the probed page, which
  // Pillow applies when it loads the page); 1 when absent or out of range.
  int32_t exif_orientation = 1;
  // Pillow's n_frames: the pages of a TIFF (its IFDs), the frames of an animated GIF, APNG
  // (acTL, plus the default image when it is not part of the animation) or animated WebP; 1 for
  // everything else. DecodeImage returns frame 0, as Image.open() shows it, unless a TIFF page
  // is asked for (DecodeOptions).
  int32_t frames = 1;
};

// The mode name Pillow gives this image after Image.open(): "L", "LA", "RGB", "RGBA", "P",
// "PA" (TIFF palette with alpha), "CMYK", "1" (1-bit grayscale PNG or TIFF), "I;16" (16-bit
// grayscale PNG or little-endian TIFF) or "I;16B" (16-bit grayscale big-endian TIFF).
std::string_view PillowModeName(const ImageInfo& info);

// Which page of a multi-page file to read: TIFF IFD number `frame` in file order (Pillow's
// Image.seek(frame)); the other formats have only frame 0. Frame 0 is what `datasets` and
// Image.open give.
struct DecodeOptions {
  int32_t frame = 0;
};

// Reads only the headers (plus, for PNG and WebP, a walk over chunk headers to find EXIF; for
// TIFF the IFD chain, to count pages), so it costs microseconds even for a 600 dpi scan.
// Errors: Unsupported for BMP/unknown data, 12-bit or lossless JPEG and TIFF layouts Pillow
// cannot open as 8-bit images; Corruption for malformed or truncated headers and zero
// dimensions; InvalidArgument for a frame the file does not have.
Result<ImageInfo> ProbeImage(std::span<const uint8_t> bytes, const DecodeOptions& options = {});

// Resource limits checked from the headers before any pixel buffer is allocated.
struct DecodeLimits {
  // Pillow raises DecompressionBombError above 2 * Image.MAX_IMAGE_PIXELS (2 * 89,478,485).
  static constexpr uint64_t kPillowBombPixels = 2 * uint64_t{89'478'485};
  uint64_t max_pixels = kPillowBombPixels;         // width * height must be <= this.
  uint64_t max_input_bytes = uint64_t{256} << 20;  // Encoded size must be <= this.
};

// An 8-bit image (docfeed/image.h): interleaved channels, rows top to bottom, no padding.
using docfeed::Image;

// What DecodeImage tolerated on the way to Pillow's pixels: today libjpeg's warnings (corrupt
// entropy-coded data such as a bad Huffman code, a marker inside the scan or lost restart
// sync; extraneous bytes between markers), after which libjpeg, and Pillow with it, goes on and
// the damaged blocks hold what libjpeg's recovery produced. Data that ends early is never a
// warning but an error ("truncated"), as in Pillow.
struct DecodeReport {
  int32_t warnings = 0;       // Warnings emitted during the decode (0: a clean decode).
  std::string first_warning;  // libjpeg's text of the first, e.g. "Corrupt JPEG data: bad ..."
};

// Decodes to the image's natural 8-bit mode, pixel-identical to Pillow's Image.open().load():
//   JPEG: L or RGB (libjpeg-turbo defaults: ISLOW IDCT, fancy upsampling); CMYK/YCCK to RGB as
//         Pillow's convert("RGB") of its mode CMYK (Adobe-inverted, as Pillow always reads it).
//   PNG:  L, LA, RGB, RGBA; palette through the palette to RGB (RGBA with tRNS); 1/2/4-bit gray
//         scaled to L; 16-bit RGB/RGBA/LA reduced to their high byte (LA to RGBA), as Pillow does;
//         16-bit gray (Pillow's I;16) to L as convert("L") does: values above 255 clip to 255.
//         APNG: the default image (Pillow's frame 0).
//   WebP: RGB, or RGBA when the bitstream has alpha; animated: frame 0 on its canvas.
//   GIF:  frame 0 on the logical screen, through the palette to RGB (RGBA when frame 0 has a
//         transparent index), or L when Pillow opens it as L (no palette, or the identity gray
//         palette).
//   PPM:  P5 -> L, P6 -> RGB (maxval 255 only; the raster is copied). See ViewPpm for the header
//         rules.
//   TIFF: page `options.frame` (default the first): L, LA, RGB, RGBA as Pillow's mode; bilevel
//         ("1") to L 0/255, 16-bit gray to L as Pillow's convert("L") (values above 255 clip to
//         255), 16-bit colour to its high bytes, palette to RGB/RGBA, CMYK to RGB as Pillow's
//         convert("RGB"). src/codec/README.md lists the layouts.
// EXIF orientation is NOT applied (not even TIFF's, which Pillow applies on load); see
// ApplyOrientation. `report` (may be null) receives the warnings a decode tolerated (see
// DecodeReport); it is reset on every call.
// Errors: ResourceExhausted when bytes or pixels exceed `limits`; Corruption for corrupt or
// truncated data (data that ends early is an error, not gray fill, as in Pillow); Unsupported
// for BMP, 12-bit/lossless JPEG, Netpbm other than binary P5/P6 with maxval 255, and TIFF
// compressions or layouts outside the README's table; InvalidArgument for a frame the file does
// not have.
Result<Image> DecodeImage(std::span<const uint8_t> bytes, const DecodeLimits& limits,
                          const DecodeOptions& options, DecodeReport* report = nullptr);
// The first page (frame 0).
Result<Image> DecodeImage(std::span<const uint8_t> bytes, const DecodeLimits& limits = {},
                          DecodeReport* report = nullptr);

// The geometry DecodeImage returns: sides and channels of the decoded Image.
struct DecodedGeometry {
  int32_t width = 0;
  int32_t height = 0;
  int32_t channels = 0;
};

// Validates frame 0 as DecodeImage(bytes, limits, report) would, without producing its pixels:
// it succeeds exactly when DecodeImage does, fails with the same Status otherwise, fills
// `report` with the same warnings, and returns the sides and channels of the Image DecodeImage
// would return. Cheaper where the format allows it without changing the outcome:
//   JPEG: the same libjpeg decompression (every marker read and every block entropy-decoded
//         up to EOI, so the same errors and warnings) at DCT scale 1/8, which leaves out the
//         full-size IDCT, upsampling and colour conversion; sides and channels from the header.
//   PNG:  the same decode up to the pixels: libspng's chunk checks and set-up, then the
//         whole-buffer inflate (IDAT CRCs, Adler-32, filter bytes) without undoing the filters,
//         or, where DecodeImage would fall back to libspng's rows, those rows into one reused
//         row; no image buffer, no conversion to 8 bits.
//   Others (WebP, GIF, TIFF, PPM): a full DecodeImage.
// The header limits (pixels, input bytes, the data-can-hold-the-image checks) run first, as in
// DecodeImage. tests/codec/validate_parity_test.cc checks the equivalence over every test
// image and damaged copies of them.
Result<DecodedGeometry> ValidateImage(std::span<const uint8_t> bytes,
                                      const DecodeLimits& limits = {},
                                      DecodeReport* report = nullptr);

// The container structure and integrity of frame 0's file, without decoding pixels (`docfeed
// pack --validate structure`; src/pack/README.md says what it guarantees next to ValidateImage):
//   JPEG: DecodeImage's header read and pre-decode checks (libjpeg up to the first SOS, with its
//         warnings), then a walk of every marker segment by its length (each within the file),
//         SOF consistent with the header, each SOS header checked and its entropy-coded data
//         skipped to the next marker (0xFF not followed by 0x00, 0xFF or RST0-7), only markers
//         libjpeg accepts, EOI at the end. A missing EOI is Corruption "truncated", as in
//         DecodeImage. Warnings: libjpeg's from the header, and "extraneous bytes before marker"
//         after the first scan; never those of the entropy decoder (e.g. bad Huffman code).
//   PNG:  DecodeImage's header read and pre-decode checks, then signature, every chunk's length
//         within the file and its CRC-32 over type and data, a 13-byte IHDR first (agreeing with
//         the probe), at least one IDAT and the IDATs consecutive, IEND present (what follows
//         IEND is ignored). The zlib stream is not inflated.
//   Others (WebP, GIF, TIFF, PPM): ValidateImage, i.e. a full DecodeImage.
// Returns the header's sides and the channels DecodeImage would return (ProbeImage's).
// Errors: as DecodeImage for everything the header checks refuse; Corruption (naming the chunk,
// marker or offset) for a structural defect.
Result<DecodedGeometry> ValidateImageStructure(std::span<const uint8_t> bytes,
                                               const DecodeLimits& limits = {},
                                               DecodeReport* report = nullptr);

// Lossless PNG (docfeed/image.h; defined in png.cc): 8-bit, colour type from `image.channels`
// (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA), zlib `compression_level` 0..9 (Pillow's default is 6).
// Errors: InvalidArgument for an empty/inconsistent image or a level outside 0..9.
using docfeed::EncodePng;

// Lossless WebP with `exact` set, so RGB under alpha 0 survives. 1- and 2-channel input is
// expanded to RGB/RGBA. A fully opaque image decodes back as RGB (WebP stores no alpha then).
// Errors: InvalidArgument for an empty/inconsistent image or a side above 16383 (WebP's limit).
Result<std::vector<uint8_t>> EncodeWebpLossless(const Image& image);

// Baseline JPEG at `quality` 1..100 with Pillow's default settings (4:2:0 chroma subsampling for
// RGB, no optimisation). 1 channel stays grayscale, 3 channels is YCbCr.
// Errors: InvalidArgument for 2 or 4 channels (JPEG has no alpha; like Pillow, which refuses to
// write RGBA as JPEG, the caller must drop or flatten alpha explicitly), a bad quality, or a side
// above 65500 (JPEG's limit).
Result<std::vector<uint8_t>> EncodeJpeg(const Image& image, int quality);

// The zero-copy path for stored preprocessed samples: validates a binary PGM/PPM and returns a
// view of its raster inside `bytes` (stride_bytes == width * channels; 1 channel for P5, 3 for
// P6). Header: magic "P5"/"P6", width, height, maxval as decimals (at most 2^31 - 1) separated
// by whitespace and '#' comments, one whitespace byte, then exactly width * height * channels
// bytes: no more, no less. The header must fit in 4096 bytes.
// REQUIRES: `bytes` outlives the view.
// Errors: Corruption for a malformed or truncated header, zero size, a short raster or trailing
// bytes; Unsupported for P1-P4/P7 and maxval other than 255; ResourceExhausted past `limits`.
Result<ImageView> ViewPpm(std::span<const uint8_t> bytes, const DecodeLimits& limits = {});

// Binary PGM (1 channel, "P5") or PPM (3 channels, "P6") with header
// "P5\n<width> <height>\n255\n" (P6 likewise) followed by the rows; `image.stride_bytes` may
// exceed a row. Pillow opens the result as mode L / RGB.
// Errors: InvalidArgument for 2 or 4 channels, an empty image or a stride shorter than a row.
Result<std::vector<uint8_t>> EncodePpm(const ImageView& image);

// Rows of float32 values inside PFM bytes (ViewPfm): row y (0 = the image's top row) starts at
// top_row + y * stride_bytes. PFM stores the bottom row first, so stride_bytes is negative; the
// values are little-endian float32 and need not be 4-byte aligned (read them with memcpy, as
// CopyFloatRows does).
struct FloatRowsView {
  const uint8_t* top_row = nullptr;
  int32_t width = 0;   // values a row
  int32_t height = 0;  // rows
  ptrdiff_t stride_bytes = 0;
};

// Float rows as values, top row first.
struct FloatRows {
  int32_t width = 0;
  int32_t height = 0;
  std::vector<float> values;  // width * height
};

// Validates a grayscale float PFM and returns a view of its rows inside `bytes`. Header: "Pf",
// width, height and scale separated by whitespace (no comments), width and height decimals of at
// most 2^31 - 1, the scale -1 (optionally "-1.0", "-1.000"...: little-endian, values as they
// are), then one whitespace byte and exactly width * height * 4 raster bytes, rows bottom to top.
// The header must fit in 4096 bytes.
// REQUIRES: `bytes` outlives the view.
// Errors: Corruption for a malformed or truncated header, a zero side, a scale that is not a
// real number or is 0, a short raster or trailing bytes; Unsupported for colour "PF", a positive
// scale (big-endian) or a scale other than -1; ResourceExhausted past `limits` (width * height
// counts as pixels).
Result<FloatRowsView> ViewPfm(std::span<const uint8_t> bytes, const DecodeLimits& limits = {});

// ViewPfm's rows copied out, top row first. Errors: ViewPfm's.
Result<FloatRows> DecodePfm(std::span<const uint8_t> bytes, const DecodeLimits& limits = {});

// Copies rows [first, first + count) of `view` (top row 0) to `out`, view.width values a row.
// REQUIRES: 0 <= first, first + count <= view.height; `out` holds count * view.width floats.
void CopyFloatRows(const FloatRowsView& view, int32_t first, int32_t count, float* out);

// Grayscale PFM of `height` rows of `width` float32 values (`rows`: top row first, contiguous):
// header "Pf\n<width> <height>\n-1.0\n", then the rows bottom to top, little-endian. Pillow opens
// it as mode "F" and np.asarray gives `rows` back exactly.
// Errors: InvalidArgument for a side below 1 or null `rows`.
Result<std::vector<uint8_t>> EncodePfm(const float* rows, int32_t width, int32_t height);

// Returns `image` transposed the way PIL.ImageOps.exif_transpose does for EXIF orientation
// 2..8 (mirror and/or 90/180/270 degree turn); any other value returns an unchanged copy.
// REQUIRES: image.pixels.size() == image.stride_bytes() * image.height.
Image ApplyOrientation(const Image& image, int32_t exif_orientation);

}  // namespace docfeed::internal

#endif  // DOCFEED_CODEC_CODEC_H_
