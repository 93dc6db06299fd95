// The docfeed sample index (`docfeed.index`): one fixed-size record per sample giving O(1)
// random access (which Arrow file, record batch, row, and the absolute byte range of the stored
// image), the image geometry and codec, and the per-sample checksums.
// The byte layout is specified in docs/format.md ("docfeed.index"); keep the two in step.
#ifndef DOCFEED_FORMAT_INDEX_H_
#define DOCFEED_FORMAT_INDEX_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "docfeed/status.h"

namespace docfeed::internal {

inline constexpr char kIndexMagic[8] = {'D', 'F', 'I', 'D', 'X', '0', '0', '1'};
inline constexpr uint32_t kIndexVersion = 1;
inline constexpr size_t kIndexHeaderBytes = 32;
inline constexpr size_t kIndexRecordBytes = 64;
inline constexpr size_t kIndexFooterBytes = 8;

// Codes stored in IndexRecord::codec. Never renumber: they are on disk.
// kPpm is binary PGM/PPM (P5/P6, maxval 255), the container of preprocessed samples. kTiff is a
// TIFF file kept as it was packed (`--codec keep`); readers decode its first page. kPfm is a
// grayscale float PFM ("Pf"), the container of Pix2Struct's stored patch rows (`pack --preprocess
// pix2struct --stored-form patches`), never an image to decode.
enum class StoredCodec : uint8_t { kJpeg = 1, kPng = 2, kWebp = 3, kPpm = 4, kTiff = 5, kPfm = 6 };

// "jpeg", "png", "webp", "ppm", "tiff", "pfm" ("unknown" for other values).
std::string_view StoredCodecName(StoredCodec codec);

// OK when the signature (magic bytes) of `image` is that of IndexRecord::codec `codec`;
// otherwise Corruption saying both (the index's codec byte is not the stored bytes' format).
Status CheckStoredCodec(uint8_t codec, std::span<const uint8_t> image);

// One sample's entry; all integers little-endian on disk, in this field order.
struct IndexRecord {
  uint32_t file_index = 0;   // data file, in manifest order
  uint32_t batch_index = 0;  // record batch within that file
  uint32_t row = 0;          // row within that batch
  uint8_t codec = 0;         // StoredCodec
  uint8_t channels = 0;      // channels as stored (1 L, 2 LA, 3 RGB, 4 RGBA; palette counts as 3/4)
  uint16_t flags = 0;        // reserved, 0
  uint32_t width = 0;
  uint32_t height = 0;
  uint64_t batch_offset = 0;  // file offset of the record batch message
  uint64_t image_offset = 0;  // file offset of the stored image bytes (uncompressed bodies only)
  uint32_t image_length = 0;  // bytes of the stored image
  uint32_t label_length = 0;  // see LabelLength(); 0 when the dataset has no label column
  uint64_t image_hash = 0;    // XXH3-64 of the stored image bytes
  uint64_t label_hash = 0;    // HashLabels() of the non-image columns
};

// Serializes header + records + footer checksum.
std::vector<uint8_t> EncodeIndex(std::span<const IndexRecord> records);

// A validated view over an index file's bytes (which the caller keeps alive).
// Thread-safe for concurrent reads.
class IndexView {
 public:
  // Checks magic, version, record size, that the size matches the record count, and the footer
  // checksum. `name` prefixes error messages.
  static Result<IndexView> Open(std::span<const uint8_t> bytes, const std::string& name);

  uint64_t size() const { return num_records_; }
  // REQUIRES: i < size().
  IndexRecord Get(uint64_t i) const;

 private:
  std::span<const uint8_t> records_;
  uint64_t num_records_ = 0;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_FORMAT_INDEX_H_
