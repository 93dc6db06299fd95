#include "format/parquet/thrift_compact.h"

#include <cstring>

namespace docfeed::internal::parquet {

Status CompactReader::Fail(std::string_view what) const {
  return CorruptionError("thrift: " + std::string(what) + " at byte " + std::to_string(pos_));
}

Result<uint64_t> CompactReader::ReadVarint() {
  uint64_t value = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos_ >= bytes_.size()) return Fail("truncated varint");
    const uint8_t b = bytes_[pos_++];
    if (shift == 63 && (b & 0x7E) != 0) return Fail("varint past 64 bits");
    value |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return value;
  }
  return Fail("varint longer than 10 bytes");
}

Result<int64_t> CompactReader::ReadZigzag() {
  DOCFEED_ASSIGN_OR_RETURN(uint64_t v, ReadVarint());
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

Status CompactReader::BeginStruct() {
  if (depth_ >= kMaxDepth) return Fail("structs nested deeper than 32");
  ++depth_;
  last_id_[depth_] = 0;
  return Status::Ok();
}

void CompactReader::EndStruct() {
  if (depth_ > 0) --depth_;
}

Status CompactReader::ReadFieldHeader(int16_t* id, ThriftType* type) {
  if (pos_ >= bytes_.size()) return Fail("truncated struct (no stop byte)");
  const uint8_t b = bytes_[pos_++];
  const uint8_t t = b & 0x0F;
  if (t > static_cast<uint8_t>(ThriftType::kStruct)) return Fail("unknown field type");
  *type = static_cast<ThriftType>(t);
  if (*type == ThriftType::kStop) {
    if (b != 0) return Fail("stop byte with a field id");
    *id = 0;
    return Status::Ok();
  }
  const int delta = b >> 4;
  if (delta != 0) {
    const int next = last_id_[depth_] + delta;
    if (next > INT16_MAX) return Fail("field id past 32767");
    *id = static_cast<int16_t>(next);
  } else {
    DOCFEED_ASSIGN_OR_RETURN(int64_t v, ReadZigzag());
    if (v < INT16_MIN || v > INT16_MAX) return Fail("field id out of range");
    *id = static_cast<int16_t>(v);
  }
  last_id_[depth_] = *id;
  return Status::Ok();
}

Result<bool> CompactReader::ReadBool(ThriftType type) {
  if (type == ThriftType::kTrue) return true;
  if (type == ThriftType::kFalse) return false;
  return Fail("expected a boolean");
}

Result<int32_t> CompactReader::ReadI32(ThriftType type) {
  if (type == ThriftType::kByte) {
    if (pos_ >= bytes_.size()) return Fail("truncated byte");
    return static_cast<int32_t>(static_cast<int8_t>(bytes_[pos_++]));
  }
  if (type != ThriftType::kI16 && type != ThriftType::kI32) return Fail("expected an integer");
  DOCFEED_ASSIGN_OR_RETURN(int64_t v, ReadZigzag());
  if (v < INT32_MIN || v > INT32_MAX) return Fail("i32 out of range");
  return static_cast<int32_t>(v);
}

Result<int64_t> CompactReader::ReadI64(ThriftType type) {
  if (type != ThriftType::kI64) {
    DOCFEED_ASSIGN_OR_RETURN(int32_t v, ReadI32(type));
    return int64_t{v};
  }
  return ReadZigzag();
}

Result<std::string_view> CompactReader::ReadBinary(ThriftType type) {
  if (type != ThriftType::kBinary) return Fail("expected a string");
  DOCFEED_ASSIGN_OR_RETURN(uint64_t n, ReadVarint());
  if (n > bytes_.size() - pos_) return Fail("string past the end");
  std::string_view s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
  return s;
}

Status CompactReader::ReadListHeader(ThriftType type, ThriftType* element, int64_t* size) {
  if (type != ThriftType::kList && type != ThriftType::kSet) return Fail("expected a list");
  if (pos_ >= bytes_.size()) return Fail("truncated list header");
  const uint8_t b = bytes_[pos_++];
  const uint8_t t = b & 0x0F;
  if (t == 0 || t > static_cast<uint8_t>(ThriftType::kStruct)) return Fail("bad list element type");
  *element = static_cast<ThriftType>(t);
  uint64_t n = b >> 4;
  if (n == 15) {
    DOCFEED_ASSIGN_OR_RETURN(n, ReadVarint());
  }
  if (n > bytes_.size() - pos_) return Fail("list longer than the bytes left");
  *size = static_cast<int64_t>(n);
  return Status::Ok();
}

Status CompactReader::Skip(ThriftType type) {
  switch (type) {
    case ThriftType::kTrue:
    case ThriftType::kFalse:
      return Status::Ok();
    case ThriftType::kByte:
      if (pos_ >= bytes_.size()) return Fail("truncated byte");
      ++pos_;
      return Status::Ok();
    case ThriftType::kI16:
    case ThriftType::kI32:
    case ThriftType::kI64:
      return ReadVarint().status();
    case ThriftType::kDouble:
      if (bytes_.size() - pos_ < 8) return Fail("truncated double");
      pos_ += 8;
      return Status::Ok();
    case ThriftType::kBinary:
      return ReadBinary(type).status();
    case ThriftType::kList:
    case ThriftType::kSet: {
      ThriftType element;
      int64_t n = 0;
      DOCFEED_RETURN_IF_ERROR(ReadListHeader(type, &element, &n));
      if (depth_ >= kMaxDepth) return Fail("containers nested deeper than 32");
      ++depth_;
      for (int64_t i = 0; i < n; ++i) {
        if (element == ThriftType::kTrue || element == ThriftType::kFalse) {
          // A boolean element is one byte.
          DOCFEED_RETURN_IF_ERROR(Skip(ThriftType::kByte));
        } else {
          DOCFEED_RETURN_IF_ERROR(Skip(element));
        }
      }
      --depth_;
      return Status::Ok();
    }
    case ThriftType::kMap: {
      DOCFEED_ASSIGN_OR_RETURN(uint64_t n, ReadVarint());
      if (n == 0) return Status::Ok();
      if (n > bytes_.size() - pos_) return Fail("map longer than the bytes left");
      if (pos_ >= bytes_.size()) return Fail("truncated map header");
      const uint8_t kinds = bytes_[pos_++];
      const uint8_t k = kinds >> 4;
      const uint8_t v = kinds & 0x0F;
      if (k == 0 || v == 0 || k > 12 || v > 12) return Fail("bad map types");
      if (depth_ >= kMaxDepth) return Fail("containers nested deeper than 32");
      ++depth_;
      for (uint64_t i = 0; i < n; ++i) {
        for (uint8_t t : {k, v}) {
          const auto tt = static_cast<ThriftType>(t);
          DOCFEED_RETURN_IF_ERROR(
              Skip(tt == ThriftType::kTrue || tt == ThriftType::kFalse ? ThriftType::kByte : tt));
        }
      }
      --depth_;
      return Status::Ok();
    }
    case ThriftType::kStruct: {
      DOCFEED_RETURN_IF_ERROR(BeginStruct());
      for (;;) {
        int16_t id;
        ThriftType t;
        DOCFEED_RETURN_IF_ERROR(ReadFieldHeader(&id, &t));
        if (t == ThriftType::kStop) break;
        DOCFEED_RETURN_IF_ERROR(Skip(t));
      }
      EndStruct();
      return Status::Ok();
    }
    case ThriftType::kStop:
      break;
  }
  return Fail("cannot skip a stop");
}

}  // namespace docfeed::internal::parquet
