// EXIF/XMP orientation lookup, matching what Pillow's Image.getexif() feeds to
// ImageOps.exif_transpose: tag 0x0112 in IFD0 of a TIFF-structured EXIF block, else the first
// `tiff:Orientation="N"` / `tiff:Orientation>N` in an XMP packet.
#ifndef DOCFEED_CODEC_INTERNAL_EXIF_H_
#define DOCFEED_CODEC_INTERNAL_EXIF_H_

#include <cstdint>
#include <optional>
#include <span>

namespace docfeed::internal {

// `tiff` starts at the TIFF header ("II*\0" or "MM\0*"), optionally preceded by "Exif\0\0".
// Returns the Orientation value (any integer the tag holds), or nullopt when the block is
// malformed or has no single-valued SHORT/LONG Orientation entry. Never reads out of bounds.
std::optional<int32_t> ExifOrientation(std::span<const uint8_t> tiff);

// Returns the digit after the first "tiff:Orientation=\"" or "tiff:Orientation>" in `xmp`.
std::optional<int32_t> XmpOrientation(std::span<const uint8_t> xmp);

// Combines both the way Pillow does: EXIF wins when it has the tag; values outside 1..8 are
// reported as 1 (exif_transpose ignores them).
int32_t ResolveOrientation(std::optional<int32_t> exif, std::optional<int32_t> xmp);

}  // namespace docfeed::internal

#endif  // DOCFEED_CODEC_INTERNAL_EXIF_H_
