// The whole-buffer PNG pixel decode: codec/internal/png_inflate.h says what it takes and why.
// Chunk layout: PNG spec section 5.3 (length, type, data, CRC-32 over type and data); IDAT
// chunks are consecutive and their data concatenated is one zlib stream (5.6, 10.1); the
// filters are section 9.2's.
#include "codec/internal/png_inflate.h"

#include <libdeflate.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace docfeed::internal {
namespace {

uint32_t ReadU32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// The data of the IDAT chunks in file order, if they are one run of intact chunks: empty
// otherwise (no IDAT, a chunk cut short, a CRC mismatch). A single chunk is returned in place;
// several are copied into `joined`.
std::span<const uint8_t> IdatStream(std::span<const uint8_t> png, std::vector<uint8_t>& joined) {
  size_t pos = 8;  // after the signature
  // Skip to the first IDAT; the chunks before it are libspng's to check (png.cc runs its set-up
  // first).
  while (png.size() - pos >= 12 && std::memcmp(&png[pos + 4], "IDAT", 4) != 0) {
    const uint32_t length = ReadU32(&png[pos]);
    if (length > png.size() - pos - 12) return {};
    pos += size_t{length} + 12;
  }
  std::span<const uint8_t> first;
  size_t chunks = 0;
  joined.clear();
  while (png.size() - pos >= 12 && std::memcmp(&png[pos + 4], "IDAT", 4) == 0) {
    const uint32_t length = ReadU32(&png[pos]);
    if (length > png.size() - pos - 12) return {};
    const uint8_t* type = &png[pos + 4];
    if (libdeflate_crc32(0, type, size_t{length} + 4) != ReadU32(type + 4 + length)) return {};
    const std::span<const uint8_t> data(type + 4, length);
    if (chunks == 1) joined.assign(first.begin(), first.end());
    if (chunks >= 1) joined.insert(joined.end(), data.begin(), data.end());
    if (chunks == 0) first = data;
    ++chunks;
    pos += size_t{length} + 12;
  }
  if (chunks <= 1) return first;
  return joined;
}

struct DecompressorDeleter {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

// One decompressor per thread (libdeflate's are not thread-safe, and cost ~30 KB to make).
libdeflate_decompressor* ThreadDecompressor() {
  thread_local std::unique_ptr<libdeflate_decompressor, DecompressorDeleter> d(
      libdeflate_alloc_decompressor());
  return d.get();
}

// PNG spec 9.4: the neighbour whose value is closest to a + b - c, ties to a, then b.
inline uint8_t PaethPredictor(int a, int b, int c) {
  const int pa = std::abs(b - c);
  const int pb = std::abs(a - c);
  const int pc = std::abs(a + b - 2 * c);
  if (pa <= pb && pa <= pc) return static_cast<uint8_t>(a);
  return static_cast<uint8_t>(pb <= pc ? b : c);
}

// out[i] = filtered[i] + prior[i]: 16 bytes at a time. Each store lands at or before the bytes
// just loaded, which is what lets `out` sit before `filtered` in one buffer.
void UnfilterUp(const uint8_t* filtered, const uint8_t* prior, size_t n, uint8_t* out) {
  size_t i = 0;
#if defined(__SSE2__)
  for (; i + 16 <= n; i += 16) {
    const __m128i f = _mm_loadu_si128(reinterpret_cast<const __m128i*>(filtered + i));
    const __m128i p = _mm_loadu_si128(reinterpret_cast<const __m128i*>(prior + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_add_epi8(f, p));
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<uint8_t>(filtered[i] + prior[i]);
}

// Sub, Average and Paeth depend on the byte bpp to the left: a pixel at a time, its channels
// unrolled (independent chains the CPU overlaps). The left pixel (a) and the one above it (c)
// stay in registers: reading them back from `out`, which the compiler must assume aliases
// `filtered`, put a store-to-load round trip on every pixel's chain (Paeth rows took twice as
// long). That needs the channel loop unrolled, which gcc -O2 does not do by itself. n is a whole
// number of pixels (UnfilterScanline checks).
#define DOCFEED_UNROLL_CHANNELS _Pragma("GCC unroll 8")
template <int kBpp>
void UnfilterSub(const uint8_t* filtered, size_t n, uint8_t* out) {
  uint8_t a[kBpp] = {};
  for (size_t i = 0; i < n; i += kBpp) {
    DOCFEED_UNROLL_CHANNELS
    for (int k = 0; k < kBpp; ++k) {
      a[k] = static_cast<uint8_t>(filtered[i + k] + a[k]);
      out[i + k] = a[k];
    }
  }
}

template <int kBpp>
void UnfilterAverage(const uint8_t* filtered, const uint8_t* prior, size_t n, uint8_t* out) {
  uint8_t a[kBpp] = {};
  if (prior == nullptr) {  // b = 0
    for (size_t i = 0; i < n; i += kBpp) {
      DOCFEED_UNROLL_CHANNELS
      for (int k = 0; k < kBpp; ++k) {
        a[k] = static_cast<uint8_t>(filtered[i + k] + (a[k] >> 1));
        out[i + k] = a[k];
      }
    }
    return;
  }
  for (size_t i = 0; i < n; i += kBpp) {
    DOCFEED_UNROLL_CHANNELS
    for (int k = 0; k < kBpp; ++k) {
      a[k] = static_cast<uint8_t>(filtered[i + k] + ((a[k] + prior[i + k]) >> 1));
      out[i + k] = a[k];
    }
  }
}

template <int kBpp>
void UnfilterPaeth(const uint8_t* filtered, const uint8_t* prior, size_t n, uint8_t* out) {
  if (prior == nullptr) {  // b = c = 0: the predictor is a, as for Sub
    UnfilterSub<kBpp>(filtered, n, out);
    return;
  }
  // The first pixel has a = c = 0, for which the predictor is b.
  uint8_t a[kBpp] = {};
  uint8_t c[kBpp] = {};
  for (size_t i = 0; i < n; i += kBpp) {
    DOCFEED_UNROLL_CHANNELS
    for (int k = 0; k < kBpp; ++k) {
      const uint8_t b = prior[i + k];
      a[k] = static_cast<uint8_t>(filtered[i + k] + PaethPredictor(a[k], b, c[k]));
      c[k] = b;
      out[i + k] = a[k];
    }
  }
}

template <int kBpp>
bool Unfilter(uint8_t type, const uint8_t* filtered, const uint8_t* prior, size_t n, uint8_t* out) {
  switch (type) {
    case 0:
      std::memmove(out, filtered, n);
      return true;
    case 1:
      UnfilterSub<kBpp>(filtered, n, out);
      return true;
    case 2:
      if (prior == nullptr) {
        std::memmove(out, filtered, n);
      } else {
        UnfilterUp(filtered, prior, n, out);
      }
      return true;
    case 3:
      UnfilterAverage<kBpp>(filtered, prior, n, out);
      return true;
    case 4:
      UnfilterPaeth<kBpp>(filtered, prior, n, out);
      return true;
    default:
      return false;
  }
}

}  // namespace

bool UnfilterScanline(uint8_t filter_type, const uint8_t* filtered, const uint8_t* prior,
                      size_t row_bytes, int filter_bytes, uint8_t* out) {
  // The loops below go a whole pixel at a time; PNG rows of 8 bits and more are whole pixels.
  if (filter_bytes < 1 || row_bytes % static_cast<size_t>(filter_bytes) != 0) return false;
  switch (filter_bytes) {
    case 1:
      return Unfilter<1>(filter_type, filtered, prior, row_bytes, out);
    case 2:
      return Unfilter<2>(filter_type, filtered, prior, row_bytes, out);
    case 3:
      return Unfilter<3>(filter_type, filtered, prior, row_bytes, out);
    case 4:
      return Unfilter<4>(filter_type, filtered, prior, row_bytes, out);
    case 6:
      return Unfilter<6>(filter_type, filtered, prior, row_bytes, out);
    case 8:
      return Unfilter<8>(filter_type, filtered, prior, row_bytes, out);
    default:
      return false;
  }
}

bool InflatePngScanlines(std::span<const uint8_t> png, const PngRows& rows, uint8_t* out,
                         size_t out_size) {
  if (rows.samples_per_pixel < 1 || rows.samples_per_pixel > 4 || rows.width == 0 ||
      rows.height == 0) {
    return false;
  }
  switch (rows.bit_depth) {
    case 1:
    case 2:
    case 4:
    case 8:
    case 16:
      break;
    default:
      return false;
  }
  const size_t scanline_bytes = rows.row_bytes() + 1;  // the filter type first
  if (scanline_bytes > SIZE_MAX / rows.height) return false;
  const size_t filtered_bytes = scanline_bytes * rows.height;
  if (out_size < filtered_bytes || png.size() < 8) return false;

  thread_local std::vector<uint8_t> joined;
  const std::span<const uint8_t> stream = IdatStream(png, joined);
  if (stream.empty()) return false;
  size_t produced = 0;
  const libdeflate_result result = libdeflate_zlib_decompress(
      ThreadDecompressor(), stream.data(), stream.size(), out, filtered_bytes, &produced);
  // Keep a thread's joined copy only while it stays small (most files are one chunk or a few).
  if (joined.capacity() > (size_t{16} << 20)) std::vector<uint8_t>().swap(joined);
  if (result != LIBDEFLATE_SUCCESS || produced != filtered_bytes) return false;
  for (uint32_t y = 0; y < rows.height; ++y) {
    if (out[size_t{y} * scanline_bytes] > 4) return false;
  }
  return true;
}

bool InflatePngRows(std::span<const uint8_t> png, const PngRows& rows, uint8_t* out,
                    size_t out_size) {
  if (!InflatePngScanlines(png, rows, out, out_size)) return false;
  // Row y's filtered bytes start at y * (row_bytes + 1) + 1, its output at y * row_bytes: each
  // row moves down by y + 1 bytes, over bytes already consumed.
  const size_t row_bytes = rows.row_bytes();
  const size_t scanline_bytes = row_bytes + 1;
  for (uint32_t y = 0; y < rows.height; ++y) {
    const uint8_t* scanline = out + size_t{y} * scanline_bytes;
    uint8_t* row = out + size_t{y} * row_bytes;
    const uint8_t* prior = y == 0 ? nullptr : row - row_bytes;
    if (!UnfilterScanline(scanline[0], scanline + 1, prior, row_bytes, rows.filter_bytes(), row)) {
      return false;
    }
  }
  return true;
}

}  // namespace docfeed::internal
