// TouchAllValues: reads every value of an ArrayView (and its children) through the typed
// accessors, so that a reader bug shows up as a sanitizer report. Shared by the Arrow corruption
// tests and tests/fuzz/arrow_stream_fuzz.cc; header-only and free of GoogleTest for the fuzzer's
// sake.
#ifndef DOCFEED_TESTS_FORMAT_ARROW_TOUCH_VALUES_H_
#define DOCFEED_TESTS_FORMAT_ARROW_TOUCH_VALUES_H_

#include <bit>
#include <cstdint>
#include <cstdlib>

#include "format/arrow/reader.h"

namespace docfeed::internal::arrow::testing {

// Returns a value derived from every byte read, so the reads cannot be optimised away. Aborts if
// a list range escapes its child (the reader promised it cannot).
inline uint64_t TouchAllValues(const ArrayView& view) {
  uint64_t sum = 0;
  for (int64_t i = 0; i < view.length; ++i) {
    // Null slots too: their offsets are validated like any other.
    sum += view.IsValid(i) ? 1 : 0;
    switch (view.type()) {
      case TypeId::kNull:
        break;
      case TypeId::kBool:
        sum += view.GetBool(i) ? 1 : 0;
        break;
      case TypeId::kFloat16:
      case TypeId::kFloat32:
      case TypeId::kFloat64:
        sum += std::bit_cast<uint64_t>(view.GetDouble(i));
        break;
      case TypeId::kBinary:
      case TypeId::kLargeBinary:
      case TypeId::kFixedSizeBinary:
      case TypeId::kString:
      case TypeId::kLargeString:
        for (uint8_t b : view.GetBinary(i)) sum += b;
        break;
      case TypeId::kList:
      case TypeId::kLargeList:
      case TypeId::kFixedSizeList: {
        const auto [begin, end] = view.GetListRange(i);
        if (begin < 0 || begin > end || end > view.children[0].length) std::abort();
        sum += static_cast<uint64_t>(end - begin);
        break;
      }
      case TypeId::kStruct:
        break;
      default:
        sum += view.GetUInt64(i);
        break;
    }
  }
  for (const ArrayView& child : view.children) sum += TouchAllValues(child);
  return sum;
}

}  // namespace docfeed::internal::arrow::testing

#endif  // DOCFEED_TESTS_FORMAT_ARROW_TOUCH_VALUES_H_
