// libFuzzer target for the index reader (IndexView, src/format/index.h). The input is a
// docfeed.index file; the target first rewrites its footer to the true checksum of the bytes
// before it (docs/format.md, section 3), so mutations reach the header and record parsing. Every
// record of an index that opens is read, checked against its codec signature helper, and the
// records must encode back to an index that opens to the same records. Any crash, sanitizer
// report or abort is a bug.
//
// Build and run: tests/fuzz/run_format_fuzz.sh [seconds]
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/hash.h"
#include "format/index.h"

namespace {

using docfeed::internal::IndexRecord;
using docfeed::internal::IndexView;

bool SameRecord(const IndexRecord& a, const IndexRecord& b) {
  return std::memcmp(&a, &b, sizeof(IndexRecord)) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  constexpr size_t kFooter = docfeed::internal::kIndexFooterBytes;
  if (bytes.size() >= kFooter) {
    const uint64_t sum =
        docfeed::internal::Hash64(std::span<const uint8_t>(bytes).first(bytes.size() - kFooter));
    std::memcpy(bytes.data() + bytes.size() - kFooter, &sum, kFooter);  // little-endian host
  }
  auto view = IndexView::Open(bytes, "fuzz/docfeed.index");
  if (!view.ok()) return 0;
  std::vector<IndexRecord> records;
  for (uint64_t i = 0; i < view->size(); ++i) records.push_back(view->Get(i));
  volatile bool sink = false;
  for (const IndexRecord& r : records) {
    const uint8_t probe[4] = {0x89, 'P', 'N', 'G'};
    sink = sink ^ docfeed::internal::CheckStoredCodec(r.codec, probe).ok();
  }
  const std::vector<uint8_t> encoded = docfeed::internal::EncodeIndex(records);
  auto again = IndexView::Open(encoded, "fuzz/again.index");
  if (!again.ok() || again->size() != records.size()) std::abort();
  for (uint64_t i = 0; i < again->size(); ++i) {
    if (!SameRecord(again->Get(i), records[i])) std::abort();
  }
  return 0;
}
