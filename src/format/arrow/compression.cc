#include "format/arrow/compression.h"

#include <lz4frame.h>
#include <zstd.h>

#include <cstring>
#include <string>

namespace docfeed::internal::arrow {
namespace {

constexpr size_t kPrefixBytes = sizeof(int64_t);

Status CheckDeclaredSize(int64_t declared, size_t compressed_bytes) {
  if (declared < 0) {
    return CorruptionError("negative uncompressed length " + std::to_string(declared));
  }
  if (declared > kMaxDecompressedBufferBytes) {
    return CorruptionError("uncompressed length " + std::to_string(declared) +
                           " exceeds the 4 GiB limit");
  }
  const auto compressed = static_cast<int64_t>(compressed_bytes);
  if (declared > kRatioFreeBytes && declared / kMaxCompressionRatio > compressed) {
    return CorruptionError("uncompressed length " + std::to_string(declared) + " is more than " +
                           std::to_string(kMaxCompressionRatio) + "x the " +
                           std::to_string(compressed) + " compressed bytes");
  }
  return Status::Ok();
}

Status DecompressZstd(std::span<const uint8_t> in, std::span<uint8_t> out) {
  const size_t produced = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(produced)) {
    return CorruptionError(std::string("zstd: ") + ZSTD_getErrorName(produced));
  }
  if (produced != out.size()) {
    return CorruptionError("zstd produced " + std::to_string(produced) + " bytes, expected " +
                           std::to_string(out.size()));
  }
  return Status::Ok();
}

Status DecompressLz4Frame(std::span<const uint8_t> in, std::span<uint8_t> out) {
  LZ4F_dctx* ctx = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION))) {
    return ResourceExhaustedError("lz4: cannot create a decompression context");
  }
  size_t in_pos = 0;
  size_t out_pos = 0;
  Status status;
  // One buffer may hold several concatenated frames; LZ4F_decompress returns 0 at a frame end.
  while (in_pos < in.size()) {
    size_t out_size = out.size() - out_pos;
    size_t in_size = in.size() - in_pos;
    const size_t hint = LZ4F_decompress(ctx, out.data() + out_pos, &out_size, in.data() + in_pos,
                                        &in_size, nullptr);
    if (LZ4F_isError(hint)) {
      status = CorruptionError(std::string("lz4: ") + LZ4F_getErrorName(hint));
      break;
    }
    in_pos += in_size;
    out_pos += out_size;
    if (in_size == 0 && out_size == 0) {
      status = CorruptionError("lz4: output larger than the declared length");
      break;
    }
  }
  LZ4F_freeDecompressionContext(ctx);
  if (status.ok() && out_pos != out.size()) {
    status = CorruptionError("lz4 produced " + std::to_string(out_pos) + " bytes, expected " +
                             std::to_string(out.size()));
  }
  return status;
}

void AppendInt64(int64_t value, std::vector<uint8_t>* out) {
  uint8_t bytes[kPrefixBytes];
  std::memcpy(bytes, &value, kPrefixBytes);
  out->insert(out->end(), bytes, bytes + kPrefixBytes);
}

// Compresses `raw` into `dst`; returns the compressed size or an error.
Result<size_t> Compress(CompressionCodec codec, std::span<const uint8_t> raw,
                        std::span<uint8_t> dst) {
  if (codec == CompressionCodec::kZstd) {
    const size_t n = ZSTD_compress(dst.data(), dst.size(), raw.data(), raw.size(), 1);
    if (ZSTD_isError(n)) return InternalError(std::string("zstd: ") + ZSTD_getErrorName(n));
    return n;
  }
  LZ4F_preferences_t prefs;
  std::memset(&prefs, 0, sizeof(prefs));
  prefs.frameInfo.contentSize = raw.size();
  const size_t n = LZ4F_compressFrame(dst.data(), dst.size(), raw.data(), raw.size(), &prefs);
  if (LZ4F_isError(n)) return InternalError(std::string("lz4: ") + LZ4F_getErrorName(n));
  return n;
}

size_t CompressBound(CompressionCodec codec, size_t raw_bytes) {
  if (codec == CompressionCodec::kZstd) return ZSTD_compressBound(raw_bytes);
  LZ4F_preferences_t prefs;
  std::memset(&prefs, 0, sizeof(prefs));
  prefs.frameInfo.contentSize = raw_bytes;
  return LZ4F_compressFrameBound(raw_bytes, &prefs);
}

}  // namespace

Result<std::span<const uint8_t>> DecompressBuffer(CompressionCodec codec,
                                                  std::span<const uint8_t> framed,
                                                  std::vector<uint8_t>* out) {
  if (framed.empty()) return framed;
  if (framed.size() < kPrefixBytes) {
    return CorruptionError("compressed buffer of " + std::to_string(framed.size()) +
                           " bytes is shorter than its 8-byte length prefix");
  }
  int64_t declared;
  std::memcpy(&declared, framed.data(), kPrefixBytes);
  const std::span<const uint8_t> payload = framed.subspan(kPrefixBytes);
  if (declared == -1) return payload;  // stored uncompressed
  DOCFEED_RETURN_IF_ERROR(CheckDeclaredSize(declared, payload.size()));
  const auto length = static_cast<size_t>(declared);
  if (out->size() < length) {
    out->clear();  // no copy of stale bytes when growing needs a new block
    out->resize(length);
  }
  // Both codecs fail unless they wrote exactly `length` bytes into this span, so stale bytes of a
  // reused buffer can never show through the returned view.
  const std::span<uint8_t> dst(out->data(), length);
  if (declared > 0 || !payload.empty()) {
    Status status = codec == CompressionCodec::kZstd ? DecompressZstd(payload, dst)
                                                     : DecompressLz4Frame(payload, dst);
    if (!status.ok()) return status;
  }
  return std::span<const uint8_t>(dst);
}

Status CompressBuffer(CompressionCodec codec, std::span<const uint8_t> raw,
                      std::vector<uint8_t>* out) {
  if (raw.empty()) return Status::Ok();
  const size_t start = out->size();
  out->resize(start + kPrefixBytes + CompressBound(codec, raw.size()));
  DOCFEED_ASSIGN_OR_RETURN(
      size_t compressed,
      Compress(codec, raw, std::span<uint8_t>(*out).subspan(start + kPrefixBytes)));
  if (compressed >= raw.size()) {
    // Not worth it: store raw behind the -1 marker (Arrow IPC spec allows this per buffer).
    out->resize(start);
    AppendInt64(-1, out);
    out->insert(out->end(), raw.begin(), raw.end());
    return Status::Ok();
  }
  out->resize(start + kPrefixBytes + compressed);
  const auto declared = static_cast<int64_t>(raw.size());
  std::memcpy(out->data() + start, &declared, kPrefixBytes);
  return Status::Ok();
}

}  // namespace docfeed::internal::arrow
