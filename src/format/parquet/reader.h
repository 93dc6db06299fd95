// Reads Parquet files (https://parquet.apache.org/docs/file-format/) as Arrow record batches,
// one per row group, in docfeed's Arrow model (format/arrow/schema.h): what `docfeed pack` needs
// to take the Parquet files of the Hugging Face Hub and of `Dataset.to_parquet` as input.
//
// The Arrow schema is the one pyarrow stores in the file ("ARROW:schema": base64 of an Arrow IPC
// schema message, with the Hugging Face features under "huggingface" in its metadata), checked
// against the Parquet schema; without it, it is derived from the Parquet schema (logical and
// converted types, 3-level and legacy 2-level lists, structs). Records are assembled from the
// definition and repetition levels ("Dremel" assembly: Melnik et al., "Dremel: Interactive
// Analysis of Web-Scale Datasets", VLDB 2010, section 4.2; the Parquet format's
// "Nested Encoding"), into ArrayBuilders, so nulls, empty lists and nested structs come out as
// pyarrow reads them.
//
// Not read: encrypted files, MAP columns, DECIMAL, TIME and INTERVAL values, and the encodings and
// codecs column_chunk.h lists (Unsupported naming the column). Chunk sizes are capped
// (ChunkLimits): a whole column chunk of a row group is held in memory while it is decoded.
//
// Trust model: the file may be hostile. The footer, every page and every level are validated
// (column_chunk.h); record assembly checks every cursor against its chunk; errors are
// Corruption or Unsupported prefixed with the file's name and naming the row group and column.
//
// Thread safety: after Open, ReadRowGroup is const and may run concurrently (positioned reads).
#ifndef DOCFEED_FORMAT_PARQUET_READER_H_
#define DOCFEED_FORMAT_PARQUET_READER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/env.h"
#include "docfeed/status.h"
#include "format/arrow/builder.h"
#include "format/arrow/reader.h"
#include "format/arrow/schema.h"
#include "format/parquet/column_chunk.h"
#include "format/parquet/metadata.h"

namespace docfeed::internal::parquet {

// The columns of one row group. The views point into `builders` (heap buffers, which a move
// keeps in place) and `schema`: valid as long as the batch, moved or not; copying is disabled.
struct RowGroupBatch {
  RowGroupBatch() = default;
  RowGroupBatch(RowGroupBatch&&) = default;
  RowGroupBatch& operator=(RowGroupBatch&&) = default;
  RowGroupBatch(const RowGroupBatch&) = delete;
  RowGroupBatch& operator=(const RowGroupBatch&) = delete;

  int64_t num_rows = 0;
  std::vector<size_t> fields;             // schema field index of each column below
  std::vector<arrow::ArrayView> columns;  // validated as the Arrow reader's are
  std::vector<arrow::ArrayBuilder> builders;
  std::shared_ptr<const arrow::Schema> schema;
};

// True when the file starts with Parquet's magic "PAR1" (content, not the name, decides).
bool HasParquetMagic(std::span<const uint8_t> first_bytes);

class FileReader {
 public:
  // Reads the footer of `file` and maps its schema. `name` (the file's path) prefixes errors.
  static Result<FileReader> Open(std::unique_ptr<RandomAccessFile> file, std::string name,
                                 ChunkLimits limits = {});
  FileReader(FileReader&&) noexcept;
  FileReader& operator=(FileReader&&) noexcept;
  ~FileReader();

  const arrow::Schema& schema() const { return *schema_; }
  const std::shared_ptr<const arrow::Schema>& shared_schema() const { return schema_; }
  const FileMetaData& metadata() const { return meta_; }
  const std::string& name() const { return name_; }
  int num_row_groups() const { return static_cast<int>(meta_.row_groups.size()); }
  int64_t num_rows() const { return meta_.num_rows; }
  int64_t row_group_rows(int group) const {
    return meta_.row_groups[static_cast<size_t>(group)].num_rows;
  }

  // Decodes the top-level columns `fields` (schema indices, any order) of row group `group`.
  // REQUIRES: 0 <= group < num_row_groups(), each index < schema().fields.size().
  Status ReadRowGroup(int group, std::span<const size_t> fields, RowGroupBatch* out) const;

  struct Shape;  // how one field is assembled from its leaf columns (reader.cc)

 private:
  FileReader();

  std::unique_ptr<RandomAccessFile> file_;
  std::string name_;
  ChunkLimits limits_;
  FileMetaData meta_;
  uint64_t data_end_ = 0;  // where the footer starts
  std::shared_ptr<const arrow::Schema> schema_;
  std::vector<LeafDescriptor> leaves_;          // per leaf column, in row group column order
  std::vector<std::unique_ptr<Shape>> shapes_;  // per top-level field
};

}  // namespace docfeed::internal::parquet

#endif  // DOCFEED_FORMAT_PARQUET_READER_H_
