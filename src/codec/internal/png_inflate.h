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

#include <cstddef>
#include <cstdint>
#include <span>

namespace docfeed::internal {

// What the fast path needs from the header (PNG spec section 11.2.2, IHDR).
struct PngRows {
  uint32_t width = 0;
  uint32_t height = 0;
  int bytes_per_pixel = 0;  // 1..4: 8-bit gray, gray + alpha, RGB, RGBA
  size_t row_bytes() const { return size_t{width} * static_cast<size_t>(bytes_per_pixel); }
};

// Decodes the rows of `png` (the whole file; IHDR already read and checked by the caller) into
// `out`, height rows of row_bytes() each, packed. `out` must hold height more bytes than that
// (out_size >= height * (row_bytes() + 1)): the filtered scanlines are inflated into it and
// unfiltered in place, each row moving down over the filter bytes before it.
//
// Returns false, with `out` holding anything, unless all of these hold: the IDAT chunks are one
// run (PNG spec 5.6), every one of their CRCs matches, their zlib stream is well formed (header,
// blocks, Adler-32) and inflates to exactly the filtered scanlines, and every filter type is 0-4.
// The rows are then those libspng's SPNG_FMT_RAW decode gives: the same bytes inflated, the
// filters of PNG spec section 9.2 undone.
bool InflatePngRows(std::span<const uint8_t> png, const PngRows& rows, uint8_t* out,
                    size_t out_size);

// Undoes the filter of one scanline, PNG spec section 9.2: `filtered` holds row_bytes filtered
// bytes, `prior` the previous row's unfiltered bytes (nullptr for the first row, read as zeros).
// `out` may start before `filtered` in the same buffer (InflatePngRows moves rows down) but not
// after it; `prior` must not overlap `out`. False on a filter type above 4.
bool UnfilterScanline(uint8_t filter_type, const uint8_t* filtered, const uint8_t* prior,
                      size_t row_bytes, int bytes_per_pixel, uint8_t* out);

}  // namespace docfeed::internal

#endif  // DOCFEED_CODEC_INTERNAL_PNG_INFLATE_H_
