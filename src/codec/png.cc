// PNG probe, decode and encode over libspng. Mode rules follow Pillow's PngImagePlugin (the
// `_MODES` table): PNG spec section 11.2.2 (IHDR) defines the colour types and bit depths.
#include <spng.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>

#include "base/recycled_bytes.h"
#include "codec/codec.h"
#include "codec/internal/exif.h"
#include "codec/internal/formats.h"
#include "codec/internal/png_inflate.h"
#include "codec/internal/spng_ctx.h"

namespace docfeed::internal {
namespace {

constexpr uint8_t kGray = 0, kRgb = 2, kPalette = 3, kGrayAlpha = 4, kRgba = 6;
// Caps on ancillary chunk sizes so a hostile file cannot make libspng buffer gigabytes of text.
constexpr size_t kChunkSizeLimitBytes = size_t{64} << 20;
constexpr size_t kChunkCacheLimitBytes = size_t{64} << 20;
// The most the PNG scratch buffer (Scratch) keeps between pages, per thread: an 8-bit palette
// page of 4000x4000 pixels.
constexpr size_t kScratchKeepBytes = size_t{16} << 20;

// Whether DecodePng and ValidatePng take the whole-buffer path (SetPngWholeBufferForTesting).
std::atomic<bool> g_whole_buffer{true};

// What a walk over the chunk headers finds (PNG spec section 5.3: length, type, data, CRC).
// Pillow reads EXIF from eXIf (anywhere before IEND, as exif_transpose loads the image first)
// and XMP from an iTXt chunk keyed "XML:com.adobe.xmp". Compressed iTXt is not inflated here.
struct ChunkScan {
  bool ihdr_crc_ok = false;  // libspng reports IHDR before checking its CRC; we check first.
  uint64_t idat_bytes = 0;
  bool has_trns = false;
  std::span<const uint8_t> trns;  // the first tRNS chunk's data (before IDAT)
  std::optional<int32_t> exif_orientation;
  std::optional<int32_t> xmp_orientation;
  uint32_t apng_frames = 0;       // acTL num_frames before IDAT, as Pillow accepts it; 0: none.
  bool apng_actl_seen = false;    // a second acTL makes Pillow drop the animation
  bool fctl_before_idat = false;  // the default image is the animation's first frame
};

uint32_t ReadU32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// CRC-32 of PNG spec section 5.5 (ISO 3309), bitwise: it only ever covers the 17-byte IHDR.
uint32_t Crc32(std::span<const uint8_t> bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (uint8_t b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void ScanXmp(std::span<const uint8_t> data, ChunkScan& scan) {
  // iTXt: keyword \0 compression-flag compression-method language \0 translated \0 text.
  constexpr std::string_view kKey("XML:com.adobe.xmp\0", 18);
  if (data.size() < kKey.size() + 2 || std::memcmp(data.data(), kKey.data(), kKey.size()) != 0 ||
      data[kKey.size()] != 0) {
    return;
  }
  std::span<const uint8_t> rest = data.subspan(kKey.size() + 2);
  for (int nul = 0; nul < 2; ++nul) {
    const auto* end = static_cast<const uint8_t*>(std::memchr(rest.data(), 0, rest.size()));
    if (end == nullptr) return;
    rest = rest.subspan(static_cast<size_t>(end - rest.data()) + 1);
  }
  scan.xmp_orientation = XmpOrientation(rest);
}

// Pillow's PngImagePlugin reads the chunks before IDAT when it opens a file: an acTL with
// 0 < num_frames <= 2^31 makes it an APNG (a second acTL, or a bad count, leaves a plain PNG),
// and an fcTL there makes the default image the first frame.
void ScanApngChunk(const uint8_t* type, std::span<const uint8_t> data, ChunkScan& scan) {
  if (std::memcmp(type, "acTL", 4) == 0 && data.size() >= 8) {
    const uint32_t frames = ReadU32(data.data());
    const bool valid = !scan.apng_actl_seen && frames != 0 && frames <= 0x80000000u;
    scan.apng_frames = valid ? frames : 0;
    scan.apng_actl_seen = true;
  } else if (std::memcmp(type, "fcTL", 4) == 0) {
    scan.fctl_before_idat = true;
  }
}

ChunkScan ScanChunks(std::span<const uint8_t> bytes) {
  ChunkScan scan;
  size_t pos = 8;  // After the signature.
  while (bytes.size() - pos >= 12) {
    const uint32_t length = ReadU32(&bytes[pos]);
    if (length > bytes.size() - pos - 12) break;  // Truncated; the decoder will say so.
    const uint8_t* type = &bytes[pos + 4];
    const std::span<const uint8_t> data = bytes.subspan(pos + 8, length);
    if (pos == 8 && std::memcmp(type, "IHDR", 4) == 0) {
      scan.ihdr_crc_ok =
          Crc32(bytes.subspan(pos + 4, size_t{length} + 4)) == ReadU32(&bytes[pos + 8 + length]);
    }
    if (std::memcmp(type, "IDAT", 4) == 0) scan.idat_bytes += length;
    if (scan.idat_bytes == 0) ScanApngChunk(type, data, scan);
    // tRNS counts only before the image data (PNG spec 5.6), where libspng applies it.
    if (std::memcmp(type, "tRNS", 4) == 0 && scan.idat_bytes == 0 && !scan.has_trns) {
      scan.has_trns = true;
      scan.trns = data;
    }
    if (std::memcmp(type, "eXIf", 4) == 0 && !scan.exif_orientation) {
      scan.exif_orientation = ExifOrientation(data);
    }
    if (std::memcmp(type, "iTXt", 4) == 0) ScanXmp(data, scan);
    if (std::memcmp(type, "IEND", 4) == 0) break;
    pos += size_t{length} + 12;
  }
  return scan;
}

Status SpngError(int error, std::string_view what) {
  std::string message = "PNG " + std::string(what) + ": " + spng_strerror(error);
  if (error == SPNG_IO_EOF || error == SPNG_EOF || error == SPNG_EIDAT_TOO_SHORT) {
    return CorruptionError("PNG image file is truncated (" + message + ")");
  }
  if (error == SPNG_EMEM) return ResourceExhaustedError(std::move(message));
  return CorruptionError(std::move(message));
}

struct PngHeader {
  SpngCtx ctx;
  spng_ihdr ihdr{};
  ChunkScan chunks;
};

Result<PngHeader> ReadHeader(std::span<const uint8_t> bytes) {
  PngHeader header{SpngCtx(spng_ctx_new(0)), {}, ScanChunks(bytes)};
  spng_ctx* ctx = header.ctx.get();
  if (ctx == nullptr) return ResourceExhaustedError("PNG: cannot allocate decoder");
  spng_set_chunk_limits(ctx, kChunkSizeLimitBytes, kChunkCacheLimitBytes);
  if (int e = spng_set_png_buffer(ctx, bytes.data(), bytes.size()); e != 0) {
    return SpngError(e, "buffer");
  }
  if (int e = spng_get_ihdr(ctx, &header.ihdr); e != 0) return SpngError(e, "header");
  if (!header.chunks.ihdr_crc_ok) return CorruptionError("PNG header (IHDR) checksum mismatch");
  return header;
}

// Samples a pixel has in the file (PNG spec 11.2.2; a palette index is one). IHDR's colour type
// is one of the five valid ones (ReadHeader's libspng check).
int SamplesPerPixel(uint8_t color_type) {
  constexpr int kSamplesPerPixel[] = {1, 0, 3, 1, 2, 0, 4};
  return kSamplesPerPixel[color_type];
}

// Channels DecodePng produces; Pillow turns 16-bit LA into RGBA ("LA;16B" unpacks to RGBA).
int32_t DecodedChannels(const spng_ihdr& ihdr, bool has_trns) {
  switch (ihdr.color_type) {
    case kGray:
      return 1;
    case kGrayAlpha:
      return ihdr.bit_depth == 16 ? 4 : 2;
    case kRgb:
      return 3;
    case kPalette:
      return has_trns ? 4 : 3;
    default:
      return 4;
  }
}

// Pillow's PngImagePlugin.chunk_tRNS for modes 1, L and RGB: big-endian 16-bit fields, taken as
// they are except mode 1's (0 or 255). A chunk too short for its colour type is left out (Pillow
// refuses to open such a file). 16-bit gray (mode I;16) is left out too: its key is a 16-bit
// value that the clipped 8-bit samples cannot be compared with.
std::optional<std::array<uint16_t, 3>> TransparencyKey(const spng_ihdr& ihdr,
                                                       std::span<const uint8_t> trns) {
  auto field = [&](size_t i) {
    return static_cast<uint16_t>((trns[2 * i] << 8) | trns[2 * i + 1]);
  };
  if (ihdr.color_type == kGray && ihdr.bit_depth <= 8 && trns.size() >= 2) {
    uint16_t gray = field(0);
    if (ihdr.bit_depth == 1) gray = gray != 0 ? 255 : 0;
    return std::array<uint16_t, 3>{gray, 0, 0};
  }
  if (ihdr.color_type == kRgb && trns.size() >= 6) {
    return std::array<uint16_t, 3>{field(0), field(1), field(2)};
  }
  return std::nullopt;
}

ImageInfo InfoFromHeader(const PngHeader& header) {
  const spng_ihdr& ihdr = header.ihdr;
  ImageInfo info;
  info.codec = ImageCodec::kPng;
  info.width = static_cast<int32_t>(ihdr.width);
  info.height = static_cast<int32_t>(ihdr.height);
  info.palette = ihdr.color_type == kPalette;
  info.channels = DecodedChannels(ihdr, info.palette && header.chunks.has_trns);
  info.bit_depth = ihdr.bit_depth;
  info.has_alpha = info.channels == 2 || info.channels == 4;
  if (header.chunks.has_trns) info.transparency = TransparencyKey(ihdr, header.chunks.trns);
  info.progressive_or_interlaced = ihdr.interlace_method != 0;
  info.exif_orientation =
      ResolveOrientation(header.chunks.exif_orientation, header.chunks.xmp_orientation);
  // Pillow's n_frames: acTL's count, plus the default image when no fcTL precedes it.
  if (header.chunks.apng_frames != 0) {
    const uint64_t frames =
        uint64_t{header.chunks.apng_frames} + (header.chunks.fctl_before_idat ? 0 : 1);
    info.frames = static_cast<int32_t>(std::min<uint64_t>(frames, INT32_MAX));
  }
  return info;
}

// Converts one row of libspng's SPNG_FMT_RAW output (the PNG's own packing, big-endian) to the
// 8-bit samples Pillow gives: low-bit gray scaled to 0..255 (Pillow's "L;2"/"L;4" unpackers;
// "1" becomes 0/255), 16-bit samples reduced to their high byte ("RGB;16B" etc.), 16-bit gray
// (mode I;16) clipped as convert("L") does (Convert.c I16B_L / I16_RGB: 255 above 255).
void ConvertRawRow(const uint8_t* raw, const spng_ihdr& ihdr, int32_t width, uint8_t* out) {
  const int bits = ihdr.bit_depth;
  if (ihdr.color_type == kGray && bits < 8) {
    const int scale = 255 / ((1 << bits) - 1);
    const int per_byte = 8 / bits;
    for (int32_t x = 0; x < width; ++x) {
      const int shift = 8 - bits * (x % per_byte + 1);
      const int value = (raw[x / per_byte] >> shift) & ((1 << bits) - 1);
      out[x] = static_cast<uint8_t>(value * scale);
    }
    return;
  }
  if (ihdr.color_type == kGray && bits == 16) {
    for (int32_t x = 0; x < width; ++x) {
      out[x] = raw[2 * x] != 0 ? uint8_t{255} : raw[2 * x + 1];
    }
    return;
  }
  if (ihdr.color_type == kGrayAlpha && bits == 16) {
    for (int32_t x = 0; x < width; ++x) {
      const uint8_t gray = raw[4 * x], alpha = raw[4 * x + 2];
      uint8_t* px = out + 4 * x;
      px[0] = px[1] = px[2] = gray;
      px[3] = alpha;
    }
    return;
  }
  // Only RGB(A) is left at 16 bits.
  const size_t samples = static_cast<size_t>(width) * (ihdr.color_type == kRgb ? 3 : 4);
  for (size_t i = 0; i < samples; ++i) out[i] = raw[2 * i];
}

bool NeedsConversion(const spng_ihdr& ihdr) {
  return ihdr.color_type != kPalette && ihdr.bit_depth != 8;
}

// Deflate cannot compress better than 1032:1 (zlib technical details, zlib.net/zlib_tech.html),
// so IDAT data that short cannot hold the image: refuse before allocating the pixel buffer.
Status CheckIdatCanHoldImage(const PngHeader& header) {
  const spng_ihdr& ihdr = header.ihdr;
  const uint64_t bits_per_row = uint64_t{ihdr.width} *
                                static_cast<uint64_t>(SamplesPerPixel(ihdr.color_type)) *
                                ihdr.bit_depth;
  const uint64_t image_bytes = uint64_t{ihdr.height} * ((bits_per_row + 7) / 8);
  if (image_bytes > header.chunks.idat_bytes * 1032 + 4096) {
    return CorruptionError(
        "PNG image file is truncated: " + std::to_string(header.chunks.idat_bytes) +
        " bytes of image data cannot hold " + std::to_string(ihdr.width) + "x" +
        std::to_string(ihdr.height) + " pixels");
  }
  return Status::Ok();
}

// The libspng output format and flags DecodePng asks for: the PNG's own packing, except that a
// palette image is expanded through its palette (tRNS as alpha).
struct SpngOutput {
  int fmt = SPNG_FMT_RAW;
  int flags = 0;
};

SpngOutput OutputFor(const ImageInfo& info) {
  if (!info.palette) return SpngOutput{};
  // Only tRNS; never gamma, which Pillow ignores too.
  return SpngOutput{info.channels == 4 ? SPNG_FMT_RGBA8 : SPNG_FMT_RGB8, SPNG_DECODE_TRNS};
}

Result<size_t> DecodedSizeBytes(PngHeader& header, int fmt) {
  size_t size_bytes = 0;
  if (int e = spng_decoded_image_size(header.ctx.get(), fmt, &size_bytes); e != 0) {
    return SpngError(e, "size");
  }
  return size_bytes;
}

// The header's rows as the whole-buffer path reads them.
PngRows RowsOf(const spng_ihdr& ihdr) {
  return PngRows{.width = ihdr.width,
                 .height = ihdr.height,
                 .samples_per_pixel = SamplesPerPixel(ihdr.color_type),
                 .bit_depth = ihdr.bit_depth};
}

// The thread's scratch buffer for rows that are not the pixels (DecodeRows) and for validation:
// kept between pages (a fresh one every page costs more in page faults than filling it), unless
// it grew past kScratchKeepBytes, which ReleaseLargeScratch then frees.
std::vector<uint8_t>& Scratch() {
  thread_local std::vector<uint8_t> scratch;
  return scratch;
}

void ReleaseLargeScratch() {
  if (Scratch().capacity() > kScratchKeepBytes) std::vector<uint8_t>().swap(Scratch());
}

// Palette indices to pixels through libspng's palette, as its SPNG_FMT_RGB8/RGBA8 decode with
// SPNG_DECODE_TRNS maps them (tRNS alphas for the first entries, 255 after; no sBIT scaling,
// which DecodePng does not ask for). Indices of `bits` 1, 2, 4 or 8 are packed as in the file.
// Returns false if an index has no palette entry: libspng decides what such a file gives.
bool ExpandPaletteRow(const uint8_t* raw, int bits, int32_t width, const spng_plte& plte,
                      const spng_trns* trns, int channels, uint8_t* out) {
  const int per_byte = 8 / bits;
  const int mask = (1 << bits) - 1;
  int max_index = 0;
  for (int32_t x = 0; x < width; ++x) {
    const int index =
        bits == 8 ? raw[x] : (raw[x / per_byte] >> (8 - bits * (x % per_byte + 1))) & mask;
    max_index = std::max(max_index, index);
    const spng_plte_entry& entry = plte.entries[index];
    uint8_t* px = out + static_cast<ptrdiff_t>(x) * channels;
    px[0] = entry.red;
    px[1] = entry.green;
    px[2] = entry.blue;
    if (channels == 4) {
      px[3] = trns != nullptr && static_cast<uint32_t>(index) < trns->n_type3_entries
                  ? trns->type3_alpha[index]
                  : uint8_t{255};
    }
  }
  return static_cast<uint32_t>(max_index) < plte.n_entries;
}

// The rows of a non-interlaced PNG, decoded whole by InflatePngRows (png_inflate.h) and then
// mapped to pixels: in place when the file's rows are the pixels (8-bit gray, gray + alpha,
// RGB, RGBA), else from a raw copy through the palette or ConvertRawRow. libspng reads the
// chunks before IDAT and sets up its decoder first (spng_decode_image with
// SPNG_DECODE_PROGRESSIVE, the set-up its full decode runs, failing the same way). If the
// whole-buffer decode declines, libspng decodes the rows from there (spng_decode_row, the calls
// its full decode makes) and names any error exactly as it always did.
Status DecodeRows(std::span<const uint8_t> bytes, PngHeader& header, const ImageInfo& info,
                  Image& image) {
  const spng_ihdr& ihdr = header.ihdr;
  const auto [fmt, flags] = OutputFor(info);
  DOCFEED_ASSIGN_OR_RETURN(const size_t size_bytes, DecodedSizeBytes(header, fmt));
  spng_ctx* ctx = header.ctx.get();
  if (int e = spng_decode_image(ctx, nullptr, 0, fmt, flags | SPNG_DECODE_PROGRESSIVE); e != 0) {
    return SpngError(e, "data");
  }
  const PngRows rows = RowsOf(ihdr);
  const size_t stride = image.stride_bytes();
  const size_t height = rows.height;
  const bool in_place = !info.palette && !NeedsConversion(ihdr);
  if (in_place && rows.row_bytes() != stride) return InternalError("PNG: unexpected row size");
  // The fast path needs one filter byte a row more than the rows themselves. Rows that are not
  // the pixels go to the thread's scratch buffer.
  std::vector<uint8_t>& scratch = Scratch();
  uint8_t* filtered = nullptr;
  size_t filtered_size = 0;
  // Each row ends up written, by this path or libspng's below (or the decode fails), so the
  // pixels may start in a recycled buffer holding anything.
  if (in_place) {
    image.pixels = TakeBytes(stride * height + height);
    filtered = image.pixels.data();
    filtered_size = image.pixels.size();
  } else {
    scratch.resize((rows.row_bytes() + 1) * height);
    filtered = scratch.data();
    filtered_size = scratch.size();
    image.pixels = TakeBytes(stride * height);
  }
  const uint8_t* raw = filtered;
  bool decoded = InflatePngRows(bytes, rows, filtered, filtered_size);
  image.pixels.resize(stride * height);
  if (decoded && !in_place) {
    spng_plte plte{};
    spng_trns trns{};
    const bool has_trns = info.palette && spng_get_trns(ctx, &trns) == 0;
    if (info.palette && spng_get_plte(ctx, &plte) != 0) decoded = false;
    for (size_t y = 0; decoded && y < height; ++y) {
      const uint8_t* raw_row = raw + y * rows.row_bytes();
      uint8_t* row = image.pixels.data() + y * stride;
      if (info.palette) {
        decoded = ExpandPaletteRow(raw_row, ihdr.bit_depth, image.width, plte,
                                   has_trns ? &trns : nullptr, image.channels, row);
      } else {
        ConvertRawRow(raw_row, ihdr, image.width, row);
      }
    }
  }
  ReleaseLargeScratch();
  if (decoded) return Status::Ok();

  // libspng's rows: the pixels themselves, or its raw rows converted one at a time.
  const bool convert = NeedsConversion(ihdr);
  std::vector<uint8_t> raw_row(convert ? size_bytes / height : 0);
  int e = 0;
  for (size_t y = 0; e == 0; ++y) {
    if (y >= height) return InternalError("PNG: libspng gave more rows than the header");
    uint8_t* row = image.pixels.data() + y * stride;
    e = convert ? spng_decode_row(ctx, raw_row.data(), raw_row.size())
                : spng_decode_row(ctx, row, stride);
    // The last row comes with SPNG_EOI.
    if (convert && (e == 0 || e == SPNG_EOI)) ConvertRawRow(raw_row.data(), ihdr, image.width, row);
  }
  return e == SPNG_EOI ? Status::Ok() : SpngError(e, "data");
}

// The whole image through libspng's full decode: interlaced files, whose passes the whole-buffer
// path does not take apart (and every file while SetPngWholeBufferForTesting(false)).
Status DecodeWithLibspng(PngHeader& header, const ImageInfo& info, Image& image) {
  const spng_ihdr& ihdr = header.ihdr;
  const auto [fmt, flags] = OutputFor(info);
  DOCFEED_ASSIGN_OR_RETURN(const size_t size_bytes, DecodedSizeBytes(header, fmt));
  image.pixels = TakeBytes(image.stride_bytes() * static_cast<size_t>(image.height));
  if (!NeedsConversion(ihdr)) {
    if (size_bytes != image.pixels.size()) return InternalError("PNG: unexpected decoded size");
    int e = spng_decode_image(header.ctx.get(), image.pixels.data(), size_bytes, fmt, flags);
    return e == 0 ? Status::Ok() : SpngError(e, "data");
  }
  std::vector<uint8_t> raw(size_bytes);
  if (int e = spng_decode_image(header.ctx.get(), raw.data(), raw.size(), fmt, flags); e != 0) {
    return SpngError(e, "data");
  }
  const size_t raw_stride = size_bytes / static_cast<size_t>(image.height);
  for (int32_t y = 0; y < image.height; ++y) {
    ConvertRawRow(raw.data() + static_cast<size_t>(y) * raw_stride, ihdr, image.width,
                  image.pixels.data() + static_cast<size_t>(y) * image.stride_bytes());
  }
  return Status::Ok();
}

Status DecodeInto(std::span<const uint8_t> bytes, PngHeader& header, const ImageInfo& info,
                  Image& image) {
  if (header.ihdr.interlace_method != 0 || !g_whole_buffer.load(std::memory_order_relaxed)) {
    return DecodeWithLibspng(header, info, image);
  }
  return DecodeRows(bytes, header, info, image);
}

// DecodeInto's verdict without the image buffer. spng_decode_image (libspng 0.7) reads the
// chunks before IDAT, sets up the same decode and then calls spng_decode_row for every row
// until SPNG_EOI; with SPNG_DECODE_PROGRESSIVE it stops after the set-up and the caller makes
// those calls, here into one reused row. Same format and flags, so the same inflate, CRC and
// Adler-32 checks, filter-byte checks and palette expansion run, and fail, in the same order.
// Where DecodeRows's whole-buffer path would take the file, so does this one, without undoing
// the filters (InflatePngScanlines): DecodeRows then succeeds, on its own or, for a palette
// index past the palette, through libspng's rows, which map such an index and never refuse it.
Status ValidateRows(std::span<const uint8_t> bytes, PngHeader& header, const ImageInfo& info) {
  const auto [fmt, flags] = OutputFor(info);
  DOCFEED_ASSIGN_OR_RETURN(const size_t size_bytes, DecodedSizeBytes(header, fmt));
  if (!NeedsConversion(header.ihdr) && size_bytes != static_cast<size_t>(info.width) *
                                                         static_cast<size_t>(info.channels) *
                                                         static_cast<size_t>(info.height)) {
    return InternalError("PNG: unexpected decoded size");
  }
  spng_ctx* ctx = header.ctx.get();
  if (int e = spng_decode_image(ctx, nullptr, 0, fmt, flags | SPNG_DECODE_PROGRESSIVE); e != 0) {
    return SpngError(e, "data");
  }
  if (header.ihdr.interlace_method == 0 && g_whole_buffer.load(std::memory_order_relaxed)) {
    const PngRows rows = RowsOf(header.ihdr);
    std::vector<uint8_t>& scratch = Scratch();
    scratch.resize((rows.row_bytes() + 1) * rows.height);
    const bool taken = InflatePngScanlines(bytes, rows, scratch.data(), scratch.size());
    ReleaseLargeScratch();
    if (taken) return Status::Ok();
  }
  std::vector<uint8_t> row(size_bytes / static_cast<size_t>(info.height));
  int e = 0;
  do {
    e = spng_decode_row(ctx, row.data(), row.size());
  } while (e == 0);
  return e == SPNG_EOI ? Status::Ok() : SpngError(e, "data");
}

int ColorTypeFor(int32_t channels) {
  constexpr int kTypes[] = {kGray, kGrayAlpha, kRgb, kRgba};
  return kTypes[channels - 1];
}

}  // namespace

void SetPngWholeBufferForTesting(bool enabled) {
  g_whole_buffer.store(enabled, std::memory_order_relaxed);
}

Result<ImageInfo> ProbePng(std::span<const uint8_t> bytes) {
  DOCFEED_ASSIGN_OR_RETURN(PngHeader header, ReadHeader(bytes));
  return InfoFromHeader(header);
}

Result<Image> DecodePng(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  DOCFEED_ASSIGN_OR_RETURN(PngHeader header, ReadHeader(bytes));
  const ImageInfo info = InfoFromHeader(header);
  DOCFEED_RETURN_IF_ERROR(CheckGeometry(header.ihdr.width, header.ihdr.height, limits));
  DOCFEED_RETURN_IF_ERROR(CheckIdatCanHoldImage(header));
  Image image{.width = info.width, .height = info.height, .channels = info.channels, .pixels = {}};
  DOCFEED_RETURN_IF_ERROR(DecodeInto(bytes, header, info, image));
  return image;
}

Result<ImageInfo> OpenPngHeader(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  DOCFEED_ASSIGN_OR_RETURN(PngHeader header, ReadHeader(bytes));
  DOCFEED_RETURN_IF_ERROR(CheckGeometry(header.ihdr.width, header.ihdr.height, limits));
  DOCFEED_RETURN_IF_ERROR(CheckIdatCanHoldImage(header));
  return InfoFromHeader(header);
}

Result<DecodedGeometry> ValidatePng(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  DOCFEED_ASSIGN_OR_RETURN(PngHeader header, ReadHeader(bytes));
  const ImageInfo info = InfoFromHeader(header);
  DOCFEED_RETURN_IF_ERROR(CheckGeometry(header.ihdr.width, header.ihdr.height, limits));
  DOCFEED_RETURN_IF_ERROR(CheckIdatCanHoldImage(header));
  DOCFEED_RETURN_IF_ERROR(ValidateRows(bytes, header, info));
  // DecodePng's image has the header's sides and InfoFromHeader's channels.
  return DecodedGeometry{.width = info.width, .height = info.height, .channels = info.channels};
}

}  // namespace docfeed::internal

namespace docfeed {

// The public encoder of docfeed/image.h, which internal code reaches through codec.h's using.
Result<std::vector<uint8_t>> EncodePng(const Image& image, int compression_level) {
  DOCFEED_RETURN_IF_ERROR(internal::CheckEncoderInput(image));
  if (compression_level < 0 || compression_level > 9) {
    return InvalidArgumentError("PNG compression level must be 0..9, got " +
                                std::to_string(compression_level));
  }
  internal::SpngCtx ctx(spng_ctx_new(SPNG_CTX_ENCODER));
  if (ctx == nullptr) return ResourceExhaustedError("PNG: cannot allocate encoder");
  spng_set_option(ctx.get(), SPNG_ENCODE_TO_BUFFER, 1);
  spng_set_option(ctx.get(), SPNG_IMG_COMPRESSION_LEVEL, compression_level);
  spng_ihdr ihdr{};
  ihdr.width = static_cast<uint32_t>(image.width);
  ihdr.height = static_cast<uint32_t>(image.height);
  ihdr.bit_depth = 8;
  ihdr.color_type = static_cast<uint8_t>(internal::ColorTypeFor(image.channels));
  if (int e = spng_set_ihdr(ctx.get(), &ihdr); e != 0)
    return internal::SpngError(e, "encode header");
  // libspng's API takes a non-const pointer but only reads the pixels.
  void* pixels = const_cast<uint8_t*>(image.pixels.data());
  if (int e = spng_encode_image(ctx.get(), pixels, image.pixels.size(), SPNG_FMT_PNG,
                                SPNG_ENCODE_FINALIZE);
      e != 0) {
    return internal::SpngError(e, "encode");
  }
  size_t size_bytes = 0;
  int error = 0;
  internal::SpngBuffer buffer(spng_get_png_buffer(ctx.get(), &size_bytes, &error));
  if (buffer == nullptr) return internal::SpngError(error, "encode buffer");
  const auto* data = static_cast<const uint8_t*>(buffer.get());
  return std::vector<uint8_t>(data, data + size_bytes);
}

}  // namespace docfeed
