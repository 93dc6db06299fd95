// EXIF orientation parsing. The TIFF layout is from the TIFF 6.0 specification, section 2
// ("Image File Header", "Image File Directory"); EXIF 2.32 (CIPA DC-008) puts IFD0 there and
// defines tag 0x0112 Orientation as a SHORT with values 1..8.
#include "codec/internal/exif.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace docfeed::internal {
namespace {

constexpr uint16_t kOrientationTag = 0x0112;
constexpr uint16_t kTypeShort = 3;
constexpr uint16_t kTypeLong = 4;

// Bounds-checked reads in the byte order named by the TIFF header.
class TiffReader {
 public:
  TiffReader(std::span<const uint8_t> bytes, bool big_endian)
      : bytes_(bytes), big_endian_(big_endian) {}

  std::optional<uint32_t> U16(size_t offset) const { return Read(offset, 2); }
  std::optional<uint32_t> U32(size_t offset) const { return Read(offset, 4); }

 private:
  std::optional<uint32_t> Read(size_t offset, size_t size) const {
    if (offset > bytes_.size() || bytes_.size() - offset < size) return std::nullopt;
    uint32_t value = 0;
    for (size_t i = 0; i < size; ++i) {
      const size_t index = big_endian_ ? i : size - 1 - i;
      value = (value << 8) | bytes_[offset + index];
    }
    return value;
  }

  std::span<const uint8_t> bytes_;
  bool big_endian_;
};

}  // namespace

std::optional<int32_t> ExifOrientation(std::span<const uint8_t> tiff) {
  // Pillow's Exif.load() accepts the block with or without the JPEG APP1 "Exif\0\0" prefix.
  if (tiff.size() >= 6 && std::memcmp(tiff.data(), "Exif\0\0", 6) == 0) tiff = tiff.subspan(6);
  if (tiff.size() < 8) return std::nullopt;
  bool big_endian = false;
  if (std::memcmp(tiff.data(), "MM\0*", 4) == 0) {
    big_endian = true;
  } else if (std::memcmp(tiff.data(), "II*\0", 4) != 0) {
    return std::nullopt;
  }
  const TiffReader reader(tiff, big_endian);
  const std::optional<uint32_t> ifd0 = reader.U32(4);
  if (!ifd0) return std::nullopt;
  const std::optional<uint32_t> count = reader.U16(*ifd0);
  if (!count) return std::nullopt;
  // Each IFD entry is 12 bytes: tag, type, count, value-or-offset.
  for (uint32_t i = 0; i < *count; ++i) {
    const size_t entry = size_t{*ifd0} + 2 + size_t{i} * 12;
    const std::optional<uint32_t> tag = reader.U16(entry);
    if (!tag) return std::nullopt;
    if (*tag != kOrientationTag) continue;
    const std::optional<uint32_t> type = reader.U16(entry + 2);
    const std::optional<uint32_t> n = reader.U32(entry + 4);
    if (!type || !n || *n != 1) return std::nullopt;
    std::optional<uint32_t> value;
    if (*type == kTypeShort) value = reader.U16(entry + 8);
    if (*type == kTypeLong) value = reader.U32(entry + 8);
    if (!value) return std::nullopt;
    return static_cast<int32_t>(std::min<uint32_t>(*value, 0x7fffffff));
  }
  return std::nullopt;
}

std::optional<int32_t> XmpOrientation(std::span<const uint8_t> xmp) {
  const std::string_view text(reinterpret_cast<const char*>(xmp.data()), xmp.size());
  constexpr std::string_view kKey = "tiff:Orientation";
  // Same as Pillow's regex r'tiff:Orientation(="|>)([0-9])': the first match wins.
  for (size_t pos = text.find(kKey); pos != std::string_view::npos;
       pos = text.find(kKey, pos + 1)) {
    std::string_view rest = text.substr(pos + kKey.size());
    if (rest.starts_with("=\"")) {
      rest.remove_prefix(2);
    } else if (rest.starts_with(">")) {
      rest.remove_prefix(1);
    } else {
      continue;
    }
    if (!rest.empty() && rest[0] >= '0' && rest[0] <= '9') return rest[0] - '0';
  }
  return std::nullopt;
}

int32_t ResolveOrientation(std::optional<int32_t> exif, std::optional<int32_t> xmp) {
  const std::optional<int32_t> value = exif ? exif : xmp;
  if (!value || *value < 1 || *value > 8) return 1;
  return *value;
}

}  // namespace docfeed::internal
