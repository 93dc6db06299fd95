// RAII ownership of a libtiff handle opened over bytes in memory (TIFFClientOpenExt, libtiff
// 4.5+), with libtiff's diagnostics captured per handle instead of printed: no temporary file, no
// stderr, no process-wide handler. libtiff's documentation: "TIFFOpen" (TIFFClientOpenExt and
// TIFFOpenOptions) and "TIFFError" (the per-handle TIFFErrorHandlerExtR).
#ifndef DOCFEED_CODEC_INTERNAL_TIFF_HANDLE_H_
#define DOCFEED_CODEC_INTERNAL_TIFF_HANDLE_H_

#include <tiffio.h>

#include <cstdarg>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "docfeed/status.h"

namespace docfeed::internal {

// One open TIFF file. Not copyable or movable: libtiff keeps a pointer to it as its client data
// (the read position and the captured messages), so it lives behind a unique_ptr. Not thread
// safe; distinct handles may be used on distinct threads at once (libtiff keeps no shared state
// for a handle opened this way).
class TiffHandle {
 public:
  // Opens `bytes` (REQUIRES: they outlive the handle) and reads the first directory (IFD). No
  // single libtiff allocation may exceed `max_alloc_bytes`.
  // Errors: Corruption naming libtiff's complaint when the header or first IFD is unreadable.
  static Result<std::unique_ptr<TiffHandle>> Open(std::span<const uint8_t> bytes,
                                                  uint64_t max_alloc_bytes);

  ~TiffHandle();
  TiffHandle(const TiffHandle&) = delete;
  TiffHandle& operator=(const TiffHandle&) = delete;

  TIFF* tif() const { return tif_; }
  std::span<const uint8_t> bytes() const { return bytes_; }

  // True once libtiff has reported an error, or a warning that means image data is missing
  // (see IsDataLossWarning in tiff_handle.cc), since the last ClearError().
  bool failed() const { return !error_.empty(); }
  // The first such message as "module: text" (empty when none).
  const std::string& error() const { return error_; }
  void ClearError() { error_.clear(); }

  // Corruption("TIFF <what>: <first libtiff message>"), or with `fallback` when libtiff said
  // nothing. Clears the captured message.
  Status CorruptionFromLibtiff(std::string_view what, std::string_view fallback);

 private:
  explicit TiffHandle(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  static tmsize_t Read(thandle_t self, void* buffer, tmsize_t size);
  static tmsize_t Write(thandle_t self, void* buffer, tmsize_t size);
  static toff_t Seek(thandle_t self, toff_t offset, int whence);
  static int Close(thandle_t self);
  static toff_t Size(thandle_t self);
  static int Map(thandle_t self, void** base, toff_t* size);
  static void Unmap(thandle_t self, void* base, toff_t size);
  static int OnError(TIFF* tif, void* self, const char* module, const char* format, va_list args);
  static int OnWarning(TIFF* tif, void* self, const char* module, const char* format, va_list args);

  void Record(const char* module, const char* format, va_list args);

  std::span<const uint8_t> bytes_;
  uint64_t position_ = 0;
  std::string error_;
  TIFF* tif_ = nullptr;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_CODEC_INTERNAL_TIFF_HANDLE_H_
