#include "format/parquet/column_chunk.h"

#include <brotli/decode.h>
#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>

namespace docfeed::internal::parquet {
namespace {

uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // little-endian hosts only (docfeed builds for x86-64 and AArch64 Linux)
}

int BitWidth(int32_t max_value) {
  int bits = 0;
  while (max_value > 0) {
    ++bits;
    max_value >>= 1;
  }
  return bits;
}

bool CodecSupported(int32_t codec) {
  switch (static_cast<Codec>(codec)) {
    case Codec::kUncompressed:
    case Codec::kSnappy:
    case Codec::kGzip:
    case Codec::kZstd:
    case Codec::kLz4Raw:
    case Codec::kBrotli:
      return true;
    default:
      return false;
  }
}

Status Inflate(std::span<const uint8_t> in, uint8_t* out, size_t expected) {
  z_stream zs{};
  // 15 + 32: a gzip or zlib header, detected.
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return InternalError("zlib: inflateInit2 failed");
  uint8_t dummy = 0;
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = expected > 0 ? out : &dummy;
  zs.avail_out = static_cast<uInt>(expected);
  int rc = Z_OK;
  for (;;) {
    rc = inflate(&zs, Z_FINISH);
    // Concatenated gzip members (some writers emit several) continue into the same output.
    if (rc == Z_STREAM_END && zs.avail_in > 0 && zs.avail_out > 0) {
      if (inflateReset(&zs) != Z_OK) break;
      continue;
    }
    break;
  }
  const size_t produced = expected - zs.avail_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || produced != expected) {
    return CorruptionError("GZIP data does not inflate to the page's " + std::to_string(expected) +
                           " bytes");
  }
  return Status::Ok();
}

// Decompresses `in` into exactly `expected` bytes at `out`.
Status Decompress(int32_t codec, std::span<const uint8_t> in, uint8_t* out, size_t expected) {
  const std::string mismatch = CodecName(codec) + " data does not decompress to the page's " +
                               std::to_string(expected) + " bytes";
  switch (static_cast<Codec>(codec)) {
    case Codec::kUncompressed:
      if (in.size() != expected) return CorruptionError(mismatch);
      if (expected > 0) std::memcpy(out, in.data(), expected);
      return Status::Ok();
    case Codec::kSnappy: {
      size_t length = 0;
      if (snappy_uncompressed_length(reinterpret_cast<const char*>(in.data()), in.size(),
                                     &length) != SNAPPY_OK ||
          length != expected) {
        return CorruptionError(mismatch);
      }
      size_t produced = expected;
      if (snappy_uncompress(reinterpret_cast<const char*>(in.data()), in.size(),
                            reinterpret_cast<char*>(out), &produced) != SNAPPY_OK ||
          produced != expected) {
        return CorruptionError(mismatch);
      }
      return Status::Ok();
    }
    case Codec::kGzip:
      return Inflate(in, out, expected);
    case Codec::kZstd: {
      const size_t produced = ZSTD_decompress(out, expected, in.data(), in.size());
      if (ZSTD_isError(produced) || produced != expected) return CorruptionError(mismatch);
      return Status::Ok();
    }
    case Codec::kLz4Raw: {
      if (in.size() > INT32_MAX || expected > INT32_MAX) return CorruptionError(mismatch);
      const int produced = LZ4_decompress_safe(
          reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(out),
          static_cast<int>(in.size()), static_cast<int>(expected));
      if (produced < 0 || static_cast<size_t>(produced) != expected) {
        return CorruptionError(mismatch);
      }
      return Status::Ok();
    }
    case Codec::kBrotli: {
      size_t produced = expected;
      if (BrotliDecoderDecompress(in.size(), in.data(), &produced, out) !=
              BROTLI_DECODER_RESULT_SUCCESS ||
          produced != expected) {
        return CorruptionError(mismatch);
      }
      return Status::Ok();
    }
    default:
      return UnsupportedError("compression " + CodecName(codec));
  }
}

// Appends `count` PLAIN values of `leaf` from `data` to *out. *used receives the bytes read.
Status DecodePlain(const LeafDescriptor& leaf, std::span<const uint8_t> data, int64_t count,
                   DecodedChunk* out, size_t* used) {
  if (leaf.type == PhysicalType::kBoolean) {
    if (static_cast<uint64_t>(count) > static_cast<uint64_t>(data.size()) * 8) {
      return CorruptionError("PLAIN booleans run past the page");
    }
    for (int64_t i = 0; i < count; ++i) {
      out->fixed.push_back(
          static_cast<uint8_t>((data[static_cast<size_t>(i >> 3)] >> (i & 7)) & 1));
    }
    *used = static_cast<size_t>((count + 7) / 8);
    return Status::Ok();
  }
  if (leaf.type == PhysicalType::kByteArray) {
    size_t pos = 0;
    for (int64_t i = 0; i < count; ++i) {
      if (data.size() - pos < 4) return CorruptionError("PLAIN byte arrays run past the page");
      const uint32_t n = LoadU32(data.data() + pos);
      pos += 4;
      if (n > data.size() - pos) return CorruptionError("a PLAIN byte array runs past the page");
      out->binary.push_back(data.subspan(pos, n));
      pos += n;
    }
    *used = pos;
    return Status::Ok();
  }
  const uint64_t width = static_cast<uint64_t>(FixedWidth(leaf));
  if (width != 0 && static_cast<uint64_t>(count) > data.size() / width) {
    return CorruptionError("PLAIN values run past the page");
  }
  const size_t bytes = static_cast<size_t>(width * static_cast<uint64_t>(count));
  out->fixed.insert(out->fixed.end(), data.begin(), data.begin() + static_cast<ptrdiff_t>(bytes));
  *used = bytes;
  return Status::Ok();
}

// Decodes one level stream of `count` entries (maximum `max_level`) into *levels.
Status DecodeLevels(std::span<const uint8_t> bytes, int16_t max_level, int64_t count,
                    std::vector<uint32_t>* scratch, std::vector<int16_t>* levels) {
  DOCFEED_RETURN_IF_ERROR(DecodeHybrid(bytes, BitWidth(max_level), count, scratch));
  for (uint32_t v : *scratch) {
    if (v > static_cast<uint32_t>(max_level)) {
      return CorruptionError("a level of " + std::to_string(v) + " is above the column's maximum " +
                             std::to_string(max_level));
    }
    levels->push_back(static_cast<int16_t>(v));
  }
  return Status::Ok();
}

// v1 data pages prefix each level stream with its u32 byte length.
Status TakeLengthPrefixed(std::span<const uint8_t>* rest, std::span<const uint8_t>* stream) {
  if (rest->size() < 4) return CorruptionError("level stream length runs past the page");
  const uint32_t n = LoadU32(rest->data());
  if (n > rest->size() - 4) return CorruptionError("level stream runs past the page");
  *stream = rest->subspan(4, n);
  *rest = rest->subspan(4 + static_cast<size_t>(n));
  return Status::Ok();
}

class ChunkDecoder {
 public:
  ChunkDecoder(const LeafDescriptor& leaf, int32_t codec, const ChunkLimits& limits,
               DecodedChunk* out)
      : leaf_(leaf), codec_(codec), limits_(limits), out_(out) {}

  Status Page(const PageHeader& h, std::span<const uint8_t> body) {
    switch (static_cast<PageType>(h.type)) {
      case PageType::kDictionaryPage:
        return Dictionary(h, body);
      case PageType::kDataPage:
        return DataV1(h, body);
      case PageType::kDataPageV2:
        return DataV2(h, body);
      default:
        return Status::Ok();  // index pages and unknown kinds carry nothing to read
    }
  }

 private:
  // Decompressed bytes of a page body (or the body itself when not compressed).
  Result<std::span<const uint8_t>> Inflated(std::span<const uint8_t> in, int64_t expected,
                                            bool compressed) {
    if (!compressed || static_cast<Codec>(codec_) == Codec::kUncompressed) {
      if (static_cast<int64_t>(in.size()) != expected) {
        return CorruptionError("an uncompressed page's size differs from its header's");
      }
      return in;
    }
    decoded_bytes_ += expected;
    if (decoded_bytes_ > limits_.max_chunk_bytes) {
      return ResourceExhaustedError("its pages decompress to more than " +
                                    std::to_string(limits_.max_chunk_bytes) +
                                    " bytes; write the file with smaller row groups");
    }
    std::vector<uint8_t>& buffer = out_->buffers.emplace_back(static_cast<size_t>(expected));
    DOCFEED_RETURN_IF_ERROR(Decompress(codec_, in, buffer.data(), buffer.size()));
    return std::span<const uint8_t>(buffer);
  }

  Status Dictionary(const PageHeader& h, std::span<const uint8_t> body) {
    if (has_dictionary_ || out_->num_levels > 0) {
      return CorruptionError("a dictionary page after the first page");
    }
    if (h.encoding != kPlain && h.encoding != kPlainDictionary) {
      return UnsupportedError("a dictionary page in " + EncodingName(h.encoding));
    }
    DOCFEED_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes,
                             Inflated(body, h.uncompressed_page_size, true));
    DecodedChunk dict;
    size_t used = 0;
    DOCFEED_RETURN_IF_ERROR(DecodePlain(leaf_, bytes, h.num_values, &dict, &used));
    dict_fixed_ = std::move(dict.fixed);
    dict_binary_ = std::move(dict.binary);
    dict_count_ = h.num_values;
    has_dictionary_ = true;
    return Status::Ok();
  }

  Status DataV1(const PageHeader& h, std::span<const uint8_t> body) {
    DOCFEED_RETURN_IF_ERROR(CheckCount(h.num_values));
    DOCFEED_ASSIGN_OR_RETURN(std::span<const uint8_t> rest,
                             Inflated(body, h.uncompressed_page_size, true));
    std::span<const uint8_t> stream;
    if (leaf_.max_rep > 0) {
      if (h.repetition_level_encoding != kRle) {
        return UnsupportedError("repetition levels in " +
                                EncodingName(h.repetition_level_encoding));
      }
      DOCFEED_RETURN_IF_ERROR(TakeLengthPrefixed(&rest, &stream));
      DOCFEED_RETURN_IF_ERROR(
          DecodeLevels(stream, leaf_.max_rep, h.num_values, &scratch_, &out_->rep));
    }
    if (leaf_.max_def > 0) {
      if (h.definition_level_encoding != kRle) {
        return UnsupportedError("definition levels in " +
                                EncodingName(h.definition_level_encoding));
      }
      DOCFEED_RETURN_IF_ERROR(TakeLengthPrefixed(&rest, &stream));
      DOCFEED_RETURN_IF_ERROR(
          DecodeLevels(stream, leaf_.max_def, h.num_values, &scratch_, &out_->def));
    }
    return Values(h, rest);
  }

  Status DataV2(const PageHeader& h, std::span<const uint8_t> body) {
    DOCFEED_RETURN_IF_ERROR(CheckCount(h.num_values));
    const uint64_t levels = static_cast<uint64_t>(h.repetition_levels_byte_length) +
                            static_cast<uint64_t>(h.definition_levels_byte_length);
    if (levels > body.size() || static_cast<int64_t>(levels) > h.uncompressed_page_size) {
      return CorruptionError("a v2 data page's level streams are longer than the page");
    }
    const auto rep_bytes = static_cast<size_t>(h.repetition_levels_byte_length);
    const auto def_bytes = static_cast<size_t>(h.definition_levels_byte_length);
    if (leaf_.max_rep > 0) {
      DOCFEED_RETURN_IF_ERROR(DecodeLevels(body.subspan(0, rep_bytes), leaf_.max_rep, h.num_values,
                                           &scratch_, &out_->rep));
    }
    if (leaf_.max_def > 0) {
      DOCFEED_RETURN_IF_ERROR(DecodeLevels(body.subspan(rep_bytes, def_bytes), leaf_.max_def,
                                           h.num_values, &scratch_, &out_->def));
    }
    DOCFEED_ASSIGN_OR_RETURN(
        std::span<const uint8_t> values,
        Inflated(body.subspan(static_cast<size_t>(levels)),
                 h.uncompressed_page_size - static_cast<int64_t>(levels), h.is_compressed));
    return Values(h, values);
  }

  Status CheckCount(int32_t num_values) {
    if (out_->num_levels + num_values > expected_levels_) {
      return CorruptionError("its pages hold more values than its metadata's " +
                             std::to_string(expected_levels_));
    }
    return Status::Ok();
  }

  // Decodes the page's non-null values (as many as its definition levels at the maximum).
  Status Values(const PageHeader& h, std::span<const uint8_t> data) {
    int64_t count = h.num_values;
    if (leaf_.max_def > 0) {
      count = 0;
      const size_t first = out_->def.size() - static_cast<size_t>(h.num_values);
      for (size_t i = first; i < out_->def.size(); ++i) count += out_->def[i] == leaf_.max_def;
    }
    out_->num_levels += h.num_values;
    out_->num_values += count;
    const int64_t width = std::max<int64_t>(FixedWidth(leaf_), 16);
    if (out_->num_values > limits_.max_chunk_bytes / width) {
      return ResourceExhaustedError("it holds more values than docfeed reads from one chunk");
    }
    size_t used = 0;
    switch (h.encoding) {
      case kPlain:
        return DecodePlain(leaf_, data, count, out_, &used);
      case kPlainDictionary:
      case kRleDictionary:
        return Indices(data, count);
      case kRle: {
        if (leaf_.type != PhysicalType::kBoolean) break;
        std::span<const uint8_t> stream;
        DOCFEED_RETURN_IF_ERROR(TakeLengthPrefixed(&data, &stream));
        DOCFEED_RETURN_IF_ERROR(DecodeHybrid(stream, 1, count, &scratch_));
        for (uint32_t v : scratch_) out_->fixed.push_back(static_cast<uint8_t>(v));
        return Status::Ok();
      }
      default:
        break;
    }
    return UnsupportedError("values in " + EncodingName(h.encoding) +
                            " (docfeed reads PLAIN and dictionary encodings)");
  }

  Status Indices(std::span<const uint8_t> data, int64_t count) {
    if (!has_dictionary_) return CorruptionError("a dictionary-encoded page without a dictionary");
    if (count == 0) return Status::Ok();
    if (data.empty()) return CorruptionError("a dictionary-encoded page without indices");
    const int bit_width = data[0];
    if (bit_width > 32) return CorruptionError("dictionary indices wider than 32 bits");
    DOCFEED_RETURN_IF_ERROR(DecodeHybrid(data.subspan(1), bit_width, count, &scratch_));
    const int64_t width = FixedWidth(leaf_);
    for (uint32_t index : scratch_) {
      if (index >= static_cast<uint64_t>(dict_count_)) {
        return CorruptionError("dictionary index " + std::to_string(index) + " past its " +
                               std::to_string(dict_count_) + " entries");
      }
      if (leaf_.type == PhysicalType::kByteArray) {
        out_->binary.push_back(dict_binary_[index]);
      } else {
        const auto at = dict_fixed_.begin() + static_cast<ptrdiff_t>(index * width);
        out_->fixed.insert(out_->fixed.end(), at, at + width);
      }
    }
    return Status::Ok();
  }

 public:
  int64_t expected_levels_ = 0;

 private:
  const LeafDescriptor& leaf_;
  int32_t codec_;
  const ChunkLimits& limits_;
  DecodedChunk* out_;
  int64_t decoded_bytes_ = 0;
  bool has_dictionary_ = false;
  int64_t dict_count_ = 0;
  std::vector<uint8_t> dict_fixed_;
  std::vector<std::span<const uint8_t>> dict_binary_;
  std::vector<uint32_t> scratch_;
};

}  // namespace

int64_t FixedWidth(const LeafDescriptor& leaf) {
  switch (leaf.type) {
    case PhysicalType::kBoolean:
      return 1;
    case PhysicalType::kInt32:
    case PhysicalType::kFloat:
      return 4;
    case PhysicalType::kInt64:
    case PhysicalType::kDouble:
      return 8;
    case PhysicalType::kInt96:
      return 12;
    case PhysicalType::kFixedLenByteArray:
      return leaf.type_length;
    case PhysicalType::kByteArray:
      return 0;
  }
  return 0;
}

Status DecodeHybrid(std::span<const uint8_t> bytes, int bit_width, int64_t count,
                    std::vector<uint32_t>* out) {
  out->clear();
  if (bit_width < 0 || bit_width > 32) return CorruptionError("bit width above 32");
  out->reserve(static_cast<size_t>(std::min<int64_t>(count, int64_t{1} << 20)));
  size_t pos = 0;
  const uint64_t mask = bit_width == 32 ? 0xFFFFFFFFull : (uint64_t{1} << bit_width) - 1;
  while (static_cast<int64_t>(out->size()) < count) {
    uint64_t header = 0;
    int shift = 0;
    for (;;) {
      if (pos >= bytes.size()) return CorruptionError("RLE/bit-packed levels run past their bytes");
      const uint8_t b = bytes[pos++];
      if (shift > 28) return CorruptionError("RLE/bit-packed run header too long");
      header |= static_cast<uint64_t>(b & 0x7F) << shift;
      shift += 7;
      if ((b & 0x80) == 0) break;
    }
    const int64_t left = count - static_cast<int64_t>(out->size());
    if (header & 1) {
      // Bit-packed: (header >> 1) groups of 8 values, LSB first.
      const uint64_t groups = header >> 1;
      const uint64_t nbytes = groups * static_cast<uint64_t>(bit_width);
      if (nbytes > bytes.size() - pos) return CorruptionError("a bit-packed run past its bytes");
      const int64_t take = std::min<int64_t>(left, static_cast<int64_t>(groups * 8));
      const uint8_t* p = bytes.data() + pos;
      for (int64_t i = 0; i < take; ++i) {
        const uint64_t bit = static_cast<uint64_t>(i) * static_cast<uint64_t>(bit_width);
        uint64_t v = 0;
        // Up to 5 bytes cover a 32-bit value at any bit offset.
        for (uint64_t k = 0; k < 5 && (bit >> 3) + k < nbytes; ++k) {
          v |= static_cast<uint64_t>(p[(bit >> 3) + k]) << (8 * k);
        }
        out->push_back(static_cast<uint32_t>((v >> (bit & 7)) & mask));
      }
      pos += static_cast<size_t>(nbytes);
    } else {
      const uint64_t run = header >> 1;
      const size_t width_bytes = static_cast<size_t>((bit_width + 7) / 8);
      if (width_bytes > bytes.size() - pos) return CorruptionError("an RLE run past its bytes");
      uint32_t v = 0;
      for (size_t k = 0; k < width_bytes; ++k)
        v |= static_cast<uint32_t>(bytes[pos + k]) << (8 * k);
      pos += width_bytes;
      if ((v & mask) != v) return CorruptionError("an RLE value wider than its bit width");
      const int64_t take =
          std::min<int64_t>(left, static_cast<int64_t>(std::min<uint64_t>(run, INT64_MAX)));
      out->insert(out->end(), static_cast<size_t>(take), v);
    }
  }
  return Status::Ok();
}

Status ReadColumnChunk(const RandomAccessFile& file, uint64_t data_end, const ColumnChunk& chunk,
                       const LeafDescriptor& leaf, const ChunkLimits& limits, DecodedChunk* out) {
  *out = DecodedChunk();
  auto fail = [&](const Status& s) { return s.WithContext("column '" + leaf.name + "'"); };
  if (!chunk.has_meta_data) return fail(CorruptionError("the chunk has no metadata"));
  if (!chunk.file_path.empty()) {
    return fail(UnsupportedError("the chunk lives in another file (" + chunk.file_path + ")"));
  }
  if (chunk.type != leaf.type) {
    return fail(CorruptionError("the chunk's type differs from the schema's"));
  }
  if (!CodecSupported(chunk.codec)) {
    return fail(UnsupportedError("compression " + CodecName(chunk.codec) +
                                 " (docfeed reads UNCOMPRESSED, SNAPPY, GZIP, ZSTD, LZ4_RAW, "
                                 "BROTLI)"));
  }
  if (chunk.num_values > limits.max_levels) {
    return fail(ResourceExhaustedError(std::to_string(chunk.num_values) +
                                       " values in one chunk; write smaller row groups"));
  }
  uint64_t start = static_cast<uint64_t>(chunk.data_page_offset);
  if (chunk.dictionary_page_offset && *chunk.dictionary_page_offset > 0 &&
      static_cast<uint64_t>(*chunk.dictionary_page_offset) < start) {
    start = static_cast<uint64_t>(*chunk.dictionary_page_offset);
  }
  const auto size = static_cast<uint64_t>(chunk.total_compressed_size);
  if (start > data_end || size > data_end - start) {
    return fail(CorruptionError("the chunk's bytes [" + std::to_string(start) + ", +" +
                                std::to_string(size) + ") lie outside the file's data"));
  }
  if (chunk.total_compressed_size > limits.max_chunk_bytes) {
    return fail(ResourceExhaustedError("the chunk is " + std::to_string(size) +
                                       " bytes; write the file with smaller row groups"));
  }
  std::vector<uint8_t>& raw = out->buffers.emplace_back(static_cast<size_t>(size));
  DOCFEED_RETURN_IF_ERROR(file.ReadAt(start, raw));
  const std::span<const uint8_t> bytes(raw);

  ChunkDecoder decoder(leaf, chunk.codec, limits, out);
  decoder.expected_levels_ = chunk.num_values;
  if (leaf.max_def > 0) out->def.reserve(static_cast<size_t>(chunk.num_values));
  if (leaf.max_rep > 0) out->rep.reserve(static_cast<size_t>(chunk.num_values));
  size_t pos = 0;
  while (pos < bytes.size() && out->num_levels < chunk.num_values) {
    PageHeader header;
    size_t header_size = 0;
    const std::string where = "page at offset " + std::to_string(start + pos);
    Status s = DecodePageHeader(bytes.subspan(pos), &header, &header_size);
    if (!s.ok()) return fail(s.WithContext(where));
    pos += header_size;
    if (static_cast<uint64_t>(header.compressed_page_size) > bytes.size() - pos) {
      return fail(CorruptionError(where + " runs past the chunk"));
    }
    s = decoder.Page(header, bytes.subspan(pos, static_cast<size_t>(header.compressed_page_size)));
    if (!s.ok()) return fail(s.WithContext(where));
    pos += static_cast<size_t>(header.compressed_page_size);
  }
  if (out->num_levels != chunk.num_values) {
    return fail(CorruptionError("its pages hold " + std::to_string(out->num_levels) +
                                " values, its metadata says " + std::to_string(chunk.num_values)));
  }
  return Status::Ok();
}

}  // namespace docfeed::internal::parquet
