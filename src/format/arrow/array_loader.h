// Turns one record batch message (decoded metadata + body bytes) into validated ArrayViews.
//
// Walks the schema's fields in pre-order, taking one FieldNode per array and BufferCount(type)
// body buffers per array, exactly as the Arrow IPC format lays them out ("Record Batch
// serialization": nodes and buffers are the flattened, depth-first field tree). Every buffer
// range, length, null count and offset buffer is checked here, once, so ArrayView accessors can
// index without checks. Internal to src/format/arrow.
#ifndef DOCFEED_FORMAT_ARROW_ARRAY_LOADER_H_
#define DOCFEED_FORMAT_ARROW_ARRAY_LOADER_H_

#include <cstdint>
#include <span>

#include "docfeed/status.h"
#include "format/arrow/ipc_metadata.h"
#include "format/arrow/reader.h"

namespace docfeed::internal::arrow {

// Largest total of decompressed bytes one batch may declare: the larger of this and
// kMaxCompressionRatio times its compressed body.
inline constexpr int64_t kMinDecompressBudgetBytes = int64_t{64} << 20;  // 64 MiB

// Fills batch->columns (and batch->owned_buffers when compressed) from `meta` and `body`,
// decompressing into the owned buffers *batch already has before adding any (see
// StreamReader::ReadBatchAt(offset, batch)).
// REQUIRES: batch->schema is set. Corruption naming the column for any inconsistency, including
// node or buffer counts that differ from what the schema requires.
Status LoadRecordBatch(const RecordBatchMeta& meta, std::span<const uint8_t> body,
                       RecordBatch* batch);

}  // namespace docfeed::internal::arrow

#endif  // DOCFEED_FORMAT_ARROW_ARRAY_LOADER_H_
