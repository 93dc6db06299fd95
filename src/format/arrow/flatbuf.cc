#include "format/arrow/flatbuf.h"

#include <algorithm>
#include <string>

#include "base/check.h"

namespace docfeed::internal::arrow::flatbuf {
namespace {

constexpr size_t kUOffsetSize = 4;

Status OutOfBounds(std::string_view what, size_t pos, size_t buffer_size) {
  return CorruptionError("flatbuffer " + std::string(what) + " at byte " + std::to_string(pos) +
                         " is outside the " + std::to_string(buffer_size) + "-byte metadata");
}

// Follows the uoffset stored at `pos`; the target must leave room for a 4-byte header.
Result<size_t> Follow(std::span<const uint8_t> buf, size_t pos) {
  if (pos > buf.size() || buf.size() - pos < kUOffsetSize) {
    return OutOfBounds("offset", pos, buf.size());
  }
  const size_t target = pos + LoadLE<uint32_t>(buf, pos);
  if (target > buf.size() || buf.size() - target < kUOffsetSize) {
    return OutOfBounds("offset target", target, buf.size());
  }
  return target;
}

// The vector whose length prefix is at `pos`.
Result<std::pair<size_t, size_t>> VectorAt(std::span<const uint8_t> buf, size_t pos,
                                           size_t element_size) {
  const size_t count = LoadLE<uint32_t>(buf, pos);  // Follow() guaranteed 4 bytes
  const size_t data_pos = pos + kUOffsetSize;
  if (count > (buf.size() - data_pos) / element_size) {
    return CorruptionError("flatbuffer vector at byte " + std::to_string(pos) + " declares " +
                           std::to_string(count) + " elements of " + std::to_string(element_size) +
                           " bytes, beyond the " + std::to_string(buf.size()) + "-byte metadata");
  }
  return std::make_pair(data_pos, count);
}

Result<std::string_view> StringAtPos(std::span<const uint8_t> buf, size_t pos) {
  DOCFEED_ASSIGN_OR_RETURN(auto vec, VectorAt(buf, pos, 1));
  return std::string_view(reinterpret_cast<const char*>(buf.data() + vec.first), vec.second);
}

}  // namespace

Result<Table> Vector::TableAt(size_t i) const {
  DOCFEED_ASSIGN_OR_RETURN(size_t target, Follow(buf_, data_pos_ + i * element_size_));
  return Table::At(buf_, target);
}

Result<std::string_view> Vector::StringAt(size_t i) const {
  DOCFEED_ASSIGN_OR_RETURN(size_t target, Follow(buf_, data_pos_ + i * element_size_));
  return StringAtPos(buf_, target);
}

Result<Table> Table::Root(std::span<const uint8_t> buffer) {
  DOCFEED_ASSIGN_OR_RETURN(size_t pos, Follow(buffer, 0));
  return At(buffer, pos);
}

Result<Table> Table::At(std::span<const uint8_t> buffer, size_t pos) {
  if (pos > buffer.size() || buffer.size() - pos < sizeof(int32_t)) {
    return OutOfBounds("table", pos, buffer.size());
  }
  const int64_t vtable_pos =
      static_cast<int64_t>(pos) - static_cast<int64_t>(LoadLE<int32_t>(buffer, pos));
  if (vtable_pos < 0 || static_cast<uint64_t>(vtable_pos) > buffer.size() - 4) {
    return OutOfBounds("vtable", static_cast<size_t>(std::max<int64_t>(vtable_pos, 0)),
                       buffer.size());
  }
  const auto vpos = static_cast<size_t>(vtable_pos);
  const uint16_t vtable_size = LoadLE<uint16_t>(buffer, vpos);
  const uint16_t table_size = LoadLE<uint16_t>(buffer, vpos + 2);
  if (vtable_size < 4 || vtable_size % 2 != 0 || vtable_size > buffer.size() - vpos) {
    return CorruptionError("flatbuffer vtable at byte " + std::to_string(vpos) +
                           " has invalid size " + std::to_string(vtable_size));
  }
  if (table_size < sizeof(int32_t) || table_size > buffer.size() - pos) {
    return CorruptionError("flatbuffer table at byte " + std::to_string(pos) +
                           " has invalid inline size " + std::to_string(table_size));
  }
  return Table(buffer, pos, vpos, vtable_size, table_size);
}

uint16_t Table::FieldOffset(int slot) const {
  const size_t entry = 4 + 2 * static_cast<size_t>(slot);
  if (slot < 0 || entry + 2 > vtable_size_) return 0;
  return LoadLE<uint16_t>(buf_, vtable_pos_ + entry);
}

Result<std::optional<size_t>> Table::FieldPosition(int slot, size_t size) const {
  const uint16_t offset = FieldOffset(slot);
  if (offset == 0) return std::optional<size_t>();
  if (offset < sizeof(int32_t) || size > table_size_ || offset > table_size_ - size) {
    return CorruptionError("flatbuffer field " + std::to_string(slot) + " of the table at byte " +
                           std::to_string(pos_) + " lies outside the table");
  }
  return std::optional<size_t>(pos_ + offset);
}

Result<std::optional<size_t>> Table::FollowOffset(int slot) const {
  DOCFEED_ASSIGN_OR_RETURN(std::optional<size_t> pos, FieldPosition(slot, kUOffsetSize));
  if (!pos.has_value()) return pos;
  DOCFEED_ASSIGN_OR_RETURN(size_t target, Follow(buf_, *pos));
  return std::optional<size_t>(target);
}

Result<std::optional<Table>> Table::GetTable(int slot) const {
  DOCFEED_ASSIGN_OR_RETURN(std::optional<size_t> target, FollowOffset(slot));
  if (!target.has_value()) return std::optional<Table>();
  DOCFEED_ASSIGN_OR_RETURN(Table table, At(buf_, *target));
  return std::optional<Table>(table);
}

Result<std::optional<std::string_view>> Table::GetString(int slot) const {
  DOCFEED_ASSIGN_OR_RETURN(std::optional<size_t> target, FollowOffset(slot));
  if (!target.has_value()) return std::optional<std::string_view>();
  DOCFEED_ASSIGN_OR_RETURN(std::string_view text, StringAtPos(buf_, *target));
  return std::optional<std::string_view>(text);
}

Result<Vector> Table::GetVector(int slot, size_t element_size) const {
  DOCFEED_CHECK(element_size > 0);
  DOCFEED_ASSIGN_OR_RETURN(std::optional<size_t> target, FollowOffset(slot));
  if (!target.has_value()) return Vector();
  DOCFEED_ASSIGN_OR_RETURN(auto vec, VectorAt(buf_, *target, element_size));
  return Vector(buf_, vec.first, vec.second, element_size);
}

// ---------------------------------------------------------------------------------------------
// Builder

void Builder::Prepend(const void* data, size_t size_bytes) {
  if (buf_.size() - size_ < size_bytes) {
    // Grow by copying the used tail into the end of a larger buffer.
    const size_t new_capacity = std::max<size_t>(2 * buf_.size(), size_ + size_bytes + 256);
    std::vector<uint8_t> grown(new_capacity);
    std::copy(buf_.end() - static_cast<std::ptrdiff_t>(size_), buf_.end(),
              grown.end() - static_cast<std::ptrdiff_t>(size_));
    buf_ = std::move(grown);
  }
  size_ += size_bytes;
  if (size_bytes > 0) std::memcpy(buf_.data() + (buf_.size() - size_), data, size_bytes);
}

void Builder::PrependZeros(size_t count) {
  static constexpr uint8_t kZeros[8] = {};
  while (count > 0) {
    const size_t n = std::min<size_t>(count, sizeof(kZeros));
    Prepend(kZeros, n);
    count -= n;
  }
}

void Builder::Align(size_t alignment, size_t size_bytes) {
  // The final buffer size is padded to a multiple of 8 in Finish(), so alignment measured from
  // the end of the buffer equals alignment from its start.
  PrependZeros((alignment - (size_ + size_bytes) % alignment) % alignment);
}

Builder::Ref Builder::CreateString(std::string_view text) {
  DOCFEED_CHECK(!table_open_);
  Align(4, text.size() + 1);
  PrependZeros(1);  // the NUL terminator the format requires
  Prepend(text.data(), text.size());
  const auto length = static_cast<uint32_t>(text.size());
  Prepend(&length, sizeof(length));
  return size();
}

Builder::Ref Builder::CreateStructVector(std::span<const uint8_t> bytes, size_t count) {
  DOCFEED_CHECK(!table_open_);
  DOCFEED_CHECK(bytes.size() % 8 == 0 && (count == 0 || bytes.size() / count % 8 == 0));
  Align(8, bytes.size());
  Prepend(bytes.data(), bytes.size());
  const auto length = static_cast<uint32_t>(count);
  Prepend(&length, sizeof(length));
  return size();
}

Builder::Ref Builder::CreateRefVector(std::span<const Ref> refs) {
  DOCFEED_CHECK(!table_open_);
  Align(4);
  for (size_t i = refs.size(); i-- > 0;) {
    // The uoffset is relative to its own position, which is size() + 4 from the end.
    const uint32_t offset = size() + 4 - refs[i];
    Prepend(&offset, sizeof(offset));
  }
  const auto length = static_cast<uint32_t>(refs.size());
  Prepend(&length, sizeof(length));
  return size();
}

void Builder::StartTable() {
  DOCFEED_CHECK(!table_open_);
  table_open_ = true;
  table_start_ = size_;
  fields_.clear();
}

void Builder::RecordField(int slot) {
  DOCFEED_CHECK(table_open_ && slot >= 0);
  fields_.emplace_back(slot, size());
}

void Builder::AddRef(int slot, Ref ref) {
  Align(4);
  const uint32_t offset = size() + 4 - ref;
  Prepend(&offset, sizeof(offset));
  RecordField(slot);
}

Builder::Ref Builder::EndTable() {
  DOCFEED_CHECK(table_open_);
  Align(4);
  const int32_t placeholder = 0;
  Prepend(&placeholder, sizeof(placeholder));
  const uint32_t table_ref = size();
  int max_slot = -1;
  for (const auto& [slot, ref] : fields_) max_slot = std::max(max_slot, slot);
  std::vector<uint16_t> vtable(static_cast<size_t>(max_slot + 1) + 2, 0);
  vtable[0] = static_cast<uint16_t>(vtable.size() * 2);
  vtable[1] = static_cast<uint16_t>(table_ref - table_start_);
  for (const auto& [slot, ref] : fields_) {
    vtable[static_cast<size_t>(slot) + 2] = static_cast<uint16_t>(table_ref - ref);
  }
  Prepend(vtable.data(), vtable.size() * 2);
  // The vtable sits right before the table: soffset = table position - vtable position.
  const auto soffset = static_cast<int32_t>(size() - table_ref);
  std::memcpy(buf_.data() + (buf_.size() - table_ref), &soffset, sizeof(soffset));
  table_open_ = false;
  return table_ref;
}

std::vector<uint8_t> Builder::Finish(Ref root) {
  DOCFEED_CHECK(!table_open_);
  Align(8, 4);
  const uint32_t offset = size() + 4 - root;
  Prepend(&offset, sizeof(offset));
  return std::vector<uint8_t>(buf_.end() - static_cast<std::ptrdiff_t>(size_), buf_.end());
}

}  // namespace docfeed::internal::arrow::flatbuf
