// One column chunk of a Parquet row group, decoded: its pages read with one positioned read,
// decompressed, and their repetition levels, definition levels and values decoded.
//
// Supported (what pyarrow, and so `datasets` and the Hub, write; other writers' files too as long
// as they stay inside this list): data pages v1 and v2, dictionary pages; value encodings PLAIN,
// PLAIN_DICTIONARY / RLE_DICTIONARY, and RLE for booleans; level encoding RLE (the
// RLE/bit-packing hybrid); compression UNCOMPRESSED, SNAPPY, GZIP, ZSTD, LZ4_RAW and BROTLI.
// Anything else is Unsupported naming the column and what it uses (DELTA_* encodings,
// BYTE_STREAM_SPLIT, the deprecated BIT_PACKED levels, LZO, Hadoop-framed LZ4).
//
// Trust model: every byte of the file may be hostile. Page sizes are checked against the chunk,
// decompressed sizes are declared before allocating and capped (ChunkLimits), every codec must
// produce exactly the declared size, levels above their maximum, dictionary indices past the
// dictionary and values past the page are Corruption, and the counts must add up to the chunk's
// num_values.
//
// Thread safety: ReadColumnChunk is a pure function of the file's bytes.
#ifndef DOCFEED_FORMAT_PARQUET_COLUMN_CHUNK_H_
#define DOCFEED_FORMAT_PARQUET_COLUMN_CHUNK_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/env.h"
#include "docfeed/status.h"
#include "format/parquet/metadata.h"

namespace docfeed::internal::parquet {

struct ChunkLimits {
  // Largest column chunk read (compressed bytes) and largest decoded size of its pages together:
  // a row group whose column is bigger is refused (ResourceExhausted, saying to write smaller
  // row groups) instead of exhausting memory.
  int64_t max_chunk_bytes = int64_t{2} << 30;  // 2 GiB
  // Largest number of entries (values and nulls) in one chunk: levels take 2 bytes each.
  int64_t max_levels = int64_t{1} << 28;
};

// What a leaf column needs to be decoded.
struct LeafDescriptor {
  std::string name;  // the column's dotted path, for errors
  PhysicalType type = PhysicalType::kBoolean;
  int32_t type_length = 0;  // FIXED_LEN_BYTE_ARRAY's width
  int16_t max_def = 0;
  int16_t max_rep = 0;
};

// A decoded chunk. Levels are empty when their maximum is 0 (every entry is then at the maximum).
struct DecodedChunk {
  int64_t num_levels = 0;  // entries (values and nulls), = the chunk's num_values
  std::vector<int16_t> def;
  std::vector<int16_t> rep;
  // Non-null values, in order:
  //   BOOLEAN: `fixed` holds one byte (0 or 1) per value;
  //   INT32, INT64, INT96, FLOAT, DOUBLE, FIXED_LEN_BYTE_ARRAY: `fixed` holds the values'
  //   little-endian bytes back to back (4, 8, 12, 4, 8 or type_length bytes each);
  //   BYTE_ARRAY: `binary` holds one view per value into `buffers`.
  int64_t num_values = 0;
  std::vector<uint8_t> fixed;
  std::vector<std::span<const uint8_t>> binary;
  std::vector<std::vector<uint8_t>> buffers;  // decompressed pages (and the raw chunk)

  int16_t Def(int64_t i, int16_t max_def) const { return def.empty() ? max_def : def[i]; }
  int16_t Rep(int64_t i) const { return rep.empty() ? 0 : rep[i]; }
};

// Bytes per value in DecodedChunk::fixed (1 for BOOLEAN, 0 for BYTE_ARRAY).
int64_t FixedWidth(const LeafDescriptor& leaf);

// Reads and decodes `chunk` of `file` (whose usable bytes end at `data_end`, where the footer
// starts). Errors name the column; the caller adds the file and row group.
Status ReadColumnChunk(const RandomAccessFile& file, uint64_t data_end, const ColumnChunk& chunk,
                       const LeafDescriptor& leaf, const ChunkLimits& limits, DecodedChunk* out);

// --- Exposed for tests ---
// Decodes `count` values of the RLE/bit-packing hybrid with `bit_width` (0..32) from `bytes`
// into `out` (resized). Corruption when the bytes run out.
Status DecodeHybrid(std::span<const uint8_t> bytes, int bit_width, int64_t count,
                    std::vector<uint32_t>* out);

}  // namespace docfeed::internal::parquet

#endif  // DOCFEED_FORMAT_PARQUET_COLUMN_CHUNK_H_
