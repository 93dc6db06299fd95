// Test tool: rewrites a Parquet file as an Arrow IPC stream, one record batch per row group, with
// docfeed's Parquet reader (src/format/parquet) and Arrow writer. tests/python/
// test_parquet_reader.py compares what it writes with pyarrow.parquet's reading of the same file.
//
//   parquet_to_arrow IN.parquet OUT.arrow
//
// Exit 0 on success; 1 with the error on stderr (its first line "code: message").
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/env.h"
#include "format/arrow/writer.h"
#include "format/parquet/reader.h"

using docfeed::Status;
namespace arrow = docfeed::internal::arrow;
namespace parquet = docfeed::internal::parquet;

namespace {

Status Run(const std::string& in, const std::string& out) {
  docfeed::Env* env = docfeed::Env::Default();
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<docfeed::RandomAccessFile> file,
                           env->NewRandomAccessFile(in));
  DOCFEED_ASSIGN_OR_RETURN(parquet::FileReader reader,
                           parquet::FileReader::Open(std::move(file), in));
  DOCFEED_ASSIGN_OR_RETURN(arrow::StreamWriter writer,
                           arrow::StreamWriter::Create(out, reader.schema()));
  std::vector<size_t> all(reader.schema().fields.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  for (int g = 0; g < reader.num_row_groups(); ++g) {
    parquet::RowGroupBatch batch;
    DOCFEED_RETURN_IF_ERROR(reader.ReadRowGroup(g, all, &batch));
    DOCFEED_RETURN_IF_ERROR(writer.WriteBatch(batch.builders).status());
  }
  return writer.Close();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: parquet_to_arrow IN.parquet OUT.arrow\n");
    return 2;
  }
  const Status s = Run(argv[1], argv[2]);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
