#include "labels/precompiled.h"

#include <unicode/ubrk.h>
#include <unicode/utext.h>

#include <array>
#include <cstring>
#include <memory>

#include "base/check.h"

namespace docfeed::internal {
namespace {

// Double-array unit fields (SentencePiece's Darts-clone layout).
bool HasLeaf(uint32_t unit) { return ((unit >> 8) & 1) == 1; }
uint32_t Value(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t Label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
uint32_t Offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<uint8_t>(c) >= 0x80) return false;
  }
  return true;
}

// One ICU character (extended grapheme cluster) break iterator per thread, reused.
struct BreakIteratorDeleter {
  void operator()(UBreakIterator* b) const { ubrk_close(b); }
};

UBreakIterator* ThreadBreakIterator() {
  thread_local std::unique_ptr<UBreakIterator, BreakIteratorDeleter> it = [] {
    UErrorCode status = U_ZERO_ERROR;
    UBreakIterator* b = ubrk_open(UBRK_CHARACTER, "", nullptr, 0, &status);
    DOCFEED_CHECK(U_SUCCESS(status));
    return std::unique_ptr<UBreakIterator, BreakIteratorDeleter>(b);
  }();
  return it.get();
}

}  // namespace

Result<PrecompiledCharsmap> PrecompiledCharsmap::Parse(std::string_view blob) {
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    std::memcpy(&v, blob.data() + at, 4);  // little-endian hosts only (x86-64, aarch64)
    return v;
  };
  if (blob.size() < 4) return InvalidArgumentError("precompiled_charsmap: shorter than 4 bytes");
  uint32_t trie_bytes = u32(0);
  if (trie_bytes % 4 != 0 || trie_bytes == 0 || trie_bytes > blob.size() - 4) {
    return InvalidArgumentError("precompiled_charsmap: trie size " + std::to_string(trie_bytes) +
                                " does not fit the " + std::to_string(blob.size()) + " bytes");
  }
  PrecompiledCharsmap map;
  map.units_.resize(trie_bytes / 4);
  for (size_t i = 0; i < map.units_.size(); ++i) map.units_[i] = u32(4 + 4 * i);
  map.replacements_ = std::string(blob.substr(4 + trie_bytes));
  return map;
}

std::optional<std::string_view> PrecompiledCharsmap::Transform(std::string_view chunk) const {
  // A malformed trie (an index out of range) reads as "no rule" rather than faulting.
  auto unit_at = [&](size_t pos) -> std::optional<uint32_t> {
    if (pos >= units_.size()) return std::nullopt;
    return units_[pos];
  };
  size_t pos = Offset(units_[0]);
  for (char ch : chunk) {
    auto c = static_cast<uint8_t>(ch);
    if (c == 0) break;
    pos ^= c;
    std::optional<uint32_t> unit = unit_at(pos);
    if (!unit || Label(*unit) != c) return std::nullopt;
    pos ^= Offset(*unit);
    if (HasLeaf(*unit)) {
      std::optional<uint32_t> leaf = unit_at(pos);
      if (!leaf || Value(*leaf) >= replacements_.size()) return std::nullopt;
      std::string_view rest = std::string_view(replacements_).substr(Value(*leaf));
      return rest.substr(0, rest.find('\0'));
    }
  }
  return std::nullopt;
}

void PrecompiledCharsmap::AppendCluster(std::string_view cluster, std::string* out) const {
  if (cluster.size() < 6) {
    if (std::optional<std::string_view> r = Transform(cluster)) {
      out->append(*r);
      return;
    }
  }
  for (size_t i = 0; i < cluster.size();) {
    auto lead = static_cast<uint8_t>(cluster[i]);
    size_t n = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    std::string_view cp = cluster.substr(i, n);
    std::optional<std::string_view> r = Transform(cp);
    out->append(r ? *r : cp);
    i += n;
  }
}

std::string PrecompiledCharsmap::Normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  if (IsAscii(text)) {
    // Every ASCII character is its own cluster except CR LF (UAX #29 GB3).
    for (size_t i = 0; i < text.size();) {
      size_t n = text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n' ? 2 : 1;
      AppendCluster(text.substr(i, n), &out);
      i += n;
    }
    return out;
  }
  UErrorCode status = U_ZERO_ERROR;
  UText ut = UTEXT_INITIALIZER;
  utext_openUTF8(&ut, text.data(), static_cast<int64_t>(text.size()), &status);
  UBreakIterator* it = ThreadBreakIterator();
  ubrk_setUText(it, &ut, &status);  // a shallow clone: `ut` may be closed after the walk
  DOCFEED_CHECK(U_SUCCESS(status));
  // UText over UTF-8 reports native (byte) indices.
  int32_t start = ubrk_first(it);
  for (int32_t end = ubrk_next(it); end != UBRK_DONE; start = end, end = ubrk_next(it)) {
    AppendCluster(text.substr(static_cast<size_t>(start), static_cast<size_t>(end - start)), &out);
  }
  utext_close(&ut);
  return out;
}

}  // namespace docfeed::internal
