// Arrow IPC body-buffer compression (Message.fbs `BodyCompression`, method BUFFER): each
// non-empty body buffer is an int64 little-endian uncompressed length followed by the codec's
// output, or by the raw bytes when that length is -1. Codecs: ZSTD (one zstd frame) and
// LZ4_FRAME (the LZ4 frame format, not raw LZ4 blocks).
//
// Decompression is defensive: the declared length is checked against caps before anything is
// allocated, and the codec must produce exactly that many bytes.
#ifndef DOCFEED_FORMAT_ARROW_COMPRESSION_H_
#define DOCFEED_FORMAT_ARROW_COMPRESSION_H_

#include <cstdint>
#include <span>
#include <vector>

#include "docfeed/status.h"
#include "format/arrow/ipc_metadata.h"

namespace docfeed::internal::arrow {

// Largest uncompressed size accepted for one buffer.
inline constexpr int64_t kMaxDecompressedBufferBytes = int64_t{4} << 30;  // 4 GiB
// A buffer may expand at most this many times its compressed size ...
inline constexpr int64_t kMaxCompressionRatio = 1000;
// ... except that buffers up to this size are always accepted (tiny, highly repetitive
// buffers such as all-zero values legitimately exceed the ratio).
inline constexpr int64_t kRatioFreeBytes = int64_t{1} << 20;  // 1 MiB

// Decodes one compressed body buffer (`framed` = length prefix + payload). When the prefix is -1
// leaves *out alone and returns the raw payload view inside `framed`; otherwise decompresses into
// the first `declared` bytes of *out and returns a view of exactly those. *out is only grown (and
// then zero-filled by std::vector) when it is shorter; a longer one, e.g. a buffer reused from an
// earlier batch, is neither reallocated nor cleared: the codec must produce exactly `declared`
// bytes (checked), so every byte of the returned view was written by it. An empty `framed` yields
// an empty span.
// Corruption when the prefix is missing, negative (other than -1), above the caps, or when the
// codec fails or produces a different size.
Result<std::span<const uint8_t>> DecompressBuffer(CompressionCodec codec,
                                                  std::span<const uint8_t> framed,
                                                  std::vector<uint8_t>* out);

// Encodes `raw` as one framed compressed buffer appended to *out: the length prefix and the
// codec's output, or -1 and the raw bytes when compression does not make it smaller. An empty
// `raw` appends nothing (Arrow writes empty buffers without a prefix).
Status CompressBuffer(CompressionCodec codec, std::span<const uint8_t> raw,
                      std::vector<uint8_t>* out);

}  // namespace docfeed::internal::arrow

#endif  // DOCFEED_FORMAT_ARROW_COMPRESSION_H_
