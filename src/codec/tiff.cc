// TIFF probe and decode over libtiff, reproducing Pillow 13's TIFF reader (TiffImagePlugin.py
// and libImaging/TiffDecode.c): libtiff decodes each strip or tile (TIFFReadEncodedStrip /
// TIFFReadEncodedTile) and tiff_pixels.cc unpacks the rows as Pillow's raw-mode unpackers do.
// YCbCr goes the way Pillow sends it: JPEG-compressed contiguous data through libjpeg's own
// YCbCr->RGB conversion (TIFFTAG_JPEGCOLORMODE = JPEGCOLORMODE_RGB), anything else through
// libtiff's TIFFRGBAImage. File structure: TIFF 6.0 sections 2 (header, IFDs), 3-8 (tags) and
// 15 (tiles); BigTIFF is libtiff's.
#include <tiffio.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/check.h"
#include "codec/codec.h"
#include "codec/internal/formats.h"
#include "codec/internal/tiff_handle.h"
#include "codec/internal/tiff_ifd.h"
#include "codec/internal/tiff_pixels.h"

namespace docfeed::internal {
namespace {

// One directory (IFD) as the decoder sees it.
struct Directory {
  uint32_t width = 0;
  uint32_t height = 0;
  TiffFields fields;
  TiffPixelLayout layout;
  bool tiled = false;
  int32_t orientation = 1;
  TiffPalette palette{};
};

std::string CompressionName(uint16_t compression) {
  const TIFFCodec* codec = TIFFFindCODEC(compression);
  const std::string number = std::to_string(compression);
  return codec != nullptr ? std::string(codec->name) + " (" + number + ")" : number;
}

// The compressions Pillow 13 reads: those its TiffImagePlugin.COMPRESSION_INFO names (it hands
// all but "raw" to libtiff) and its wheels' libtiff decodes, less old-style JPEG (6), which
// docfeed refuses (README, "Unsupported").
Status CheckCompression(uint16_t compression) {
  if (compression == COMPRESSION_OJPEG) {
    return UnsupportedError(
        "TIFF old-style JPEG compression (6) is not supported; convert the file to JPEG "
        "compression (7), e.g. with tiffcp -c jpeg");
  }
  switch (compression) {
    case COMPRESSION_NONE:
    case COMPRESSION_CCITTRLE:
    case COMPRESSION_CCITTFAX3:
    case COMPRESSION_CCITTFAX4:
    case COMPRESSION_LZW:
    case COMPRESSION_JPEG:
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_CCITTRLEW:
    case COMPRESSION_PACKBITS:
    case COMPRESSION_THUNDERSCAN:
    case COMPRESSION_DEFLATE:
    case COMPRESSION_LZMA:
    case COMPRESSION_ZSTD:
      break;
    default:
      // WebP (50001) is in Pillow's table, but the libtiff its wheels bundle is built without it.
      return UnsupportedError("TIFF compression " + CompressionName(compression) +
                              " is not supported (Pillow cannot read it either)");
  }
  if (TIFFIsCODECConfigured(compression) == 0) {
    return UnsupportedError("TIFF compression " + CompressionName(compression) +
                            " is not available in this libtiff build");
  }
  return Status::Ok();
}

TiffFields ReadFields(TIFF* tif) {
  TiffFields f;
  // libtiff fills in a missing PhotometricInterpretation with its guess; UseStoredTags undoes it.
  TIFFGetFieldDefaulted(tif, TIFFTAG_PHOTOMETRIC, &f.photometric);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &f.compression);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &f.planar_config);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &f.bits_per_sample);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &f.samples_per_pixel);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &f.sample_format);
  uint16_t extra_count = 0;
  const uint16_t* extras = nullptr;
  if (TIFFGetFieldDefaulted(tif, TIFFTAG_EXTRASAMPLES, &extra_count, &extras) != 0 &&
      extras != nullptr) {
    f.extra_samples.assign(extras, extras + extra_count);
  }
  f.big_endian = TIFFIsBigEndian(tif) != 0;
  return f;
}

// Pillow's TIFF palette: each 16-bit ColorMap entry's high byte (`b // 256`).
Status ReadPalette(TIFF* tif, Directory& d) {
  uint16_t *red = nullptr, *green = nullptr, *blue = nullptr;
  if (TIFFGetField(tif, TIFFTAG_COLORMAP, &red, &green, &blue) == 0 || red == nullptr ||
      green == nullptr || blue == nullptr) {
    return CorruptionError("palette TIFF has no ColorMap");
  }
  const size_t entries = size_t{1} << d.layout.bits;  // libtiff holds 2^bits entries
  for (size_t i = 0; i < entries; ++i) {
    d.palette[i] = {static_cast<uint8_t>(red[i] >> 8), static_cast<uint8_t>(green[i] >> 8),
                    static_cast<uint8_t>(blue[i] >> 8)};
  }
  return Status::Ok();
}

// Pillow keys its mode on the tags as stored; libtiff repairs some of them while reading the
// directory (internal/tiff_ifd.h). Undo the repairs, or refuse what Pillow cannot open.
Status UseStoredTags(const TiffHandle& handle, TiffFields& f) {
  TIFF* tif = handle.tif();
  const uint64_t offset = TIFFCurrentDirOffset(tif);
  const std::optional<StoredTiffTags> stored = ReadStoredTiffTags(
      handle.bytes(), offset, TIFFIsBigEndian(tif) != 0, TIFFIsBigTIFF(tif) != 0);
  if (!stored) {
    return CorruptionError("TIFF directory at offset " + std::to_string(offset) +
                           " does not fit in the file");
  }
  if (stored->photometric && *stored->photometric != f.photometric) {
    return CorruptionError("TIFF PhotometricInterpretation " +
                           std::to_string(*stored->photometric) +
                           " is unusable as stored (a palette image without a readable ColorMap?)");
  }
  f.photometric = stored->photometric.value_or(0);  // Pillow's default: min-is-white
  if (f.photometric == PHOTOMETRIC_PALETTE && !stored->colormap_in_file) {
    return CorruptionError("palette TIFF has no readable ColorMap");
  }
  const uint64_t extras = stored->extra_samples_count.value_or(0);
  if (extras < f.extra_samples.size()) f.extra_samples.resize(static_cast<size_t>(extras));
  return Status::Ok();
}

Result<Directory> ReadDirectory(TiffHandle& handle) {
  TIFF* tif = handle.tif();
  Directory d;
  if (TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &d.width) == 0 ||
      TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &d.height) == 0) {
    return CorruptionError("TIFF directory has no ImageWidth or ImageLength");
  }
  if (d.width == 0 || d.height == 0) return CorruptionError("TIFF image has zero size");
  if (d.width > INT32_MAX || d.height > INT32_MAX) {
    return UnsupportedError("TIFF image of " + std::to_string(d.width) + "x" +
                            std::to_string(d.height) + " pixels has a side above 2^31 - 1");
  }
  d.fields = ReadFields(tif);
  DOCFEED_RETURN_IF_ERROR(UseStoredTags(handle, d.fields));
  DOCFEED_RETURN_IF_ERROR(CheckCompression(d.fields.compression));
  DOCFEED_ASSIGN_OR_RETURN(d.layout, ClassifyTiff(d.fields));
  d.tiled = TIFFIsTiled(tif) != 0;
  uint16_t orientation = 1;
  // Pillow applies the Orientation tag of the frame it loads (ImageOps.exif_transpose in
  // TiffImageFile.load_end); libtiff only stores values 1..8.
  if (TIFFGetField(tif, TIFFTAG_ORIENTATION, &orientation) != 0 && orientation >= 1 &&
      orientation <= 8) {
    d.orientation = orientation;
  }
  if (d.layout.kind == TiffPixelKind::kPalette) DOCFEED_RETURN_IF_ERROR(ReadPalette(tif, d));
  return d;
}

// Opens `bytes` positioned on directory `frame`; `frames` receives the number of directories.
Result<std::unique_ptr<TiffHandle>> OpenFrame(std::span<const uint8_t> bytes, int32_t frame,
                                              const DecodeLimits& limits, int32_t* frames) {
  // libtiff's own buffers (a strip of TIFFRGBAImage, tag arrays) never exceed 8 bytes per
  // allowed pixel plus slack.
  const uint64_t max_alloc =
      std::min(limits.max_pixels, uint64_t{1} << 56) * 8 + (uint64_t{64} << 20);
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<TiffHandle> handle, TiffHandle::Open(bytes, max_alloc));
  if (frames != nullptr || frame != 0) {
    // Directory 0 was read at open, even when the chain after it is unreadable (a cut-off
    // next-IFD offset makes libtiff count 0).
    const tdir_t count = std::max<tdir_t>(TIFFNumberOfDirectories(handle->tif()), 1);
    handle->ClearError();
    if (frames != nullptr) *frames = static_cast<int32_t>(std::min<tdir_t>(count, INT32_MAX));
    if (frame < 0 || static_cast<tdir_t>(frame) >= count) {
      return InvalidArgumentError("TIFF has " + std::to_string(count) + " page(s); page " +
                                  std::to_string(frame) + " does not exist");
    }
    if (TIFFSetDirectory(handle->tif(), static_cast<tdir_t>(frame)) == 0) {
      return handle->CorruptionFromLibtiff("page " + std::to_string(frame), "cannot read its IFD");
    }
    handle->ClearError();
  }
  return handle;
}

// Compressed data that short cannot hold the image, so refuse it before allocating pixels (a
// decompression bomb of a few hundred bytes). The ratios are upper bounds of each method:
// deflate 1032:1 (zlib technical details), PackBits 128 bytes from 2, LZW at most 4096 bytes
// per code of at least 9 bits, baseline JPEG at least 2 bits per 8x8 block (ITU-T T.81 F.1.2),
// CCITT at least 1 bit per row. LZMA and ZSTD have no useful bound. Only bytes inside the file
// count: libtiff replaces a bogus StripByteCounts of an uncompressed image by the raw size.
Status CheckDataCanHoldImage(TIFF* tif, const Directory& d, uint64_t file_bytes) {
  const uint32_t striles = d.tiled ? TIFFNumberOfTiles(tif) : TIFFNumberOfStrips(tif);
  uint64_t stored = 0;
  for (uint32_t i = 0; i < striles; ++i) {
    const uint64_t offset = TIFFGetStrileOffset(tif, i);
    if (offset >= file_bytes) continue;
    stored += std::min(TIFFGetStrileByteCount(tif, i), file_bytes - offset);
  }
  const uint64_t planes = d.fields.planar_config == 2 ? d.fields.samples_per_pixel : 1;
  const uint64_t row_bits =
      uint64_t{d.width} * d.fields.bits_per_sample * (planes > 1 ? 1 : d.fields.samples_per_pixel);
  uint64_t raw = planes * d.height * ((row_bits + 7) / 8);
  // Subsampled YCbCr stores at least one byte per pixel (the luma), not three.
  if (d.fields.photometric == PHOTOMETRIC_YCBCR) raw /= 3;
  uint64_t ratio = 0;
  switch (d.fields.compression) {
    case COMPRESSION_NONE:
      ratio = 1;
      break;
    case COMPRESSION_PACKBITS:
      ratio = 64;
      break;
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE:
      ratio = 1032;
      break;
    case COMPRESSION_LZW:
    case COMPRESSION_JPEG:
      ratio = 4096;
      break;
    case COMPRESSION_CCITTRLE:
    case COMPRESSION_CCITTRLEW:
    case COMPRESSION_CCITTFAX3:
    case COMPRESSION_CCITTFAX4:
      if (planes * d.height <= stored * 8 + 64) return Status::Ok();
      return CorruptionError("TIFF image data is truncated: " + std::to_string(stored) +
                             " bytes of CCITT data cannot hold " + std::to_string(d.height) +
                             " rows");
    default:
      return Status::Ok();
  }
  if (raw <= stored * ratio + 4096) return Status::Ok();
  return CorruptionError("TIFF image data is truncated: " + std::to_string(stored) +
                         " stored bytes cannot hold " + std::to_string(d.width) + "x" +
                         std::to_string(d.height) + " pixels");
}

// Bytes one row of `pixels` pixels needs in libtiff's output, for one plane or all samples.
uint64_t RowBytesNeeded(const Directory& d, uint32_t pixels) {
  const uint64_t samples = d.layout.separate_planes ? 1 : static_cast<uint64_t>(d.layout.samples);
  return (uint64_t{pixels} * samples * static_cast<uint64_t>(d.layout.bits) + 7) / 8;
}

// Where decoded rows go: Pillow-mode pixels, `width * mode_channels` bytes per row, in a vector
// whose capacity holds the whole image but whose size grows a block of rows at a time, just
// before libtiff or the unpackers write them. Zeroing a block (std::vector value-initializes)
// then costs a pass over a few cache-hot kilobytes instead of one over the whole cold image
// first: on a 300 dpi page the up-front zeroing was 5 % of the decode.
struct ModeImage {
  std::vector<uint8_t>* pixels;
  size_t stride_bytes;
  int32_t channels;

  // Rows [0, y_end) exist; returns row `y`. Never reallocates (the capacity is reserved).
  uint8_t* Rows(uint32_t y_end, uint32_t y) const {
    const size_t size = size_t{y_end} * stride_bytes;
    DOCFEED_DCHECK(size <= pixels->capacity());
    if (pixels->size() < size) pixels->resize(size);
    return pixels->data() + size_t{y} * stride_bytes;
  }
};

// What DecodeTiff fills: the mode pixels and, where they differ from the output (palette, CMYK,
// premultiplied alpha), the output rows FinishRows makes from them block by block.
struct Output {
  ModeImage mode;
  Image* image;
};

// Turns mode rows [y, y_end) into output rows (palette lookup, CMYK to RGB, unpremultiply).
void FinishRows(const Directory& d, const Output& out, uint32_t y, uint32_t y_end) {
  if (!d.layout.needs_finish()) return;
  const ModeImage rows{&out.image->pixels, out.image->stride_bytes(), out.image->channels};
  const uint8_t* in = out.mode.Rows(y_end, y);
  FinishTiffPixels(d.layout, d.palette, in, size_t{d.width} * (y_end - y), rows.Rows(y_end, y));
}

void UnpackRow(const Directory& d, uint16_t plane, const uint8_t* in, uint32_t x, uint8_t* row,
               uint32_t pixels, const ModeImage& out) {
  row += size_t{x} * size_t(out.channels);
  if (d.layout.separate_planes) {
    UnpackTiffPlaneRow(d.layout, plane, in, static_cast<int32_t>(pixels), row);
  } else {
    UnpackTiffRow(d.layout, in, static_cast<int32_t>(pixels), row);
  }
}

// Reads strip `index` into `dest` (room for `capacity` bytes); it must yield `need` bytes.
Status ReadStrip(TiffHandle& handle, uint32_t index, uint8_t* dest, tmsize_t capacity,
                 uint64_t need) {
  const tmsize_t got = TIFFReadEncodedStrip(handle.tif(), index, dest, capacity);
  if (got < 0 || handle.failed()) {
    return handle.CorruptionFromLibtiff("strip " + std::to_string(index), "cannot decode it");
  }
  if (static_cast<uint64_t>(got) < need) {
    return CorruptionError("TIFF image data is truncated: strip " + std::to_string(index) +
                           " decodes to " + std::to_string(got) + " bytes, not " +
                           std::to_string(need));
  }
  return Status::Ok();
}

// True when libtiff's rows already are the mode pixels (8-bit, nothing skipped or inverted, no
// row padding): strips are then decoded straight into place, without a copy.
bool RowsAreModePixels(const Directory& d, tmsize_t row_bytes) {
  const TiffPixelLayout& l = d.layout;
  return !l.separate_planes && l.bits == 8 && l.samples == l.kept && !l.min_is_white &&
         static_cast<uint64_t>(row_bytes) == uint64_t{d.width} * static_cast<uint64_t>(l.kept);
}

// Blocks of rows, each with every plane, so that a block is complete (and finished) before the
// next one grows the image.
Status DecodeStrips(TiffHandle& handle, const Directory& d, const Output& out) {
  TIFF* tif = handle.tif();
  uint32_t rows_per_strip = 0;
  TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rows_per_strip);
  rows_per_strip = rows_per_strip == 0 ? d.height : std::min(rows_per_strip, d.height);
  const tmsize_t row_bytes = TIFFScanlineSize(tif);
  const tmsize_t strip_bytes = TIFFStripSize(tif);
  if (row_bytes <= 0 || strip_bytes <= 0 ||
      static_cast<uint64_t>(row_bytes) < RowBytesNeeded(d, d.width) ||
      static_cast<uint64_t>(strip_bytes) < uint64_t{rows_per_strip} * uint64_t(row_bytes)) {
    return handle.CorruptionFromLibtiff("strip layout", "strips cannot hold their rows");
  }
  const bool direct = RowsAreModePixels(d, row_bytes);
  std::vector<uint8_t> strip(direct ? 0 : static_cast<size_t>(strip_bytes));
  const uint16_t planes = d.layout.separate_planes ? static_cast<uint16_t>(d.layout.kept) : 1;
  for (uint32_t y = 0; y < d.height; y += rows_per_strip) {
    const uint32_t rows = std::min(rows_per_strip, d.height - y);
    const uint64_t need = uint64_t{rows} * uint64_t(row_bytes);
    uint8_t* dest = out.mode.Rows(y + rows, y);
    for (uint16_t plane = 0; plane < planes; ++plane) {
      const uint32_t index = TIFFComputeStrip(tif, y, plane);
      if (direct) {
        DOCFEED_RETURN_IF_ERROR(ReadStrip(handle, index, dest, tmsize_t(need), need));
        continue;
      }
      DOCFEED_RETURN_IF_ERROR(ReadStrip(handle, index, strip.data(), strip_bytes, need));
      for (uint32_t r = 0; r < rows; ++r) {
        UnpackRow(d, plane, strip.data() + size_t{r} * size_t(row_bytes), 0,
                  dest + size_t{r} * out.mode.stride_bytes, d.width, out.mode);
      }
    }
    FinishRows(d, out, y, y + rows);
  }
  return Status::Ok();
}

// Tile rows, each with every plane (as DecodeStrips).
Status DecodeTiles(TiffHandle& handle, const Directory& d, const Output& out) {
  TIFF* tif = handle.tif();
  uint32_t tile_width = 0, tile_length = 0;
  TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tile_width);
  TIFFGetField(tif, TIFFTAG_TILELENGTH, &tile_length);
  const tmsize_t row_bytes = TIFFTileRowSize(tif);
  const tmsize_t tile_bytes = TIFFTileSize(tif);
  if (tile_width == 0 || tile_length == 0 || row_bytes <= 0 || tile_bytes <= 0 ||
      static_cast<uint64_t>(row_bytes) < RowBytesNeeded(d, tile_width) ||
      static_cast<uint64_t>(tile_bytes) < uint64_t{tile_length} * uint64_t(row_bytes)) {
    return handle.CorruptionFromLibtiff("tile layout", "tiles cannot hold their rows");
  }
  std::vector<uint8_t> tile(static_cast<size_t>(tile_bytes));
  const uint16_t planes = d.layout.separate_planes ? static_cast<uint16_t>(d.layout.kept) : 1;
  for (uint32_t y = 0; y < d.height; y += tile_length) {
    const uint32_t rows = std::min(tile_length, d.height - y);
    uint8_t* dest = out.mode.Rows(y + rows, y);
    for (uint16_t plane = 0; plane < planes; ++plane) {
      for (uint32_t x = 0; x < d.width; x += tile_width) {
        const uint32_t index = TIFFComputeTile(tif, x, y, 0, plane);
        const tmsize_t got = TIFFReadEncodedTile(tif, index, tile.data(), tile_bytes);
        if (got < 0 || handle.failed()) {
          return handle.CorruptionFromLibtiff("tile " + std::to_string(index), "cannot decode it");
        }
        if (static_cast<uint64_t>(got) < uint64_t{rows} * uint64_t(row_bytes)) {
          return CorruptionError("TIFF image data is truncated: tile " + std::to_string(index) +
                                 " decodes to " + std::to_string(got) + " bytes");
        }
        const uint32_t pixels = std::min(tile_width, d.width - x);
        for (uint32_t r = 0; r < rows; ++r) {
          UnpackRow(d, plane, tile.data() + size_t{r} * size_t(row_bytes), x,
                    dest + size_t{r} * out.mode.stride_bytes, pixels, out.mode);
        }
      }
    }
    FinishRows(d, out, y, y + rows);
  }
  return Status::Ok();
}

// libtiff's RGBA reader state, ended on every path.
class RgbaImage {
 public:
  RgbaImage() = default;
  ~RgbaImage() {
    if (begun_) TIFFRGBAImageEnd(&image_);
  }
  RgbaImage(const RgbaImage&) = delete;
  RgbaImage& operator=(const RgbaImage&) = delete;

  bool Begin(TIFF* tif, char* message) {
    begun_ = TIFFRGBAImageBegin(&image_, tif, 0, message) != 0;
    return begun_;
  }
  TIFFRGBAImage& get() { return image_; }

 private:
  TIFFRGBAImage image_{};
  bool begun_ = false;
};

// YCbCr other than contiguous JPEG, read as Pillow's _decodeAsRGBA does: TIFFRGBAImageGet in
// blocks of a strip's (or tile's) rows, top-left orientation, red/green/blue kept.
Status DecodeViaRgbaImage(TiffHandle& handle, const Directory& d, const ModeImage& out) {
  TIFF* tif = handle.tif();
  char message[1024] = "";
  RgbaImage rgba;
  if (TIFFRGBAImageOK(tif, message) == 0 || !rgba.Begin(tif, message)) {
    return UnsupportedError("TIFF YCbCr layout is not supported: " + std::string(message));
  }
  TIFFRGBAImage& image = rgba.get();
  image.req_orientation = ORIENTATION_TOPLEFT;
  image.orientation = ORIENTATION_TOPLEFT;
  image.col_offset = 0;
  uint32_t block_rows = 0;
  TIFFGetFieldDefaulted(tif, d.tiled ? TIFFTAG_TILELENGTH : TIFFTAG_ROWSPERSTRIP, &block_rows);
  block_rows = block_rows == 0 ? d.height : std::min(block_rows, d.height);
  std::vector<uint32_t> raster(size_t{d.width} * block_rows);
  for (uint32_t y = 0; y < d.height; y += block_rows) {
    const uint32_t rows = std::min(block_rows, d.height - y);
    image.row_offset = static_cast<int>(y);
    if (TIFFRGBAImageGet(&image, raster.data(), d.width, rows) == 0 || handle.failed()) {
      return handle.CorruptionFromLibtiff("YCbCr rows from " + std::to_string(y),
                                          "cannot decode them");
    }
    uint8_t* block = out.Rows(y + rows, y);
    for (uint32_t r = 0; r < rows; ++r) {
      uint8_t* row = block + size_t{r} * out.stride_bytes;
      const uint32_t* in = raster.data() + size_t{r} * d.width;
      for (uint32_t x = 0; x < d.width; ++x) {
        row[3 * x] = static_cast<uint8_t>(TIFFGetR(in[x]));
        row[3 * x + 1] = static_cast<uint8_t>(TIFFGetG(in[x]));
        row[3 * x + 2] = static_cast<uint8_t>(TIFFGetB(in[x]));
      }
    }
  }
  return Status::Ok();
}

Status DecodePixels(TiffHandle& handle, const Directory& d, const Output& out) {
  TIFF* tif = handle.tif();
  if (d.layout.kind == TiffPixelKind::kYcbcr) {
    if (d.fields.compression == COMPRESSION_NONE) {
      // Pillow reads uncompressed files without libtiff: YCbCr as its own mode "YCbCr" (no
      // subsampling), or not at all (subsampled).
      return UnsupportedError(
          "uncompressed YCbCr TIFF is not supported (Pillow reads it without libtiff's colour "
          "conversion, or not at all when subsampled); compress it, e.g. tiffcp -c lzw");
    }
    if (d.fields.compression != COMPRESSION_JPEG || d.fields.planar_config != 1) {
      return DecodeViaRgbaImage(handle, d, out.mode);
    }
    // libjpeg converts to RGB and upsamples; the strip and row sizes then count RGB samples.
    TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
  }
  return d.tiled ? DecodeTiles(handle, d, out) : DecodeStrips(handle, d, out);
}

ImageInfo InfoFor(const Directory& d, int32_t frames) {
  ImageInfo info;
  info.codec = ImageCodec::kTiff;
  info.width = static_cast<int32_t>(d.width);
  info.height = static_cast<int32_t>(d.height);
  info.channels = d.layout.out_channels;
  info.bit_depth = d.layout.bits;
  info.palette = d.layout.kind == TiffPixelKind::kPalette;
  info.cmyk = d.layout.kind == TiffPixelKind::kCmyk;
  info.has_alpha = d.layout.alpha != TiffAlpha::kNone;
  info.big_endian = d.fields.big_endian;
  info.exif_orientation = d.orientation;
  info.frames = frames;
  return info;
}

}  // namespace

Result<ImageInfo> ProbeTiff(std::span<const uint8_t> bytes, int32_t frame) {
  int32_t frames = 0;
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<TiffHandle> handle,
                           OpenFrame(bytes, frame, DecodeLimits{}, &frames));
  DOCFEED_ASSIGN_OR_RETURN(Directory d, ReadDirectory(*handle));
  return InfoFor(d, frames);
}

Result<Image> DecodeTiff(std::span<const uint8_t> bytes, const DecodeLimits& limits,
                         int32_t frame) {
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<TiffHandle> handle,
                           OpenFrame(bytes, frame, limits, nullptr));
  DOCFEED_ASSIGN_OR_RETURN(Directory d, ReadDirectory(*handle));
  DOCFEED_RETURN_IF_ERROR(CheckGeometry(d.width, d.height, limits));
  DOCFEED_RETURN_IF_ERROR(CheckDataCanHoldImage(handle->tif(), d, bytes.size()));
  Image image{.width = static_cast<int32_t>(d.width),
              .height = static_cast<int32_t>(d.height),
              .channels = d.layout.out_channels,
              .pixels = {}};
  const size_t pixels = size_t{d.width} * d.height;
  image.pixels.reserve(pixels * static_cast<size_t>(image.channels));
  // Palette and CMYK mode pixels differ in size from the output and get a buffer of their own;
  // the other layouts decode in place.
  std::vector<uint8_t> mode_buffer;
  const int32_t mode_channels = d.layout.mode_channels();
  std::vector<uint8_t>* mode_pixels = &image.pixels;
  if (mode_channels != image.channels) {
    mode_buffer.reserve(pixels * static_cast<size_t>(mode_channels));
    mode_pixels = &mode_buffer;
  }
  const Output out{{mode_pixels, size_t{d.width} * size_t(mode_channels), mode_channels}, &image};
  DOCFEED_RETURN_IF_ERROR(DecodePixels(*handle, d, out));
  DOCFEED_CHECK(image.pixels.size() == pixels * static_cast<size_t>(image.channels));
  return image;
}

}  // namespace docfeed::internal
