// libFuzzer target for the Parquet reader (src/format/parquet): the input is one Parquet file held
// in a MemEnv. Opening it must give a Status or a reader; then every row group (up to 64) is read
// whole, each a Status or a batch whose columns have the row group's rows, and every cell of
// every column is encoded (format/arrow_cell.h), which walks every offset, validity bit and
// child the views claim. Limits are lowered so that a hostile size costs little memory. Any
// crash, sanitizer report, hang or abort is a bug.
//
// Build and run: tests/fuzz/run_format_fuzz.sh [seconds]
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "base/mem_env.h"
#include "format/arrow_cell.h"
#include "format/parquet/reader.h"

namespace parquet = docfeed::internal::parquet;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  docfeed::internal::MemEnv env;
  if (!env.WriteFile("/f.parquet", std::vector<uint8_t>(data, data + size)).ok()) std::abort();
  auto file = env.NewRandomAccessFile("/f.parquet");
  if (!file.ok()) std::abort();
  parquet::ChunkLimits limits;
  limits.max_chunk_bytes = int64_t{16} << 20;
  limits.max_levels = int64_t{1} << 18;
  auto reader = parquet::FileReader::Open(std::move(file).value(), "/f.parquet", limits);
  if (!reader.ok()) return 0;
  std::vector<size_t> all(reader->schema().fields.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  for (int g = 0; g < reader->num_row_groups() && g < 64; ++g) {
    if (reader->row_group_rows(g) > (int64_t{1} << 18)) continue;
    parquet::RowGroupBatch batch;
    if (!reader->ReadRowGroup(g, all, &batch).ok()) continue;
    if (batch.columns.size() != all.size()) std::abort();
    for (const auto& column : batch.columns) {
      if (column.length != reader->row_group_rows(g)) std::abort();
      for (int64_t row = 0; row < column.length; ++row) {
        if (column.IsValid(row)) (void)docfeed::internal::EncodeCell(column, row);
      }
    }
  }
  return 0;
}
