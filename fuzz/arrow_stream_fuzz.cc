// libFuzzer target for the Arrow IPC stream reader (src/format/arrow/reader.h): opens the input
// as a stream, reads every batch, touches every value through the typed accessors and re-reads
// each batch with ReadBatchAt. Any crash, sanitizer report or abort is a bug: corrupt input must
// only ever produce a Status.
//
// Build and run: fuzz/run_arrow_fuzz.sh [seconds]
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "format/arrow/reader.h"

namespace {

using docfeed::internal::arrow::ArrayView;
using docfeed::internal::arrow::RecordBatch;
using docfeed::internal::arrow::StreamReader;
using docfeed::internal::arrow::TypeId;

uint64_t Touch(const ArrayView& view) {
  uint64_t sum = 0;
  for (int64_t i = 0; i < view.length; ++i) {
    sum += view.IsValid(i) ? 1 : 0;
    switch (view.type()) {
      case TypeId::kNull:
      case TypeId::kStruct:
        break;
      case TypeId::kBool:
        sum += view.GetBool(i) ? 1 : 0;
        break;
      case TypeId::kFloat16:
      case TypeId::kFloat32:
      case TypeId::kFloat64:
        sum += static_cast<uint64_t>(view.GetDouble(i) != 0.0);
        break;
      case TypeId::kBinary:
      case TypeId::kLargeBinary:
      case TypeId::kString:
      case TypeId::kLargeString:
      case TypeId::kFixedSizeBinary: {
        const auto bytes = view.GetBinary(i);
        if (!bytes.empty()) sum += bytes.front() + bytes.back();
        break;
      }
      case TypeId::kList:
      case TypeId::kLargeList:
      case TypeId::kFixedSizeList: {
        const auto [begin, end] = view.GetListRange(i);
        if (begin < 0 || begin > end || end > view.children[0].length) __builtin_trap();
        sum += static_cast<uint64_t>(end - begin);
        break;
      }
      default:
        sum += view.GetUInt64(i);
        break;
    }
  }
  for (const ArrayView& child : view.children) sum += Touch(child);
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto reader = StreamReader::Open(std::span<const uint8_t>(data, size), "fuzz.arrow");
  if (!reader.ok()) return 0;
  std::vector<uint64_t> offsets;
  volatile uint64_t sink = 0;
  for (int batches = 0; batches < 1000; ++batches) {
    RecordBatch batch;
    auto more = reader->Next(&batch);
    if (!more.ok() || !*more) break;
    for (const ArrayView& column : batch.columns) sink = sink + Touch(column);
    offsets.push_back(batch.message_offset);
  }
  for (uint64_t offset : offsets) {
    auto again = reader->ReadBatchAt(offset);
    if (!again.ok()) __builtin_trap();  // it read fine a moment ago
  }
  return 0;
}
