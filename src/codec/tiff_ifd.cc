#include "codec/internal/tiff_ifd.h"

namespace docfeed::internal {
namespace {

constexpr uint16_t kPhotometricTag = 262, kColorMapTag = 320, kExtraSamplesTag = 338;
constexpr uint16_t kTypeShort = 3, kTypeLong = 4;

// Bounds-checked unsigned reads in the file's byte order.
class Reader {
 public:
  Reader(std::span<const uint8_t> bytes, bool big_endian)
      : bytes_(bytes), big_endian_(big_endian) {}

  std::optional<uint64_t> Read(uint64_t offset, size_t size) const {
    if (offset > bytes_.size() || bytes_.size() - offset < size) return std::nullopt;
    uint64_t value = 0;
    for (size_t i = 0; i < size; ++i) {
      const size_t index = big_endian_ ? i : size - 1 - i;
      value = (value << 8) | bytes_[static_cast<size_t>(offset) + index];
    }
    return value;
  }

  uint64_t size() const { return bytes_.size(); }

 private:
  std::span<const uint8_t> bytes_;
  bool big_endian_;
};

}  // namespace

std::optional<StoredTiffTags> ReadStoredTiffTags(std::span<const uint8_t> file, uint64_t ifd_offset,
                                                 bool big_endian, bool big_tiff) {
  const Reader reader(file, big_endian);
  const size_t count_size = big_tiff ? 8 : 2;
  const uint64_t entry_size = big_tiff ? 20 : 12;
  const size_t field_size = big_tiff ? 8 : 4;  // count and value-or-offset fields
  const std::optional<uint64_t> count = reader.Read(ifd_offset, count_size);
  if (!count || *count > (reader.size() - ifd_offset) / entry_size) return std::nullopt;
  StoredTiffTags tags;
  for (uint64_t i = 0; i < *count; ++i) {
    const uint64_t entry = ifd_offset + count_size + i * entry_size;
    const std::optional<uint64_t> tag = reader.Read(entry, 2);
    const std::optional<uint64_t> type = reader.Read(entry + 2, 2);
    const std::optional<uint64_t> n = reader.Read(entry + 4, field_size);
    if (!tag || !type || !n) return std::nullopt;
    const uint64_t value_at = entry + 4 + field_size;
    if (*tag == kPhotometricTag && (*type == kTypeShort || *type == kTypeLong) && *n >= 1) {
      tags.photometric = static_cast<uint16_t>(*reader.Read(value_at, *type == kTypeShort ? 2 : 4));
    } else if (*tag == kExtraSamplesTag) {
      tags.extra_samples_count = *n;
    } else if (*tag == kColorMapTag && *type == kTypeShort) {
      // The values are inline when they fit in the field, else at the offset it holds.
      const uint64_t data_bytes = *n * 2;
      if (*n > (uint64_t{1} << 32)) continue;
      if (data_bytes <= field_size) {
        tags.colormap_in_file = true;
      } else if (const std::optional<uint64_t> at = reader.Read(value_at, field_size)) {
        tags.colormap_in_file = *at <= reader.size() && reader.size() - *at >= data_bytes;
      }
    }
  }
  return tags;
}

}  // namespace docfeed::internal
