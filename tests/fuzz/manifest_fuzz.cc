// libFuzzer target for the manifest reader (DecodeManifest, src/format/manifest.h). The input is
// docfeed.json text; when it holds a "manifest_xxh3" value, the target first rewrites that value
// to the text's true checksum (docs/format.md, section 4), so mutations reach the field parsing
// instead of stopping at the checksum. A manifest that decodes must encode and decode again to the
// same text. Any crash, sanitizer report or abort is a bug.
//
// Build and run: tests/fuzz/run_format_fuzz.sh [seconds]
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "base/hash.h"
#include "format/manifest.h"

namespace {

// Replaces the 16 characters after `"manifest_xxh3": "` with the checksum of the text in which
// they are 16 '0's, as the writer computes it.
void FixChecksum(std::string& text) {
  const std::string key = "\"manifest_xxh3\": \"";
  const size_t at = text.rfind(key);
  if (at == std::string::npos || text.size() - at - key.size() < 16) return;
  const size_t value = at + key.size();
  text.replace(value, 16, std::string(16, '0'));
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  const std::string hex = docfeed::internal::Hex64(docfeed::internal::Hash64(bytes));
  text.replace(value, 16, hex);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  FixChecksum(text);
  auto manifest = docfeed::internal::DecodeManifest(text, "fuzz/docfeed.json");
  if (!manifest.ok()) return 0;
  const std::string encoded = docfeed::internal::EncodeManifest(*manifest);
  auto again = docfeed::internal::DecodeManifest(encoded, "fuzz/again.json");
  if (!again.ok() || docfeed::internal::EncodeManifest(*again) != encoded) std::abort();
  return 0;
}
