// The whole-buffer PNG pixel decode behind DecodePng's common case (png.cc): the IDAT run
// inflated in one call by libdeflate, then the scanline filters undone in place.
//
// libspng inflates through zlib a scanline at a time and undoes the filters with byte loops; on
// document pages (long runs of white, Up and Paeth filters) that is most of a page's decode. The
// whole-buffer path does the same work in one pass each: libdeflate's inflate is several times
// zlib's on such streams (docs/benchmarks.md, "PNG decode").
//
// It decides nothing on its own. It takes only what libspng would decode to the same bytes, and
// says "not taken" on anything unusual; png.cc then lets libspng decode, which names the error:
// pixels, accepted files and error messages are libspng's in every case.
#ifndef DOCFEED_CODEC_INTERNAL_PNG_INFLATE_H_
#define DOCFEED_CODEC_INTERNAL_PNG_INFLATE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

namespace docfeed::internal {

// What the fast path needs from the header (PNG spec section 11.2.2, IHDR): a combination
// IHDR allows (checked by the caller), e.g. 1-bit palette indices or 16-bit RGBA.
struct PngRows {
  uint32_t width = 0;
  uint32_t height = 0;
  int samples_per_pixel = 0;  // 1..4: gray or palette index, gray + alpha, RGB, RGBA
  int bit_depth = 0;          // 1, 2, 4, 8 or 16
  // A row as the file packs it, without its filter byte: samples big-endian, sub-byte samples
  // leftmost in the high bits, the last byte padded.
  size_t row_bytes() const {
    const uint64_t bits = uint64_t{width} * static_cast<uint64_t>(samples_per_pixel * bit_depth);
    return static_cast<size_t>((bits + 7) / 8);
  }
  // The distance the filters look left (PNG spec 9.2 "bpp"): a pixel's bytes, at least one.
  int filter_bytes() const { return std::max(1, samples_per_pixel * bit_depth / 8); }
};

// Decodes the rows of `png` (the whole file; IHDR already read and checked by the caller, not
// interlaced) into `out`, height rows of row_bytes() each, packed: libspng's SPNG_FMT_RAW rows.
// `out` must hold height more bytes than that (out_size >= height * (row_bytes() + 1)): the
// filtered scanlines are inflated into it and unfiltered in place, each row moving down over the
// filter bytes before it.
//
// Returns false, with `out` holding anything, unless all of these hold: the IDAT chunks are one
// run (PNG spec 5.6), every one of their CRCs matches, their zlib stream is well formed (header,
// blocks, Adler-32) and inflates to exactly the filtered scanlines, and every filter type is 0-4.
// The rows are then those libspng's SPNG_FMT_RAW decode gives: the same bytes inflated, the
// filters of PNG spec section 9.2 undone. (Mapping them to pixels, palette expansion included,
// is the caller's.)
bool InflatePngRows(std::span<const uint8_t> png, const PngRows& rows, uint8_t* out,
                    size_t out_size);

// InflatePngRows without undoing the filters: true exactly when InflatePngRows would be, with
// the filtered scanlines (each row's filter type first) in `out`. For validation, which needs
// the verdict, not the pixels.
bool InflatePngScanlines(std::span<const uint8_t> png, const PngRows& rows, uint8_t* out,
                         size_t out_size);

// Undoes the filter of one scanline, PNG spec section 9.2: `filtered` holds row_bytes filtered
// bytes, `prior` the previous row's unfiltered bytes (nullptr for the first row, read as zeros).
// `out` may start before `filtered` in the same buffer (InflatePngRows moves rows down) but not
// after it; `prior` must not overlap `out`. `filter_bytes` is PngRows::filter_bytes(): 1, 2, 3,
// 4, 6 or 8. False on a filter type above 4 or another filter_bytes.
bool UnfilterScanline(uint8_t filter_type, const uint8_t* filtered, const uint8_t* prior,
                      size_t row_bytes, int filter_bytes, uint8_t* out);

}  // namespace docfeed::internal

#endif  // DOCFEED_CODEC_INTERNAL_PNG_INFLATE_H_
