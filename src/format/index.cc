#include "format/index.h"

#include <cstring>

#include "base/check.h"
#include "base/hash.h"
#include "codec/codec.h"

namespace docfeed::internal {
namespace {

template <typename T>
void PutLe(std::vector<uint8_t>& out, T v) {
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // little-endian host, see format/value.cc
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

template <typename T>
T GetLe(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

void EncodeRecord(const IndexRecord& r, std::vector<uint8_t>& out) {
  PutLe(out, r.file_index);
  PutLe(out, r.batch_index);
  PutLe(out, r.row);
  PutLe(out, r.codec);
  PutLe(out, r.channels);
  PutLe(out, r.flags);
  PutLe(out, r.width);
  PutLe(out, r.height);
  PutLe(out, r.batch_offset);
  PutLe(out, r.image_offset);
  PutLe(out, r.image_length);
  PutLe(out, r.label_length);
  PutLe(out, r.image_hash);
  PutLe(out, r.label_hash);
}

}  // namespace

Status CheckStoredCodec(uint8_t codec, std::span<const uint8_t> image) {
  StoredCodec actual;
  switch (SniffCodec(image)) {
    case ImageCodec::kJpeg:
      actual = StoredCodec::kJpeg;
      break;
    case ImageCodec::kPng:
      actual = StoredCodec::kPng;
      break;
    case ImageCodec::kWebp:
      actual = StoredCodec::kWebp;
      break;
    case ImageCodec::kPpm:
      actual = StoredCodec::kPpm;
      break;
    case ImageCodec::kTiff:
      actual = StoredCodec::kTiff;
      break;
    case ImageCodec::kPfm:
      actual = StoredCodec::kPfm;
      break;
    default:
      return CorruptionError("the stored bytes are " +
                             std::string(ImageCodecName(SniffCodec(image))) +
                             ", not a format docfeed stores");
  }
  if (static_cast<uint8_t>(actual) == codec) return Status::Ok();
  return CorruptionError("index codec " + std::to_string(codec) + " (" +
                         std::string(StoredCodecName(static_cast<StoredCodec>(codec))) +
                         ") but the stored bytes are " + std::string(StoredCodecName(actual)));
}

std::string_view StoredCodecName(StoredCodec codec) {
  switch (codec) {
    case StoredCodec::kJpeg:
      return "jpeg";
    case StoredCodec::kPng:
      return "png";
    case StoredCodec::kWebp:
      return "webp";
    case StoredCodec::kPpm:
      return "ppm";
    case StoredCodec::kTiff:
      return "tiff";
    case StoredCodec::kPfm:
      return "pfm";
  }
  return "unknown";
}

std::vector<uint8_t> EncodeIndex(std::span<const IndexRecord> records) {
  std::vector<uint8_t> out;
  out.reserve(kIndexHeaderBytes + records.size() * kIndexRecordBytes + kIndexFooterBytes);
  out.resize(sizeof(kIndexMagic));
  std::memcpy(out.data(), kIndexMagic, sizeof(kIndexMagic));
  PutLe(out, kIndexVersion);
  PutLe(out, static_cast<uint32_t>(kIndexRecordBytes));
  PutLe(out, static_cast<uint64_t>(records.size()));
  PutLe(out, uint64_t{0});  // reserved
  DOCFEED_CHECK(out.size() == kIndexHeaderBytes);
  for (const IndexRecord& r : records) EncodeRecord(r, out);
  PutLe(out, Hash64(out));
  return out;
}

Result<IndexView> IndexView::Open(std::span<const uint8_t> bytes, const std::string& name) {
  auto corrupt = [&](const std::string& what) { return CorruptionError(name + ": " + what); };
  if (bytes.size() < kIndexHeaderBytes + kIndexFooterBytes) {
    return corrupt("index is " + std::to_string(bytes.size()) + " bytes, shorter than its header");
  }
  if (std::memcmp(bytes.data(), kIndexMagic, sizeof(kIndexMagic)) != 0) {
    return corrupt("bad magic (not a docfeed index)");
  }
  uint32_t version = GetLe<uint32_t>(bytes.data() + 8);
  if (version != kIndexVersion) {
    return UnsupportedError(name + ": index version " + std::to_string(version) +
                            ", this docfeed reads version " + std::to_string(kIndexVersion));
  }
  if (GetLe<uint32_t>(bytes.data() + 12) != kIndexRecordBytes) {
    return corrupt("unexpected record size " + std::to_string(GetLe<uint32_t>(bytes.data() + 12)));
  }
  uint64_t count = GetLe<uint64_t>(bytes.data() + 16);
  uint64_t body = bytes.size() - kIndexHeaderBytes - kIndexFooterBytes;
  if (body % kIndexRecordBytes != 0 || body / kIndexRecordBytes != count) {
    return corrupt("header says " + std::to_string(count) + " records but the file holds " +
                   std::to_string(body) + " record bytes");
  }
  size_t footer_at = bytes.size() - kIndexFooterBytes;
  uint64_t stored = GetLe<uint64_t>(bytes.data() + footer_at);
  if (Hash64(bytes.first(footer_at)) != stored) return corrupt("index checksum mismatch");
  IndexView view;
  view.records_ = bytes.subspan(kIndexHeaderBytes, body);
  view.num_records_ = count;
  return view;
}

IndexRecord IndexView::Get(uint64_t i) const {
  DOCFEED_CHECK(i < num_records_);
  const uint8_t* p = records_.data() + i * kIndexRecordBytes;
  IndexRecord r;
  r.file_index = GetLe<uint32_t>(p + 0);
  r.batch_index = GetLe<uint32_t>(p + 4);
  r.row = GetLe<uint32_t>(p + 8);
  r.codec = p[12];
  r.channels = p[13];
  r.flags = GetLe<uint16_t>(p + 14);
  r.width = GetLe<uint32_t>(p + 16);
  r.height = GetLe<uint32_t>(p + 20);
  r.batch_offset = GetLe<uint64_t>(p + 24);
  r.image_offset = GetLe<uint64_t>(p + 32);
  r.image_length = GetLe<uint32_t>(p + 40);
  r.label_length = GetLe<uint32_t>(p + 44);
  r.image_hash = GetLe<uint64_t>(p + 48);
  r.label_hash = GetLe<uint64_t>(p + 56);
  return r;
}

}  // namespace docfeed::internal
