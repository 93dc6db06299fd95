#include "format/arrow_cell.h"

#include <bit>
#include <cstdint>
#include <cstring>

#include "base/check.h"

namespace docfeed::internal {
namespace {

using arrow::ArrayView;
using arrow::Field;
using arrow::TimeUnit;
using arrow::TypeId;

static_assert(std::endian::native == std::endian::little, "docfeed assumes a little-endian host");

void PutU64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }

void EncodeValue(const ArrayView& a, int64_t row, std::string& out);

void EncodeChild(const ArrayView& a, int64_t row, std::string& out) {
  if (a.type() == TypeId::kNull || a.IsNull(row)) {
    out.push_back('\0');
    return;
  }
  out.push_back('\1');
  EncodeValue(a, row, out);
}

void EncodeValue(const ArrayView& a, int64_t row, std::string& out) {
  const TypeId type = a.type();
  if (type == TypeId::kBool) {
    out.push_back(a.GetBool(row) ? '\1' : '\0');
  } else if (arrow::IsBinaryLike(type) || type == TypeId::kFixedSizeBinary) {
    const std::span<const uint8_t> bytes = a.GetBinary(row);
    PutU64(out, bytes.size());
    out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  } else if (arrow::IsListLike(type)) {
    const auto [first, last] = a.GetListRange(row);
    PutU64(out, static_cast<uint64_t>(last - first));
    for (int64_t i = first; i < last; ++i) EncodeChild(a.children[0], i, out);
  } else if (type == TypeId::kStruct) {
    for (const ArrayView& child : a.children) EncodeChild(child, row, out);
  } else {
    const auto width = static_cast<size_t>(arrow::FixedWidthBytes(*a.field));
    DOCFEED_CHECK(width > 0);
    out.append(reinterpret_cast<const char*>(a.values.data()) + static_cast<size_t>(row) * width,
               width);
  }
}

// Reads an encoding front to back, refusing to run past its end.
class Cursor {
 public:
  explicit Cursor(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return pos_ == bytes_.size(); }

  Result<std::span<const uint8_t>> Take(uint64_t n) {
    if (n > bytes_.size() - pos_) return CorruptionError("cell encoding ends early");
    std::span<const uint8_t> out(reinterpret_cast<const uint8_t*>(bytes_.data()) + pos_,
                                 static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return out;
  }
  Result<uint64_t> U64() {
    DOCFEED_ASSIGN_OR_RETURN(std::span<const uint8_t> b, Take(8));
    uint64_t v;
    std::memcpy(&v, b.data(), 8);
    return v;
  }
  Result<uint8_t> U8() {
    DOCFEED_ASSIGN_OR_RETURN(std::span<const uint8_t> b, Take(1));
    return b[0];
  }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

Status AppendValue(arrow::ArrayBuilder& b, Cursor& in);

Status AppendChild(arrow::ArrayBuilder& b, Cursor& in) {
  DOCFEED_ASSIGN_OR_RETURN(uint8_t flag, in.U8());
  if (flag == 0) return b.AppendNull();
  if (flag != 1 || b.field().type == TypeId::kNull) {
    return CorruptionError("cell encoding has a bad null flag");
  }
  return AppendValue(b, in);
}

Status AppendValue(arrow::ArrayBuilder& b, Cursor& in) {
  const Field& f = b.field();
  if (f.type == TypeId::kBool) {
    DOCFEED_ASSIGN_OR_RETURN(uint8_t v, in.U8());
    if (v > 1) return CorruptionError("cell encoding has a bool that is not 0 or 1");
    return b.AppendBool(v == 1);
  }
  if (arrow::IsBinaryLike(f.type) || f.type == TypeId::kFixedSizeBinary) {
    DOCFEED_ASSIGN_OR_RETURN(uint64_t n, in.U64());
    DOCFEED_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, in.Take(n));
    return b.AppendBinary(bytes);
  }
  if (arrow::IsListLike(f.type)) {
    DOCFEED_ASSIGN_OR_RETURN(uint64_t n, in.U64());
    for (uint64_t i = 0; i < n; ++i) DOCFEED_RETURN_IF_ERROR(AppendChild(b.child(0), in));
    return b.FinishList();
  }
  if (f.type == TypeId::kStruct) {
    for (size_t i = 0; i < b.num_children(); ++i) {
      DOCFEED_RETURN_IF_ERROR(AppendChild(b.child(i), in));
    }
    return b.AppendStruct();
  }
  if (f.type == TypeId::kNull) return CorruptionError("cell encoding has a value of type null");
  DOCFEED_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes,
                           in.Take(static_cast<uint64_t>(arrow::FixedWidthBytes(f))));
  return b.AppendFixedWidth(bytes);
}

}  // namespace

std::string EncodeCell(const ArrayView& array, int64_t row) {
  DOCFEED_CHECK(array.IsValid(row));
  std::string out;
  EncodeValue(array, row, out);
  return out;
}

Status AppendEncodedCell(arrow::ArrayBuilder& builder, std::string_view encoded) {
  Cursor in(encoded);
  DOCFEED_RETURN_IF_ERROR(AppendValue(builder, in));
  if (!in.done()) return CorruptionError("cell encoding has bytes after the value");
  return Status::Ok();
}

}  // namespace docfeed::internal
