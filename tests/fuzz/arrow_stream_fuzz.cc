// libFuzzer target for the Arrow IPC stream reader (src/format/arrow/reader.h): opens the input
// as a stream, reads every batch, touches every value through the typed accessors and re-reads
// each batch with ReadBatchAt. Every valid cell of the first batches also goes through the cell
// encoding of "arrow" columns (src/format/arrow_cell.h), which pack and verify apply to whatever
// a source dataset holds: it must append back into a builder of the column's type, and the
// rebuilt column must be consistent. Any crash, sanitizer report or abort is a bug: corrupt input
// must only ever produce a Status.
//
// Build and run: tests/fuzz/run_arrow_fuzz.sh [seconds]
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "format/arrow/builder.h"
#include "format/arrow/reader.h"
#include "format/arrow/touch_values.h"  // tests/, shared with the corruption tests
#include "format/arrow_cell.h"

namespace {

using docfeed::internal::arrow::ArrayBuilder;
using docfeed::internal::arrow::ArrayView;
using docfeed::internal::arrow::RecordBatch;
using docfeed::internal::arrow::StreamReader;

// Encodes every valid cell of `column` (at most `budget` of them) and appends it to a builder.
void RoundTripCells(const ArrayView& column, int64_t* budget) {
  ArrayBuilder builder(*column.field);
  for (int64_t row = 0; row<column.length&& * budget> 0; ++row, --*budget) {
    if (column.IsNull(row)) {
      if (!builder.AppendNull().ok()) __builtin_trap();
      continue;
    }
    const std::string encoded = docfeed::internal::EncodeCell(column, row);
    if (!docfeed::internal::AppendEncodedCell(builder, encoded).ok()) __builtin_trap();
  }
  if (!builder.CheckConsistent().ok()) __builtin_trap();
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
    for (const ArrayView& column : batch.columns)
      sink = sink + docfeed::internal::arrow::testing::TouchAllValues(column);
    int64_t cells = 4096;  // bounds the time per input
    for (const ArrayView& column : batch.columns) RoundTripCells(column, &cells);
    offsets.push_back(batch.message_offset);
  }
  for (uint64_t offset : offsets) {
    auto again = reader->ReadBatchAt(offset);
    if (!again.ok()) __builtin_trap();  // it read fine a moment ago
  }
  return 0;
}
