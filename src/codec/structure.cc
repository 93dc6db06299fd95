// ValidateImageStructure (codec.h): the container structure and integrity of a PNG or JPEG
// without decoding pixels. The header checks are DecodeImage's own (formats.h OpenJpegHeader and
// OpenPngHeader); the walkers below then cover the rest of the file. Both are bounds-safe on any
// input: every read is preceded by an explicit check against the span's size.
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>

#include "codec/codec.h"
#include "codec/internal/formats.h"

namespace docfeed::internal {
namespace {

uint32_t ReadBe32(std::span<const uint8_t> bytes, size_t pos) {
  return (uint32_t{bytes[pos]} << 24) | (uint32_t{bytes[pos + 1]} << 16) |
         (uint32_t{bytes[pos + 2]} << 8) | bytes[pos + 3];
}

uint32_t ReadBe16(std::span<const uint8_t> bytes, size_t pos) {
  return (uint32_t{bytes[pos]} << 8) | bytes[pos + 1];
}

// ---- PNG (PNG spec, sections 5.2-5.6) ----

std::string ChunkName(std::span<const uint8_t> type) {
  std::string name;
  for (uint8_t c : type) name += (c >= 0x20 && c < 0x7F) ? static_cast<char>(c) : '?';
  return name;
}

Status PngTruncated(const std::string& what) {
  return CorruptionError("PNG image file is truncated (" + what + ")");
}

// The CRC-32 of PNG spec 5.5 (zlib's crc32) over the chunk's type and data.
bool ChunkCrcMatches(std::span<const uint8_t> bytes, size_t pos, uint32_t length) {
  const uint8_t* type_and_data = bytes.data() + pos + 4;
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib's crc32 takes a uInt length; a chunk is at most 2^31 - 1 bytes (checked by the caller).
  crc = crc32(crc, type_and_data, static_cast<uInt>(length + 4));
  return static_cast<uint32_t>(crc) == ReadBe32(bytes, pos + 8 + length);
}

// What the chunk walk has seen so far, for the ordering rules.
struct PngWalk {
  int idat_runs = 0;  // maximal runs of consecutive IDAT chunks
  bool in_idat = false;
};

Status CheckChunkOrder(std::span<const uint8_t> type, size_t index, uint32_t length,
                       PngWalk& walk) {
  const bool is_ihdr = std::memcmp(type.data(), "IHDR", 4) == 0;
  if (index == 0 && (!is_ihdr || length != 13)) {
    return CorruptionError("PNG: the first chunk must be a 13-byte IHDR, found " + ChunkName(type) +
                           " of " + std::to_string(length) + " bytes");
  }
  if (index != 0 && is_ihdr) return CorruptionError("PNG: a second IHDR chunk");
  const bool is_idat = std::memcmp(type.data(), "IDAT", 4) == 0;
  if (is_idat && !walk.in_idat && ++walk.idat_runs > 1) {
    return CorruptionError("PNG: IDAT chunks are not consecutive (" + ChunkName(type) +
                           " after other chunks)");
  }
  walk.in_idat = is_idat;
  return Status::Ok();
}

// IHDR's fields as ProbeImage reported them (the same bytes, read by libspng).
Status CheckIhdrMatches(std::span<const uint8_t> bytes, const ImageInfo& info) {
  const uint32_t width = ReadBe32(bytes, 16);
  const uint32_t height = ReadBe32(bytes, 20);
  if (width != static_cast<uint32_t>(info.width) || height != static_cast<uint32_t>(info.height) ||
      bytes[24] != info.bit_depth || (bytes[25] == 3) != info.palette) {
    return CorruptionError("PNG: IHDR disagrees with the probed header");
  }
  return Status::Ok();
}

// Signature, then every chunk: length within the file and at most 2^31 - 1, CRC-32 over type
// and data, IHDR first (13 bytes), at least one IDAT and the IDATs consecutive, IEND present.
// The walk stops at IEND: what follows it is ignored, as libspng and Pillow ignore it.
Status WalkPngChunks(std::span<const uint8_t> bytes, const ImageInfo& info) {
  static constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kSignature, 8) != 0) {
    return CorruptionError("PNG: bad signature");
  }
  PngWalk walk;
  size_t pos = 8;
  for (size_t index = 0;; ++index) {
    if (bytes.size() - pos < 12) {
      return PngTruncated("no IEND chunk: the file ends " + std::to_string(bytes.size() - pos) +
                          " bytes after the last complete chunk");
    }
    const uint32_t length = ReadBe32(bytes, pos);
    const std::span<const uint8_t> type = bytes.subspan(pos + 4, 4);
    if (length > 0x7FFFFFFFu) {
      return CorruptionError("PNG: chunk " + ChunkName(type) + " at offset " + std::to_string(pos) +
                             " has an invalid length");
    }
    if (length > bytes.size() - pos - 12) {
      return PngTruncated("chunk " + ChunkName(type) + " at offset " + std::to_string(pos) +
                          " of " + std::to_string(length) + " bytes runs past the end");
    }
    DOCFEED_RETURN_IF_ERROR(CheckChunkOrder(type, index, length, walk));
    if (!ChunkCrcMatches(bytes, pos, length)) {
      return CorruptionError("PNG: CRC error in chunk " + ChunkName(type) + " at offset " +
                             std::to_string(pos));
    }
    if (std::memcmp(type.data(), "IEND", 4) == 0) break;
    pos += size_t{length} + 12;
  }
  if (walk.idat_runs == 0) return CorruptionError("PNG: no IDAT chunk");
  return CheckIhdrMatches(bytes, info);
}

// ---- JPEG (ITU-T T.81, annex B) ----

constexpr uint8_t kSof0 = 0xC0, kDht = 0xC4, kJpg = 0xC8, kDac = 0xCC, kRst0 = 0xD0, kRst7 = 0xD7,
                  kSoi = 0xD8, kEoi = 0xD9, kSos = 0xDA, kDqt = 0xDB, kDnl = 0xDC, kDri = 0xDD,
                  kApp0 = 0xE0, kApp15 = 0xEF, kCom = 0xFE, kTem = 0x01;

bool IsSof(uint8_t m) { return m >= kSof0 && m <= 0xCF && m != kDht && m != kJpg && m != kDac; }

// The markers libjpeg's read_markers accepts between and after scans; any other is its
// "Unsupported marker type" (or a duplicate SOI), a fatal error.
bool IsKnownSegment(uint8_t m) {
  return IsSof(m) || m == kDht || m == kDac || m == kDqt || m == kDri || m == kDnl || m == kSos ||
         (m >= kApp0 && m <= kApp15) || m == kCom;
}

std::string Hex(uint8_t value) {
  char text[8];
  std::snprintf(text, sizeof(text), "0x%02x", value);
  return text;
}

// Wherever the data ends after the header, libjpeg's source manager reports its premature end
// (JWRN_JPEG_EOF), which DecodeImage makes this error: the same text, so that rejects.jsonl and
// error messages do not depend on the mode.
Status JpegTruncated() {
  return CorruptionError("JPEG image file is truncated (Premature end of JPEG file)");
}

struct JpegComponent {
  uint8_t id = 0;
  uint8_t h = 1;  // sampling factors
  uint8_t v = 1;
  uint8_t quant_table = 0;
};

struct JpegWalk {
  std::span<const uint8_t> bytes;
  const ImageInfo* info = nullptr;
  size_t pos = 2;  // after SOI
  bool saw_sof = false;
  bool arithmetic = false;  // SOF9/SOF10: no Huffman tables are used
  int components = 0;
  JpegComponent component[4];
  // Tables defined so far by DQT and DHT segments.
  bool quant_defined[4] = {};
  bool dc_defined[4] = {};
  bool ac_defined[4] = {};
  // A Huffman table's code lengths make a valid code (jpeg_make_d_derived_tbl); DC symbols
  // must be at most 15. Checked when a scan uses the table, as libjpeg does.
  bool dc_valid[4] = {true, true, true, true};
  bool ac_valid[4] = {true, true, true, true};
  int scans = 0;
  DecodeReport* report = nullptr;
};

void Warn(JpegWalk& w, const std::string& text) {
  if (w.report == nullptr) return;
  if (w.report->warnings++ == 0) w.report->first_warning = text;
}

// libjpeg's next_marker: bytes up to the next 0xFF are discarded with a warning ("Corrupt JPEG
// data: N extraneous bytes before marker 0xXX"), 0xFF fill bytes are skipped. Only warnings
// after the first scan are added here: those before it were counted by OpenJpegHeader's libjpeg
// read of the header.
Result<uint8_t> NextMarker(JpegWalk& w) {
  size_t discarded = 0;
  while (true) {
    while (w.pos < w.bytes.size() && w.bytes[w.pos] != 0xFF) ++w.pos, ++discarded;
    while (w.pos < w.bytes.size() && w.bytes[w.pos] == 0xFF) ++w.pos;
    if (w.pos >= w.bytes.size()) return JpegTruncated();
    const uint8_t m = w.bytes[w.pos++];
    if (m != 0) {
      if (discarded > 0 && w.scans > 0) {
        Warn(w, "Corrupt JPEG data: " + std::to_string(discarded) +
                    " extraneous bytes before marker " + Hex(m));
      }
      return m;
    }
    discarded += 2;  // libjpeg counts a stuffed 0xFF 0x00 outside a scan as discarded
  }
}

// A segment's length field (it includes itself) and its payload, both within the file.
Result<std::span<const uint8_t>> SegmentPayload(JpegWalk& w, uint8_t marker) {
  if (w.bytes.size() - w.pos < 2) {
    return JpegTruncated();
  }
  const uint32_t length = ReadBe16(w.bytes, w.pos);
  // libjpeg's skip_variable and APPn readers take a length below 2 as an empty segment (only
  // the length field is consumed); every other segment reader refuses it.
  if (length < 2 && ((marker >= kApp0 && marker <= kApp15) || marker == kCom || marker == kDnl)) {
    w.pos += 2;
    return std::span<const uint8_t>();
  }
  if (length < 2) {
    return CorruptionError("corrupt JPEG data: marker " + Hex(marker) + " at offset " +
                           std::to_string(w.pos - 2) + " has a length below 2");
  }
  if (length > w.bytes.size() - w.pos) {
    return JpegTruncated();
  }
  const std::span<const uint8_t> payload = w.bytes.subspan(w.pos + 2, length - 2);
  w.pos += length;
  return payload;
}

// SOF: P, Y, X, Nf and Nf three-byte component specifications, consistent with ProbeImage
// (libjpeg read the same segment for it).
Status CheckSof(JpegWalk& w, uint8_t marker, std::span<const uint8_t> p) {
  // libjpeg-turbo reads SOF0, 1, 2, 9 and 10 and refuses the other processes before anything.
  if (marker != 0xC0 && marker != 0xC1 && marker != 0xC2 && marker != 0xC9 && marker != 0xCA) {
    return UnsupportedError("JPEG variant not supported: Unsupported JPEG process: SOF type " +
                            Hex(marker));
  }
  if (w.saw_sof) return CorruptionError("corrupt JPEG data: a second SOF marker");
  w.arithmetic = marker == 0xC9 || marker == 0xCA;
  w.saw_sof = true;
  if (p.size() < 6 || p.size() != 6 + size_t{3} * p[5]) {
    return CorruptionError("corrupt JPEG data: SOF segment of " + std::to_string(p.size() + 2) +
                           " bytes does not fit its component count");
  }
  const ImageInfo& info = *w.info;
  const bool progressive = marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE;
  const int components = p[5];
  const int probed_components = info.cmyk ? 4 : info.channels;
  if (p[0] != info.bit_depth || ReadBe16(p, 1) != static_cast<uint32_t>(info.height) ||
      ReadBe16(p, 3) != static_cast<uint32_t>(info.width) || components != probed_components ||
      progressive != info.progressive_or_interlaced || components > 4) {
    return CorruptionError("corrupt JPEG data: SOF disagrees with the probed header");
  }
  w.components = components;
  for (int i = 0; i < components; ++i) {
    const size_t at = 6 + 3 * static_cast<size_t>(i);
    w.component[i] = {.id = p[at],
                      .h = static_cast<uint8_t>(p[at + 1] >> 4),
                      .v = static_cast<uint8_t>(p[at + 1] & 15),
                      .quant_table = p[at + 2]};
  }
  return Status::Ok();
}

Status JpegCorrupt(const std::string& libjpeg_text) {
  return CorruptionError("corrupt JPEG data: " + libjpeg_text);
}

// The quantization table of each component in the scan must be defined (libjpeg's
// latch_quant_tables) and its Huffman tables defined and valid (jpeg_make_d_derived_tbl; a
// progressive scan uses DC tables in a first DC scan, AC tables in an AC scan).
Status CheckScanTables(const JpegWalk& w, const JpegComponent& c, uint8_t tables, bool dc_scan,
                       bool ac_scan) {
  if (c.quant_table >= 4 || !w.quant_defined[c.quant_table]) {
    return JpegCorrupt("Quantization table 0x" + Hex(c.quant_table).substr(2) + " was not defined");
  }
  if (w.arithmetic) return Status::Ok();
  const uint8_t dc = tables >> 4, ac = tables & 15;
  for (const auto& [use, n, defined, valid] : {std::tuple{dc_scan, dc, w.dc_defined, w.dc_valid},
                                               std::tuple{ac_scan, ac, w.ac_defined, w.ac_valid}}) {
    if (!use) continue;
    // libjpeg-turbo's sequential Huffman decoder installs the standard tables 0 and 1 where the
    // file defines none (std_huff_tables, for Motion-JPEG); its progressive one does not.
    const bool standard = !w.info->progressive_or_interlaced && n < 2;
    if (n >= 4 || !(defined[n] || standard)) {
      return JpegCorrupt("Huffman table 0x" + Hex(n).substr(2) + " was not defined");
    }
    if (!valid[n]) return JpegCorrupt("Bogus Huffman table definition");
  }
  return Status::Ok();
}

// Looks up the scan's components; the sum of their blocks per MCU is at most 10 when
// interleaved (libjpeg's per_scan_setup).
Result<const JpegComponent*> ScanComponent(const JpegWalk& w, uint8_t id) {
  for (int i = 0; i < w.components; ++i) {
    if (w.component[i].id == id) return &w.component[i];
  }
  return JpegCorrupt("Invalid component ID " + std::to_string(id) + " in SOS");
}

// SOS header: Ns in 1..4 components of the frame, Ls = 6 + 2 Ns, the tables each component
// uses, and for a progressive scan the spectral selection / successive approximation rules
// libjpeg enforces (jdphuff.c); a sequential scan with other parameters is libjpeg's warning.
Status CheckSos(JpegWalk& w, std::span<const uint8_t> p) {
  if (!w.saw_sof) return JpegCorrupt("SOS before SOF");
  const size_t ns = p.empty() ? 0 : p[0];
  if (ns < 1 || ns > 4 || p.size() != 4 + 2 * ns) {
    return JpegCorrupt("Bogus marker length (SOS of " + std::to_string(ns) + " components in " +
                       std::to_string(p.size() + 2) + " bytes)");
  }
  const uint8_t ss = p[1 + 2 * ns], se = p[2 + 2 * ns], ah = p[3 + 2 * ns] >> 4,
                al = p[3 + 2 * ns] & 15;
  const bool progressive = w.info->progressive_or_interlaced;
  if (progressive && ((ss == 0 ? se != 0 : (ss > se || se > 63 || ns != 1)) ||
                      (ah != 0 && al != ah - 1) || al > 13)) {
    return JpegCorrupt("Invalid progressive parameters Ss=" + std::to_string(ss) +
                       " Se=" + std::to_string(se) + " Ah=" + std::to_string(ah) +
                       " Al=" + std::to_string(al));
  }
  if (!progressive && (ss != 0 || se != 63 || ah != 0 || al != 0)) {
    Warn(w, "Invalid SOS parameters for sequential JPEG");
  }
  int blocks_per_mcu = 0;
  for (size_t i = 0; i < ns; ++i) {
    DOCFEED_ASSIGN_OR_RETURN(const JpegComponent* c, ScanComponent(w, p[1 + 2 * i]));
    blocks_per_mcu += c->h * c->v;
    const bool dc_scan = !progressive || (ss == 0 && ah == 0);
    const bool ac_scan = !progressive || ss != 0;
    DOCFEED_RETURN_IF_ERROR(CheckScanTables(w, *c, p[2 + 2 * i], dc_scan, ac_scan));
  }
  if (ns > 1 && blocks_per_mcu > 10) {
    return JpegCorrupt("Sampling factors too large for interleaved scan");
  }
  return Status::Ok();
}

// DQT (libjpeg's get_dqt): table numbers below 4; a short last table is tolerated as libjpeg
// tolerates it; the segment must be used up exactly.
Status ReadDqt(JpegWalk& w, std::span<const uint8_t> p) {
  size_t left = p.size(), at = 0;
  while (left > 0) {
    const uint8_t n = p[at] & 15, precision = p[at] >> 4;
    --left, ++at;
    if (n >= 4) return JpegCorrupt("Bogus DQT index " + std::to_string(n));
    w.quant_defined[n] = true;
    const size_t count = left < size_t{64} * (precision + 1u) ? left >> precision : 64;
    const size_t used = count * (precision != 0 ? 2 : 1);
    if (used > left) return JpegCorrupt("Bogus marker length");
    left -= used, at += used;
  }
  return Status::Ok();
}

// jpeg_make_d_derived_tbl's checks of a table's code lengths and (DC) symbols.
bool HuffmanTableValid(std::span<const uint8_t> counts, std::span<const uint8_t> symbols, bool dc) {
  uint32_t code = 0;
  int last = 0;
  for (int l = 1; l <= 16; ++l) {
    if (counts[static_cast<size_t>(l - 1)] != 0) last = l;
  }
  for (int l = 1; l <= last; ++l) {
    code += counts[static_cast<size_t>(l - 1)];
    if (code >= (uint32_t{1} << l)) return false;
    code <<= 1;
  }
  if (dc) {
    for (uint8_t symbol : symbols) {
      if (symbol > 15) return false;
    }
  }
  return true;
}

// DHT (libjpeg's get_dht): 16 counts summing to at most 256 and to what the segment holds,
// class 0/1 and index below 4, the segment used up exactly.
Status ReadDht(JpegWalk& w, std::span<const uint8_t> p) {
  size_t left = p.size(), at = 0;
  while (left > 16) {
    const uint8_t index = p[at];
    const std::span<const uint8_t> counts = p.subspan(at + 1, 16);
    size_t count = 0;
    for (uint8_t c : counts) count += c;
    left -= 17, at += 17;
    if (count > 256 || count > left) return JpegCorrupt("Bogus Huffman table definition");
    const std::span<const uint8_t> symbols = p.subspan(at, count);
    left -= count, at += count;
    const bool ac = (index & 0x10) != 0;
    const uint8_t n = ac ? index - 0x10 : index;
    if (n >= 4) return JpegCorrupt("Bogus DHT index " + std::to_string(n));
    (ac ? w.ac_defined : w.dc_defined)[n] = true;
    (ac ? w.ac_valid : w.dc_valid)[n] = HuffmanTableValid(counts, symbols, !ac);
  }
  if (left != 0) return JpegCorrupt("Bogus marker length");
  return Status::Ok();
}

// After an SOS header: the entropy-coded data runs to the next 0xFF that is followed by a byte
// other than 0x00 (stuffing), 0xFF (fill) or RST0..RST7. Leaves pos at that 0xFF.
Status SkipEntropyData(JpegWalk& w) {
  const uint8_t* data = w.bytes.data();
  const size_t size = w.bytes.size();
  size_t pos = w.pos;
  while (true) {
    const void* ff = std::memchr(data + pos, 0xFF, size - pos);
    if (ff == nullptr) return JpegTruncated();
    pos = static_cast<size_t>(static_cast<const uint8_t*>(ff) - data);
    size_t next = pos + 1;
    while (next < size && data[next] == 0xFF) ++next;
    if (next >= size) return JpegTruncated();
    const uint8_t m = data[next];
    if (m != 0 && (m < kRst0 || m > kRst7)) {
      w.pos = pos;
      return Status::Ok();
    }
    pos = next + 1;
  }
}

// One marker after SOI; sets *done at EOI.
Status WalkOneMarker(JpegWalk& w, bool* done) {
  DOCFEED_ASSIGN_OR_RETURN(const uint8_t m, NextMarker(w));
  if (m == kEoi) {
    if (w.scans == 0) return CorruptionError("corrupt JPEG data: EOI before any scan");
    *done = true;
    return Status::Ok();
  }
  if ((m >= kRst0 && m <= kRst7) || m == kTem) return Status::Ok();  // no payload
  if (m == kSoi) return CorruptionError("corrupt JPEG data: a second SOI marker");
  if (!IsKnownSegment(m)) {
    return CorruptionError("corrupt JPEG data: unsupported marker type " + Hex(m) + " at offset " +
                           std::to_string(w.pos - 2));
  }
  DOCFEED_ASSIGN_OR_RETURN(const std::span<const uint8_t> payload, SegmentPayload(w, m));
  if (IsSof(m)) return CheckSof(w, m, payload);
  if (m == kDqt) return ReadDqt(w, payload);
  if (m == kDht) return ReadDht(w, payload);
  if (m != kSos) return Status::Ok();
  DOCFEED_RETURN_IF_ERROR(CheckSos(w, payload));
  ++w.scans;
  return SkipEntropyData(w);
}

Status WalkJpegMarkers(std::span<const uint8_t> bytes, const ImageInfo& info,
                       DecodeReport* report) {
  if (bytes.size() < 2 || bytes[0] != 0xFF || bytes[1] != kSoi) {
    return CorruptionError("corrupt JPEG data: no SOI marker");
  }
  JpegWalk w;
  w.bytes = bytes;
  w.info = &info;
  w.report = report;
  bool done = false;
  while (!done) DOCFEED_RETURN_IF_ERROR(WalkOneMarker(w, &done));
  return Status::Ok();
}

}  // namespace

Result<DecodedGeometry> ValidateJpegStructure(std::span<const uint8_t> bytes,
                                              const DecodeLimits& limits, DecodeReport* report) {
  DOCFEED_ASSIGN_OR_RETURN(const ImageInfo info, OpenJpegHeader(bytes, limits, report));
  DOCFEED_RETURN_IF_ERROR(WalkJpegMarkers(bytes, info, report));
  return DecodedGeometry{.width = info.width, .height = info.height, .channels = info.channels};
}

Result<DecodedGeometry> ValidatePngStructure(std::span<const uint8_t> bytes,
                                             const DecodeLimits& limits) {
  DOCFEED_ASSIGN_OR_RETURN(const ImageInfo info, OpenPngHeader(bytes, limits));
  DOCFEED_RETURN_IF_ERROR(WalkPngChunks(bytes, info));
  return DecodedGeometry{.width = info.width, .height = info.height, .channels = info.channels};
}

}  // namespace docfeed::internal
