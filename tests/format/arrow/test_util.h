// Helpers shared by the Arrow IPC tests: test-data paths, reading a whole stream, and rendering
// values as JSON in the encoding tests/data/arrow/make_pyarrow_cases.py uses.
#ifndef DOCFEED_TESTS_FORMAT_ARROW_TEST_UTIL_H_
#define DOCFEED_TESTS_FORMAT_ARROW_TEST_UTIL_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "docfeed/status.h"
#include "format/arrow/builder.h"
#include "format/arrow/reader.h"
#include "touch_values.h"

namespace docfeed::internal::arrow::testing {

// Streams under tests/data/arrow/ covering every type the reader supports: real `datasets` files
// and pyarrow-written cases (nulls at every level, large and fixed-size types, compressed bodies,
// the legacy framing).
inline constexpr const char* kStreamCases[] = {
    "huggingface-lerobot/pusht_image/train/data-00000-of-00001.arrow",
    "huggingface-lerobot/pusht/train/data-00000-of-00001.arrow",
    "stochasticai-xTuring/tiny_text_dataset/data-00000-of-00001.arrow",
    "SylphAI-Inc-AdalFlow/data/train/data-00000-of-00001.arrow",
    "huggingface-datasets/cache-071f8664cd4c4be34f5ad90bd847cbc8.arrow",
    "pyarrow_cases/mixed_uncompressed.arrow",
    "pyarrow_cases/mixed_zstd.arrow",
    "pyarrow_cases/mixed_legacy_v4.arrow",
    "pyarrow_cases/large_types.arrow",
};

// Path of a file under tests/data/arrow/.
std::string ArrowDataPath(std::string_view relative);

// A fresh, empty directory for this test's output files.
std::string MakeTempDir(std::string_view name);

struct StreamContents {
  Schema schema;
  std::vector<RecordBatch> batches;
};

// Opens `bytes` and reads every batch. REQUIRES: `bytes` outlives the result.
Result<StreamContents> ReadStream(std::span<const uint8_t> bytes, const std::string& name);

// Slot i of `view` (null -> null, binary -> lowercase hex, string -> string, list -> array,
// struct -> object, dates/timestamps -> integer).
nlohmann::json ValueToJson(const ArrayView& view, int64_t i);
nlohmann::json ColumnToJson(const ArrayView& view);

// Appends slot i of `view` to `builder` (recursively for lists and structs).
// REQUIRES: builder->field() has the same type as *view.field.
Status CopyValue(const ArrayView& view, int64_t i, ArrayBuilder* builder);

// Reads every value of the array through the typed accessors (exercises the validated bounds).

}  // namespace docfeed::internal::arrow::testing

#endif  // DOCFEED_TESTS_FORMAT_ARROW_TEST_UTIL_H_
