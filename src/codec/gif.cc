// GIF probe and decode over giflib: frame 0, as Pillow 13's GifImagePlugin opens it. Format: the
// GIF89a specification (CompuServe, 1990), sections 17-24: header, logical screen descriptor,
// colour tables, image descriptor, graphic control extension and data sub-blocks.
//
// Pillow walks the blocks itself (GifImageFile._open/_seek) and decides the geometry, the mode
// and the palette; LayoutOf below mirrors that walk and is the single source of those facts.
// giflib then decodes frame 0's LZW data; its view of the image descriptor must agree.
#include <gif_lib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "codec/internal/formats.h"

namespace docfeed::internal {
namespace {

constexpr uint8_t kExtensionIntroducer = 0x21;  // '!'
constexpr uint8_t kImageSeparator = 0x2C;       // ','
constexpr uint8_t kTrailer = 0x3B;              // ';'
constexpr uint8_t kGraphicControlLabel = 0xF9;
constexpr uint8_t kCommentLabel = 0xFE;

// What Pillow makes of the blocks up to frame 0's image data, and the frames n_frames counts.
struct GifLayout {
  int32_t width = 0;  // The logical screen, grown to cover frame 0 as Pillow grows it.
  int32_t height = 0;
  int32_t left = 0;  // Frame 0's rectangle.
  int32_t top = 0;
  int32_t frame_width = 0;
  int32_t frame_height = 0;
  bool interlaced = false;
  // Frame 0's colour table (local, else global) as RGB triples; empty when Pillow opens the
  // frame as mode L (no table, or the identity gray ramp: _is_palette_needed is false).
  std::span<const uint8_t> palette;
  std::optional<uint8_t> transparency;  // The graphic control extension's transparent index.
  int32_t frames = 0;
};

// A bounds-checked cursor; a read past the end fails instead of returning short data.
class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  bool Read(size_t n, std::span<const uint8_t>* out) {
    if (n > bytes_.size() - pos_) return false;
    *out = bytes_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  std::optional<uint8_t> Byte() {
    if (pos_ == bytes_.size()) return std::nullopt;
    return bytes_[pos_++];
  }
  // Reads one data sub-block (size byte + data); an empty span is the block terminator.
  bool SubBlock(std::span<const uint8_t>* out) {
    const std::optional<uint8_t> size = Byte();
    return size.has_value() && Read(*size, out);
  }
  // Skips sub-blocks up to and including the terminator.
  bool SkipSubBlocks() {
    std::span<const uint8_t> block;
    do {
      if (!SubBlock(&block)) return false;
    } while (!block.empty());
    return true;
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

uint16_t U16(std::span<const uint8_t> b, size_t i) {
  return static_cast<uint16_t>(b[i] | (b[i + 1] << 8));
}

// GifImageFile._is_palette_needed: false for the identity gray ramp (entry i == (i, i, i)).
bool IsGrayRamp(std::span<const uint8_t> palette) {
  for (size_t i = 0; i + 2 < palette.size(); i += 3) {
    const auto gray = static_cast<uint8_t>(i / 3);  // < 256: a table has at most 256 entries.
    if (palette[i] != gray || palette[i + 1] != gray || palette[i + 2] != gray) return false;
  }
  return true;
}

// Reads a colour table of 2^(bits+1) entries; the gray ramp counts as no table (Pillow: L).
bool ReadColourTable(ByteReader& in, uint8_t flags, std::span<const uint8_t>* table) {
  std::span<const uint8_t> raw;
  if (!in.Read(size_t{3} << ((flags & 7) + 1), &raw)) return false;
  *table = IsGrayRamp(raw) ? std::span<const uint8_t>() : raw;
  return true;
}

// An extension block (after the introducer), read as GifImageFile._seek reads it. Only the
// graphic control extension matters here: Pillow keeps the transparent index of the last one
// before the frame (GIF89a section 23). After the first sub-block Pillow skips sub-blocks up to
// a terminator, even when that first one was the terminator itself (except for comments).
bool ReadExtension(ByteReader& in, std::optional<uint8_t>* transparency) {
  const std::optional<uint8_t> label = in.Byte();
  std::span<const uint8_t> block;
  if (!label.has_value() || !in.SubBlock(&block)) return false;
  if (*label == kCommentLabel && block.empty()) return true;
  if (*label == kGraphicControlLabel && !block.empty()) {
    if (block.size() < 4) return false;  // Pillow fails reading the delay or block[3].
    if ((block[0] & 1) != 0) *transparency = block[3];
  }
  return in.SkipSubBlocks();
}

// Pillow's walk from after the screen descriptor to the next image descriptor: stray bytes are
// skipped, a trailer or the end of the data ends the walk (kEnd: no further frame).
// `descriptor` receives the 9 bytes after the separator.
enum class Walk { kImage, kEnd, kCorrupt };
Walk NextImage(ByteReader& in, std::optional<uint8_t>* transparency,
               std::span<const uint8_t>* descriptor) {
  for (std::optional<uint8_t> b = in.Byte(); b.has_value() && *b != kTrailer; b = in.Byte()) {
    if (*b == kExtensionIntroducer) {
      if (!ReadExtension(in, transparency)) return Walk::kCorrupt;
    } else if (*b == kImageSeparator) {
      return in.Read(9, descriptor) ? Walk::kImage : Walk::kCorrupt;
    }
  }
  return Walk::kEnd;
}

// Counts the frames after frame 0 as n_frames does: each frame's data is skipped and the walk
// goes on until the trailer, the end of the data or a malformed block.
int32_t CountFrames(ByteReader& in) {
  int32_t frames = 1;
  std::optional<uint8_t> unused;
  std::span<const uint8_t> descriptor;
  std::span<const uint8_t> table;
  for (;;) {
    if (!in.Byte().has_value() || !in.SkipSubBlocks()) return frames;  // Code size + data.
    if (NextImage(in, &unused, &descriptor) != Walk::kImage) return frames;
    if ((descriptor[8] & 0x80) != 0 && !ReadColourTable(in, descriptor[8], &table)) return frames;
    if (frames == INT32_MAX) return frames;
    ++frames;
  }
}

Result<GifLayout> LayoutOf(std::span<const uint8_t> bytes) {
  ByteReader in(bytes);
  std::span<const uint8_t> header;
  if (!in.Read(13, &header)) return CorruptionError("GIF image file is truncated (header)");
  GifLayout layout;
  layout.width = U16(header, 6);
  layout.height = U16(header, 8);
  std::span<const uint8_t> global;
  if ((header[10] & 0x80) != 0 && !ReadColourTable(in, header[10], &global)) {
    return CorruptionError("GIF image file is truncated (global colour table)");
  }
  std::span<const uint8_t> descriptor;
  switch (NextImage(in, &layout.transparency, &descriptor)) {
    case Walk::kImage:
      break;
    case Walk::kEnd:
      return CorruptionError("GIF has no image (no image descriptor before the end)");
    case Walk::kCorrupt:
      return CorruptionError("GIF image file is truncated or corrupt (extension block)");
  }
  layout.left = U16(descriptor, 0);
  layout.top = U16(descriptor, 2);
  layout.frame_width = U16(descriptor, 4);
  layout.frame_height = U16(descriptor, 6);
  layout.interlaced = (descriptor[8] & 0x40) != 0;
  layout.palette = global;
  if ((descriptor[8] & 0x80) != 0 && !ReadColourTable(in, descriptor[8], &layout.palette)) {
    return CorruptionError("GIF image file is truncated (local colour table)");
  }
  // Pillow grows the canvas to hold frame 0 (both sides < 2^17: no overflow).
  layout.width = std::max(layout.width, layout.left + layout.frame_width);
  layout.height = std::max(layout.height, layout.top + layout.frame_height);
  layout.frames = CountFrames(in);
  return layout;
}

ImageInfo InfoFromLayout(const GifLayout& layout) {
  ImageInfo info;
  info.codec = ImageCodec::kGif;
  info.width = layout.width;
  info.height = layout.height;
  info.palette = !layout.palette.empty();
  if (info.palette) {
    info.channels = layout.transparency.has_value() ? 4 : 3;
    info.has_alpha = info.channels == 4;
  } else {
    info.channels = 1;
    // Mode L keeps the index in info["transparency"], like a PNG gray colour key.
    if (layout.transparency) {
      info.transparency = std::array<uint16_t, 3>{*layout.transparency, 0, 0};
    }
  }
  info.progressive_or_interlaced = layout.interlaced;
  info.frames = layout.frames;
  return info;
}

// giflib reads through this callback from a span; a short read is how truncation shows. Past
// the end it reads one virtual 0 byte: Pillow stops after frame 0's last pixel, so a file cut
// just before frame 0's block terminator decodes there, while giflib reads up to the terminator
// after the last row. Anywhere else a 0 where data should be is still an error to giflib
// (an empty data block inside the LZW stream: D_GIF_ERR_IMAGE_DEFECT), like Pillow's truncation.
struct GifSource {
  std::span<const uint8_t> bytes;
  size_t pos = 0;
  bool gave_terminator = false;
};

int ReadGifBytes(GifFileType* gif, GifByteType* out, int size) {
  auto* source = static_cast<GifSource*>(gif->UserData);
  size_t n = std::min(static_cast<size_t>(size), source->bytes.size() - source->pos);
  std::memcpy(out, source->bytes.data() + source->pos, n);
  source->pos += n;
  if (n < static_cast<size_t>(size) && !source->gave_terminator) {
    source->gave_terminator = true;
    out[n++] = 0;
  }
  return static_cast<int>(n);
}

struct GifCloser {
  void operator()(GifFileType* gif) const {
    int error = 0;
    DGifCloseFile(gif, &error);
  }
};
using GifFile = std::unique_ptr<GifFileType, GifCloser>;

Status GifError(int error) {
  const char* text = GifErrorString(error);
  const std::string message = text != nullptr ? text : "unknown giflib error";
  if (error == D_GIF_ERR_READ_FAILED || error == D_GIF_ERR_EOF_TOO_SOON ||
      error == D_GIF_ERR_IMAGE_DEFECT) {
    return CorruptionError("GIF image file is truncated or its image data ends early (" + message +
                           ")");
  }
  if (error == D_GIF_ERR_NOT_ENOUGH_MEM) return ResourceExhaustedError("GIF: " + message);
  return CorruptionError("corrupt GIF data (" + message + ")");
}

// Moves giflib to frame 0's image descriptor, skipping extensions as LayoutOf did.
Status SeekFirstImage(GifFileType* gif) {
  for (;;) {
    GifRecordType type = UNDEFINED_RECORD_TYPE;
    if (DGifGetRecordType(gif, &type) == GIF_ERROR) return GifError(gif->Error);
    if (type == IMAGE_DESC_RECORD_TYPE) {
      return DGifGetImageDesc(gif) == GIF_ERROR ? GifError(gif->Error) : Status::Ok();
    }
    if (type != EXTENSION_RECORD_TYPE) {
      return CorruptionError("GIF: giflib found no image where Pillow does");
    }
    int code = 0;
    GifByteType* block = nullptr;
    if (DGifGetExtension(gif, &code, &block) == GIF_ERROR) return GifError(gif->Error);
    while (block != nullptr) {
      if (DGifGetExtensionNext(gif, &block) == GIF_ERROR) return GifError(gif->Error);
    }
  }
}

// The row of frame 0 that the n-th decoded line fills: interlaced frames arrive in four passes
// (rows 0, 8, 16...; 4, 12...; 2, 6...; 1, 3...), GIF89a appendix E.
int32_t InterlacedRow(int32_t n, int32_t height) {
  constexpr int32_t kStart[] = {0, 4, 2, 1};
  constexpr int32_t kStep[] = {8, 8, 4, 2};
  for (int pass = 0; pass < 4; ++pass) {
    const int32_t rows = (height - kStart[pass] + kStep[pass] - 1) / kStep[pass];
    if (n < rows) return kStart[pass] + n * kStep[pass];
    n -= std::max(rows, 0);
  }
  return height - 1;  // Unreachable: n < height.
}

// Pillow's frame 0: the canvas filled with the transparent index (else 0), frame 0's indices
// written into its rectangle, then through the palette (P -> RGB/RGBA as convert() does:
// entries past the table are black, the transparent index gets alpha 0), or kept as L.
Status DecodeIndices(GifFileType* gif, const GifLayout& layout, std::vector<uint8_t>* indices) {
  const GifImageDesc& desc = gif->Image;
  if (desc.Left != layout.left || desc.Top != layout.top || desc.Width != layout.frame_width ||
      desc.Height != layout.frame_height) {
    return CorruptionError("GIF: giflib and Pillow disagree on frame 0's image descriptor");
  }
  const auto width = static_cast<size_t>(layout.width);
  indices->assign(width * static_cast<size_t>(layout.height), layout.transparency.value_or(0));
  for (int32_t n = 0; n < layout.frame_height; ++n) {
    const int32_t y = layout.interlaced ? InterlacedRow(n, layout.frame_height) : n;
    uint8_t* row = indices->data() + static_cast<size_t>(layout.top + y) * width +
                   static_cast<size_t>(layout.left);
    if (DGifGetLine(gif, row, layout.frame_width) == GIF_ERROR) return GifError(gif->Error);
  }
  return Status::Ok();
}

Image ThroughPalette(const std::vector<uint8_t>& indices, const GifLayout& layout,
                     const ImageInfo& info) {
  Image image{.width = info.width, .height = info.height, .channels = info.channels, .pixels = {}};
  if (info.channels == 1) {
    image.pixels = indices;
    return image;
  }
  std::array<std::array<uint8_t, 4>, 256> lut{};  // Pillow's palette: black, opaque past the end.
  for (size_t i = 0; i < 256; ++i) {
    for (size_t c = 0; c < 3 && 3 * i + c < layout.palette.size(); ++c) {
      lut[i][c] = layout.palette[3 * i + c];
    }
    lut[i][3] = 255;
  }
  if (layout.transparency) lut[*layout.transparency][3] = 0;
  const auto channels = static_cast<size_t>(info.channels);
  image.pixels.resize(indices.size() * channels);
  uint8_t* out = image.pixels.data();
  for (uint8_t index : indices) {
    std::memcpy(out, lut[index].data(), channels);
    out += channels;
  }
  return image;
}

}  // namespace

Result<ImageInfo> ProbeGif(std::span<const uint8_t> bytes) {
  DOCFEED_ASSIGN_OR_RETURN(const GifLayout layout, LayoutOf(bytes));
  return InfoFromLayout(layout);
}

Result<Image> DecodeGif(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  DOCFEED_ASSIGN_OR_RETURN(const GifLayout layout, LayoutOf(bytes));
  const ImageInfo info = InfoFromLayout(layout);
  DOCFEED_RETURN_IF_ERROR(
      CheckGeometry(static_cast<uint64_t>(info.width), static_cast<uint64_t>(info.height), limits));
  GifSource source{bytes, 0};
  int error = 0;
  GifFile gif(DGifOpen(&source, ReadGifBytes, &error));
  if (gif == nullptr) return GifError(error);
  DOCFEED_RETURN_IF_ERROR(SeekFirstImage(gif.get()));
  std::vector<uint8_t> indices;
  DOCFEED_RETURN_IF_ERROR(DecodeIndices(gif.get(), layout, &indices));
  return ThroughPalette(indices, layout, info);
}

}  // namespace docfeed::internal
