// The tokens of a Netpbm-family header (PGM/PPM in ppm.cc, PFM in pfm.cc): ASCII fields after a
// two-byte magic, separated by whitespace, and for PGM/PPM also by comments ('#' to the end of
// the line; PFM has none). Only the first kMaxHeaderBytes of the input are ever scanned, so a
// stream of whitespace or comment bytes is refused quickly instead of read to its end.
//
// Errors name the format ("PPM header: ...", "PFM header: ...").
#ifndef DOCFEED_CODEC_INTERNAL_NETPBM_HEADER_H_
#define DOCFEED_CODEC_INTERNAL_NETPBM_HEADER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "docfeed/status.h"

namespace docfeed::internal {

class NetpbmHeaderTokens {
 public:
  // A real header is ~20 bytes; comments make it longer. Anything above this is refused.
  static constexpr size_t kMaxHeaderBytes = 4096;
  // Widths, heights and maxvals must fit in int32.
  static constexpr uint64_t kMaxDecimal = 0x7FFFFFFF;

  // `format` names the file in errors ("PPM", "PFM"); `comments`: '#' comments may separate
  // tokens. Starts after the two magic bytes (the caller checks them).
  NetpbmHeaderTokens(std::span<const uint8_t> bytes, std::string_view format, bool comments)
      : bytes_(bytes.first(std::min(bytes.size(), kMaxHeaderBytes))),
        whole_input_(bytes.size() <= kMaxHeaderBytes),
        format_(format),
        comments_(comments) {}

  static bool IsSpace(uint8_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  }

  // Skips the separator before the field `next` (named in errors): at least one whitespace byte
  // or comment. Errors: Corruption when there is none, or the header ends here.
  Status SkipSeparator(std::string_view next) {
    const size_t start = pos_;
    while (pos_ < bytes_.size()) {
      if (IsSpace(bytes_[pos_])) {
        ++pos_;
      } else if (comments_ && bytes_[pos_] == '#') {
        while (pos_ < bytes_.size() && bytes_[pos_] != '\n' && bytes_[pos_] != '\r') ++pos_;
      } else {
        break;
      }
    }
    if (pos_ >= bytes_.size()) return EndOfHeader(next);
    if (pos_ == start) {
      return CorruptionError(Prefix() + "no whitespace before " + std::string(next));
    }
    return Status::Ok();
  }

  // A separator, then a decimal of at most kMaxDecimal (the field `field`, named in errors).
  Result<int32_t> ParseNumber(std::string_view field) {
    DOCFEED_RETURN_IF_ERROR(SkipSeparator(field));
    uint64_t value = 0;
    const size_t start = pos_;
    while (pos_ < bytes_.size() && bytes_[pos_] >= '0' && bytes_[pos_] <= '9') {
      value = value * 10 + (bytes_[pos_] - '0');
      if (value > kMaxDecimal) {
        return CorruptionError(Prefix() + std::string(field) + " is too large");
      }
      ++pos_;
    }
    if (pos_ == start) {
      return CorruptionError(Prefix() + std::string(field) + " is not a decimal number");
    }
    return static_cast<int32_t>(value);
  }

  // A separator, then the bytes up to the next whitespace byte, at most `max_chars` of them.
  Result<std::string_view> ParseWord(std::string_view field, size_t max_chars) {
    DOCFEED_RETURN_IF_ERROR(SkipSeparator(field));
    const size_t start = pos_;
    while (pos_ < bytes_.size() && !IsSpace(bytes_[pos_])) {
      if (pos_ - start >= max_chars) {
        return CorruptionError(Prefix() + std::string(field) + " is too long");
      }
      ++pos_;
    }
    return std::string_view(reinterpret_cast<const char*>(bytes_.data()) + start, pos_ - start);
  }

  // After the last field: exactly one whitespace byte (`after` names that field), then the
  // raster. Returns the raster's offset.
  Result<size_t> EndOfFields(std::string_view after) {
    if (pos_ >= bytes_.size()) return EndOfHeader("the whitespace after " + std::string(after));
    if (!IsSpace(bytes_[pos_])) {
      return CorruptionError(Prefix() + "no whitespace after " + std::string(after));
    }
    return pos_ + 1;
  }

  // The header ends at the current position: cut at kMaxHeaderBytes, or a truncated file.
  Status EndOfHeader(std::string_view what) const {
    if (!whole_input_) {
      return CorruptionError(std::string(format_) + " header longer than " +
                             std::to_string(kMaxHeaderBytes) + " bytes");
    }
    return CorruptionError(std::string(format_) + " file is truncated in its header (before " +
                           std::string(what) + ")");
  }

 private:
  std::string Prefix() const { return std::string(format_) + " header: "; }

  std::span<const uint8_t> bytes_;
  bool whole_input_;  // bytes_ is the whole input (not cut at kMaxHeaderBytes)
  std::string_view format_;
  bool comments_;
  size_t pos_ = 2;  // after the magic
};

}  // namespace docfeed::internal

#endif  // DOCFEED_CODEC_INTERNAL_NETPBM_HEADER_H_
