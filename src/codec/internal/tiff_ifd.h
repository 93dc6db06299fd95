// A few tags of one TIFF directory read straight from the file, for the places where libtiff
// repairs what Pillow takes as written: libtiff guesses a missing PhotometricInterpretation
// (Pillow assumes 0, min-is-white), declares unlisted samples as unspecified ExtraSamples (Pillow
// keys on the tag as stored), and turns a palette image whose ColorMap is unreadable into gray
// (Pillow fails). Layout: TIFF 6.0 section 2 (IFD entries of 12 bytes) and BigTIFF (20 bytes).
#ifndef DOCFEED_CODEC_INTERNAL_TIFF_IFD_H_
#define DOCFEED_CODEC_INTERNAL_TIFF_IFD_H_

#include <cstdint>
#include <optional>
#include <span>

namespace docfeed::internal {

struct StoredTiffTags {
  std::optional<uint16_t> photometric;          // tag 262 as stored; nullopt when absent
  std::optional<uint64_t> extra_samples_count;  // tag 338's count; nullopt when absent
  bool colormap_in_file = false;                // tag 320 present with all its data in the file
};

// Reads the directory at `ifd_offset` of `file`. Returns nullopt when the directory's entry
// table does not fit in the file (libtiff has read it, so that means a libtiff/docfeed
// disagreement; callers then refuse the file). Never reads out of bounds.
std::optional<StoredTiffTags> ReadStoredTiffTags(std::span<const uint8_t> file, uint64_t ifd_offset,
                                                 bool big_endian, bool big_tiff);

}  // namespace docfeed::internal

#endif  // DOCFEED_CODEC_INTERNAL_TIFF_IFD_H_
