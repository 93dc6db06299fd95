#include "codec/internal/tiff_handle.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace docfeed::internal {
namespace {

struct OpenOptionsDeleter {
  void operator()(TIFFOpenOptions* options) const { TIFFOpenOptionsFree(options); }
};

// libtiff only warns about some losses of image data and then fills the rest of the strip, the
// way Pillow's "LOAD_TRUNCATED_IMAGES" would; docfeed treats them as errors, like the JPEG
// decoder's fatal libjpeg warnings (src/codec/README.md, "Truncation is an error"):
//   tif_fax3.c: "Premature EOF at line N of strip M" (CCITT data ended early);
//   tif_jpeg.c relays libjpeg's warnings under module "JPEGLib": premature end of the JPEG data,
//   bad Huffman/arithmetic codes, a missing restart marker. Its "extraneous bytes before marker"
//   warning is harmless and ignored, as in Pillow.
bool IsDataLossWarning(std::string_view module, std::string_view message) {
  if (message.find("Premature EOF") != std::string_view::npos) return true;
  if (module != "JPEGLib") return false;
  if (message.find("extraneous bytes") != std::string_view::npos) return false;
  return message.starts_with("Premature end of JPEG") || message.starts_with("Corrupt JPEG data");
}

std::string Format(const char* module, const char* format, va_list args) {
  char text[512];
  std::vsnprintf(text, sizeof(text), format, args);
  std::string message = module != nullptr && *module != '\0' ? std::string(module) + ": " : "";
  return message + text;
}

}  // namespace

Result<std::unique_ptr<TiffHandle>> TiffHandle::Open(std::span<const uint8_t> bytes,
                                                     uint64_t max_alloc_bytes) {
  std::unique_ptr<TiffHandle> handle(new TiffHandle(bytes));
  std::unique_ptr<TIFFOpenOptions, OpenOptionsDeleter> options(TIFFOpenOptionsAlloc());
  if (options == nullptr) return ResourceExhaustedError("TIFF: cannot allocate open options");
  TIFFOpenOptionsSetMaxSingleMemAlloc(
      options.get(), static_cast<tmsize_t>(std::min<uint64_t>(max_alloc_bytes, INT64_MAX)));
  TIFFOpenOptionsSetErrorHandlerExtR(options.get(), &TiffHandle::OnError, handle.get());
  TIFFOpenOptionsSetWarningHandlerExtR(options.get(), &TiffHandle::OnWarning, handle.get());
  // "r": read only; "C": strip chopping, as Pillow opens files ("rC"), so one huge uncompressed
  // strip is read in pieces. Mapping stays on: Map() exposes `bytes` without a copy.
  handle->tif_ = TIFFClientOpenExt(
      "memory", "rC", handle.get(), &TiffHandle::Read, &TiffHandle::Write, &TiffHandle::Seek,
      &TiffHandle::Close, &TiffHandle::Size, &TiffHandle::Map, &TiffHandle::Unmap, options.get());
  if (handle->tif_ == nullptr) {
    return handle->CorruptionFromLibtiff("header", "cannot read the header or first directory");
  }
  // Directory reading recovers from many malformed tags with an error message; the return value
  // decided, so only messages from now on count.
  handle->ClearError();
  return handle;
}

TiffHandle::~TiffHandle() {
  if (tif_ != nullptr) TIFFClose(tif_);
}

Status TiffHandle::CorruptionFromLibtiff(std::string_view what, std::string_view fallback) {
  std::string message =
      "TIFF " + std::string(what) + ": " + (error_.empty() ? std::string(fallback) : error_);
  error_.clear();
  return CorruptionError(std::move(message));
}

tmsize_t TiffHandle::Read(thandle_t self, void* buffer, tmsize_t size) {
  auto* h = static_cast<TiffHandle*>(self);
  if (size <= 0 || h->position_ >= h->bytes_.size()) return 0;
  const size_t n = static_cast<size_t>(
      std::min<uint64_t>(static_cast<uint64_t>(size), h->bytes_.size() - h->position_));
  std::memcpy(buffer, h->bytes_.data() + h->position_, n);
  h->position_ += n;
  return static_cast<tmsize_t>(n);
}

tmsize_t TiffHandle::Write(thandle_t, void*, tmsize_t) { return 0; }  // Opened read-only.

// Offsets past the end are allowed (Read then returns 0 bytes), as with a file.
toff_t TiffHandle::Seek(thandle_t self, toff_t offset, int whence) {
  auto* h = static_cast<TiffHandle*>(self);
  // toff_t is unsigned: a negative SEEK_CUR/SEEK_END offset arrives as its two's complement,
  // so modular addition gives the intended position.
  if (whence == SEEK_SET) h->position_ = offset;
  if (whence == SEEK_CUR) h->position_ += offset;
  if (whence == SEEK_END) h->position_ = h->bytes_.size() + offset;
  return h->position_;
}

int TiffHandle::Close(thandle_t) { return 0; }

toff_t TiffHandle::Size(thandle_t self) { return static_cast<TiffHandle*>(self)->bytes_.size(); }

// libtiff reads strips straight from the mapping when the file is opened read-only; it never
// writes through it.
int TiffHandle::Map(thandle_t self, void** base, toff_t* size) {
  auto* h = static_cast<TiffHandle*>(self);
  *base = const_cast<uint8_t*>(h->bytes_.data());
  *size = h->bytes_.size();
  return 1;
}

void TiffHandle::Unmap(thandle_t, void*, toff_t) {}

// Returning 1 tells libtiff the message is handled, so its process-wide handlers (stderr by
// default) never run.
int TiffHandle::OnError(TIFF*, void* self, const char* module, const char* format, va_list args) {
  static_cast<TiffHandle*>(self)->Record(module, format, args);
  return 1;
}

int TiffHandle::OnWarning(TIFF*, void* self, const char* module, const char* format, va_list args) {
  auto* h = static_cast<TiffHandle*>(self);
  va_list copy;
  va_copy(copy, args);
  const std::string message = Format(nullptr, format, copy);
  va_end(copy);
  if (IsDataLossWarning(module != nullptr ? module : "", message)) h->Record(module, format, args);
  return 1;
}

void TiffHandle::Record(const char* module, const char* format, va_list args) {
  if (error_.empty()) error_ = Format(module, format, args);
}

}  // namespace docfeed::internal
