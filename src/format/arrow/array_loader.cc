#include "format/arrow/array_loader.h"

#include <bit>
#include <string>

#include "format/arrow/compression.h"

namespace docfeed::internal::arrow {
namespace {

// ceil(length / 8) without overflow. REQUIRES: length >= 0.
int64_t BitmapBytes(int64_t length) { return length / 8 + (length % 8 != 0 ? 1 : 0); }

int64_t CountZeroBits(std::span<const uint8_t> bitmap, int64_t length) {
  int64_t ones = 0;
  const int64_t full_bytes = length / 8;
  for (int64_t i = 0; i < full_bytes; ++i) ones += std::popcount(bitmap[static_cast<size_t>(i)]);
  if (length % 8 != 0) {
    const auto mask = static_cast<uint8_t>((1u << (length % 8)) - 1);
    ones += std::popcount(static_cast<uint8_t>(bitmap[static_cast<size_t>(full_bytes)] & mask));
  }
  return length - ones;
}

template <typename Offset>
Status CheckOffsets(std::span<const uint8_t> offsets, int64_t length, int64_t limit) {
  Offset previous = flatbuf::LoadLE<Offset>(offsets, 0);
  if (previous < 0) return CorruptionError("first offset " + std::to_string(previous) + " < 0");
  for (int64_t i = 1; i <= length; ++i) {
    const Offset current =
        flatbuf::LoadLE<Offset>(offsets, static_cast<size_t>(i) * sizeof(Offset));
    if (current < previous) {
      return CorruptionError("offsets decrease at slot " + std::to_string(i - 1) + " (" +
                             std::to_string(previous) + " > " + std::to_string(current) + ")");
    }
    previous = current;
  }
  if (static_cast<int64_t>(previous) > limit) {
    return CorruptionError("last offset " + std::to_string(previous) + " exceeds the " +
                           std::to_string(limit) + " available values");
  }
  return Status::Ok();
}

class Loader {
 public:
  Loader(const RecordBatchMeta& meta, std::span<const uint8_t> body, RecordBatch* batch)
      : meta_(meta), body_(body), batch_(batch) {
    const int64_t ratio_budget =
        static_cast<int64_t>(body.size()) > INT64_MAX / kMaxCompressionRatio
            ? INT64_MAX
            : static_cast<int64_t>(body.size()) * kMaxCompressionRatio;
    decompress_budget_ = std::max(kMinDecompressBudgetBytes, ratio_budget);
  }

  Status LoadColumns() {
    const Schema& schema = *batch_->schema;
    batch_->columns.resize(schema.fields.size());
    for (size_t i = 0; i < schema.fields.size(); ++i) {
      const Field& field = schema.fields[i];
      DOCFEED_RETURN_IF_ERROR(LoadArray(field, field.name, &batch_->columns[i]));
      if (batch_->columns[i].length != meta_.length) {
        return CorruptionError("column '" + field.name + "' has " +
                               std::to_string(batch_->columns[i].length) + " rows, the batch has " +
                               std::to_string(meta_.length));
      }
    }
    if (node_index_ != meta_.nodes.size() || buffer_index_ != meta_.buffers.size()) {
      return CorruptionError("batch has " + std::to_string(meta_.nodes.size()) +
                             " field nodes and " + std::to_string(meta_.buffers.size()) +
                             " buffers, the schema needs " + std::to_string(node_index_) + " and " +
                             std::to_string(buffer_index_));
    }
    return Status::Ok();
  }

 private:
  Status LoadArray(const Field& field, const std::string& path, ArrayView* out);
  Status LoadBuffers(const Field& field, ArrayView* out);
  Status LoadChildren(const Field& field, const std::string& path, ArrayView* out);
  Status Validate(ArrayView* out) const;
  Status ValidateValues(const ArrayView& view) const;
  Status ValidateNested(const ArrayView& view) const;
  Result<std::span<const uint8_t>> NextBuffer();

  const RecordBatchMeta& meta_;
  std::span<const uint8_t> body_;
  RecordBatch* batch_;
  size_t node_index_ = 0;
  size_t buffer_index_ = 0;
  int64_t decompress_budget_ = 0;
  size_t owned_used_ = 0;  // batch_->owned_buffers holding this batch's buffers
};

Status Loader::LoadArray(const Field& field, const std::string& path, ArrayView* out) {
  Status status = [&]() -> Status {
    if (node_index_ >= meta_.nodes.size()) {
      return CorruptionError("missing field node " + std::to_string(node_index_));
    }
    const FieldNode& node = meta_.nodes[node_index_++];
    if (node.length < 0 || node.null_count < 0 || node.null_count > node.length) {
      return CorruptionError("invalid field node (length " + std::to_string(node.length) +
                             ", null_count " + std::to_string(node.null_count) + ")");
    }
    out->field = &field;
    out->length = node.length;
    out->null_count = field.type == TypeId::kNull ? node.length : node.null_count;
    return LoadBuffers(field, out);
  }();
  if (!status.ok()) {
    return status.WithContext("column '" + path + "' (" + TypeToString(field) + ")");
  }
  DOCFEED_RETURN_IF_ERROR(LoadChildren(field, path, out));
  status = Validate(out);
  if (!status.ok()) {
    return status.WithContext("column '" + path + "' (" + TypeToString(field) + ")");
  }
  return Status::Ok();
}

Status Loader::LoadBuffers(const Field& field, ArrayView* out) {
  const int count = BufferCount(field.type);
  if (count == 0) return Status::Ok();
  DOCFEED_ASSIGN_OR_RETURN(out->validity, NextBuffer());
  if (count == 1) return Status::Ok();
  if (IsBinaryLike(field.type) || field.type == TypeId::kList || field.type == TypeId::kLargeList) {
    DOCFEED_ASSIGN_OR_RETURN(out->offsets, NextBuffer());
    if (count == 2) return Status::Ok();
  }
  DOCFEED_ASSIGN_OR_RETURN(out->values, NextBuffer());
  return Status::Ok();
}

Status Loader::LoadChildren(const Field& field, const std::string& path, ArrayView* out) {
  out->children.resize(field.children.size());
  for (size_t i = 0; i < field.children.size(); ++i) {
    const Field& child = field.children[i];
    DOCFEED_RETURN_IF_ERROR(LoadArray(child, path + "." + child.name, &out->children[i]));
  }
  return Status::Ok();
}

Result<std::span<const uint8_t>> Loader::NextBuffer() {
  if (buffer_index_ >= meta_.buffers.size()) {
    return CorruptionError("missing buffer " + std::to_string(buffer_index_));
  }
  const size_t index = buffer_index_++;
  const BufferSpec& spec = meta_.buffers[index];
  const auto body_size = static_cast<int64_t>(body_.size());
  if (spec.offset < 0 || spec.length < 0 || spec.offset > body_size ||
      spec.length > body_size - spec.offset) {
    return CorruptionError("buffer " + std::to_string(index) + " (offset " +
                           std::to_string(spec.offset) + ", length " + std::to_string(spec.length) +
                           ") lies outside the " + std::to_string(body_size) + "-byte body");
  }
  const auto raw =
      body_.subspan(static_cast<size_t>(spec.offset), static_cast<size_t>(spec.length));
  if (!meta_.codec.has_value()) return raw;
  // The next owned buffer, reused from an earlier batch read into the same RecordBatch when there
  // is one. Growing the outer vector moves the inner ones, whose heap blocks (which earlier
  // views point into) stay where they are.
  if (owned_used_ == batch_->owned_buffers.size()) batch_->owned_buffers.emplace_back();
  std::vector<uint8_t>& owned = batch_->owned_buffers[owned_used_];
  Result<std::span<const uint8_t>> result = DecompressBuffer(*meta_.codec, raw, &owned);
  if (!result.ok()) return result.status().WithContext("buffer " + std::to_string(index));
  // Empty, or stored uncompressed (-1 prefix): a view into the body, `owned` unused.
  if (result->empty() || result->data() != owned.data()) return result;
  decompress_budget_ -= static_cast<int64_t>(result->size());
  if (decompress_budget_ < 0) {
    return CorruptionError("decompressed buffers exceed " + std::to_string(kMaxCompressionRatio) +
                           "x the compressed body");
  }
  ++owned_used_;
  return result;
}

Status Loader::Validate(ArrayView* out) const {
  if (out->null_count == 0 || out->type() == TypeId::kNull) {
    out->validity = {};
  } else {
    if (static_cast<int64_t>(out->validity.size()) < BitmapBytes(out->length)) {
      return CorruptionError("validity bitmap of " + std::to_string(out->validity.size()) +
                             " bytes is too short for " + std::to_string(out->length) + " slots");
    }
    const int64_t nulls = CountZeroBits(out->validity, out->length);
    if (nulls != out->null_count) {
      return CorruptionError("validity bitmap has " + std::to_string(nulls) +
                             " nulls, field node says " + std::to_string(out->null_count));
    }
  }
  if (IsListLike(out->type()) || out->type() == TypeId::kStruct) return ValidateNested(*out);
  return ValidateValues(*out);
}

Status Loader::ValidateValues(const ArrayView& view) const {
  const int64_t length = view.length;
  const auto values_size = static_cast<int64_t>(view.values.size());
  if (view.type() == TypeId::kNull) return Status::Ok();
  if (view.type() == TypeId::kBool) {
    if (values_size < BitmapBytes(length)) {
      return CorruptionError("bool values of " + std::to_string(values_size) +
                             " bytes are too short for " + std::to_string(length) + " slots");
    }
    return Status::Ok();
  }
  if (IsBinaryLike(view.type())) {
    const int64_t width = HasLargeOffsets(view.type()) ? 8 : 4;
    if (length == 0) return Status::Ok();
    if (static_cast<int64_t>(view.offsets.size()) / width <= length) {
      return CorruptionError("offsets buffer of " + std::to_string(view.offsets.size()) +
                             " bytes is too short for " + std::to_string(length) + " slots");
    }
    return width == 8 ? CheckOffsets<int64_t>(view.offsets, length, values_size)
                      : CheckOffsets<int32_t>(view.offsets, length, values_size);
  }
  const int64_t width = FixedWidthBytes(*view.field);
  if (width > 0 && values_size / width < length) {
    return CorruptionError("values buffer of " + std::to_string(values_size) +
                           " bytes is too short for " + std::to_string(length) + " slots of " +
                           std::to_string(width) + " bytes");
  }
  return Status::Ok();
}

Status Loader::ValidateNested(const ArrayView& view) const {
  const int64_t length = view.length;
  if (view.type() == TypeId::kStruct) {
    for (const ArrayView& child : view.children) {
      if (child.length < length) {
        return CorruptionError("struct child '" + child.field->name + "' has " +
                               std::to_string(child.length) + " slots, fewer than " +
                               std::to_string(length));
      }
    }
    return Status::Ok();
  }
  const int64_t child_length = view.children[0].length;
  if (view.type() == TypeId::kFixedSizeList) {
    const int64_t list_size = view.field->fixed_size;
    if (list_size > 0 && child_length / list_size < length) {
      return CorruptionError("fixed-size list child has " + std::to_string(child_length) +
                             " values, fewer than " + std::to_string(length) + " x " +
                             std::to_string(list_size));
    }
    return Status::Ok();
  }
  const int64_t width = view.type() == TypeId::kLargeList ? 8 : 4;
  if (length == 0) return Status::Ok();
  if (static_cast<int64_t>(view.offsets.size()) / width <= length) {
    return CorruptionError("list offsets buffer of " + std::to_string(view.offsets.size()) +
                           " bytes is too short for " + std::to_string(length) + " slots");
  }
  return width == 8 ? CheckOffsets<int64_t>(view.offsets, length, child_length)
                    : CheckOffsets<int32_t>(view.offsets, length, child_length);
}

}  // namespace

Status LoadRecordBatch(const RecordBatchMeta& meta, std::span<const uint8_t> body,
                       RecordBatch* batch) {
  batch->num_rows = meta.length;
  batch->compressed = meta.codec.has_value();
  batch->columns.clear();
  // owned_buffers are kept: NextBuffer reuses them (StreamReader::ReadBatchAt into a batch).
  Loader loader(meta, body, batch);
  return loader.LoadColumns();
}

}  // namespace docfeed::internal::arrow
