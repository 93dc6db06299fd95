// Test helper: one saved tensor as one row of a `datasets` pixel_values column.
#ifndef DOCFEED_TESTS_MIGRATE_TENSOR_COLUMN_H_
#define DOCFEED_TESTS_MIGRATE_TENSOR_COLUMN_H_

#include <vector>

#include "format/arrow/builder.h"

namespace docfeed::internal::migrate {

// Appends the 3 x h x w float32 tensor `t` (C x H x W order) to `column`, a
// list<list<list<float>>> builder, as one row: the layout `datasets` stores an array feature of
// that shape in. Returns the first failing append's status.
inline Status AppendChwTensor(arrow::ArrayBuilder& column, const std::vector<float>& t, int h,
                              int w) {
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        DOCFEED_RETURN_IF_ERROR(
            column.child(0).child(0).child(0).AppendDouble(t[(c * h + y) * w + x]));
      }
      DOCFEED_RETURN_IF_ERROR(column.child(0).child(0).FinishList());
    }
    DOCFEED_RETURN_IF_ERROR(column.child(0).FinishList());
  }
  return column.FinishList();
}

}  // namespace docfeed::internal::migrate

#endif  // DOCFEED_TESTS_MIGRATE_TENSOR_COLUMN_H_
