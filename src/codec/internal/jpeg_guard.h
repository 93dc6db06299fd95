// RAII owners for libjpeg-turbo's (de)compression objects, and the single function in docfeed
// that calls setjmp.
//
// libjpeg reports errors by calling error_exit(), which must not return; the standard remedy is
// setjmp/longjmp (libjpeg.txt, "Error handling"). A longjmp that skips C++ destructors is
// undefined behaviour, so the jump target is confined to RunJpegStep(), whose only locals are its
// arguments, and every step it runs is a plain function over trivially destructible data
// (pointers, integers). C++ objects (vectors, Status) are created only outside RunJpegStep.
#ifndef DOCFEED_CODEC_INTERNAL_JPEG_GUARD_H_
#define DOCFEED_CODEC_INTERNAL_JPEG_GUARD_H_

// clang-format off
#include <csetjmp>
#include <cstddef>
#include <cstdio>  // jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>
// clang-format on

#include <cstdint>
#include <span>

#include "docfeed/status.h"

namespace docfeed::internal {

// libjpeg's error manager extended with the jump buffer, the fatal message and the first
// tolerated warning.
struct JpegErrorManager {
  jpeg_error_mgr pub;  // Must stay first: libjpeg only knows the jpeg_error_mgr* prefix.
  std::jmp_buf jump;
  int msg_code;                   // libjpeg J_MESSAGE_CODE of the failure.
  char message[JMSG_LENGTH_MAX];  // libjpeg's formatted message for it.
  // The first warning libjpeg went on after (pub.num_warnings counts them all); empty if none.
  char first_warning[JMSG_LENGTH_MAX];
};

// One unit of libjpeg work run under RunJpegStep.
// REQUIRES: the function and everything it calls hold only trivially destructible locals.
using JpegStep = void (*)(void* args);

// Installs docfeed's handlers into `err` and returns the jpeg_error_mgr to put in cinfo->err.
// Errors longjmp to RunJpegStep. Of the warnings, only the end of the input (JWRN_JPEG_EOF:
// libjpeg wanted more bytes than there are) is fatal: it is exactly where Pillow's suspending
// source runs dry and Image.load() raises "image file is truncated", where libjpeg would
// invent an EOI and fill the rest with gray. Every other warning (bad Huffman code, a marker
// inside the scan, lost restart sync, extraneous bytes between markers, unknown JFIF revision)
// is counted in pub.num_warnings, the first kept in `first_warning`, and decoding goes on, as
// Pillow's decoder ignores warnings (JpegDecode.c installs no emit_message) and returns the
// pixels libjpeg's recovery produced.
jpeg_error_mgr* InstallJpegErrorManager(JpegErrorManager* err);

// Runs step(args). Returns false if libjpeg raised an error; `err` then holds its message.
[[nodiscard]] bool RunJpegStep(JpegErrorManager* err, JpegStep step, void* args);

// Maps a failed step to a Status: Unsupported for features docfeed's libjpeg lacks (12-bit,
// lossless, arithmetic), ResourceExhausted for out-of-memory, Corruption otherwise (truncation
// is reported as "image file is truncated").
Status JpegFailure(const JpegErrorManager& err);

// In sequential Huffman-coded JPEG every 8x8 block costs at least 2 bits (a DC code and an EOB
// code, ITU-T T.81 F.1.2), so input shorter than blocks / 4 bytes cannot hold the image: libjpeg
// would decode it to gray after an early EOI. Corruption ("image file is truncated") for such
// input, refused before anything is allocated; progressive (EOB runs) and arithmetic coding have
// no such floor. REQUIRES: `cinfo` has read the header.
Status CheckJpegDataCanHoldImage(const jpeg_decompress_struct& cinfo, size_t size_bytes);

// Owns a jpeg_decompress_struct. Not movable (libjpeg keeps pointers into it).
class JpegDecompressor {
 public:
  JpegDecompressor();
  ~JpegDecompressor();
  JpegDecompressor(const JpegDecompressor&) = delete;
  JpegDecompressor& operator=(const JpegDecompressor&) = delete;

  // Creates the libjpeg object reading from `bytes`, which must outlive this object, and saves
  // APP1 markers (EXIF, XMP) for Markers(). REQUIRES: called once.
  Status Open(const uint8_t* bytes, size_t size_bytes);
  // Runs `step` with libjpeg errors mapped through JpegFailure.
  Status Run(JpegStep step, void* args);

  jpeg_decompress_struct* cinfo() { return &cinfo_; }
  // Warnings tolerated so far (see InstallJpegErrorManager) and libjpeg's message for the first.
  int32_t warnings() const { return static_cast<int32_t>(err_.pub.num_warnings); }
  const char* first_warning() const { return err_.first_warning; }

 private:
  jpeg_decompress_struct cinfo_{};
  JpegErrorManager err_{};
  bool created_ = false;
};

// Owns a jpeg_compress_struct writing to a malloc'd memory buffer (jpeg_mem_dest).
class JpegCompressor {
 public:
  JpegCompressor();
  ~JpegCompressor();
  JpegCompressor(const JpegCompressor&) = delete;
  JpegCompressor& operator=(const JpegCompressor&) = delete;

  // REQUIRES: called once.
  Status Open();
  Status Run(JpegStep step, void* args);

  jpeg_compress_struct* cinfo() { return &cinfo_; }
  // The encoded bytes; valid after jpeg_finish_compress ran.
  std::span<const uint8_t> output() const { return {buffer_, buffer_size_}; }

 private:
  jpeg_compress_struct cinfo_{};
  JpegErrorManager err_{};
  bool created_ = false;
  unsigned char* buffer_ = nullptr;
  unsigned long buffer_size_ = 0;  // NOLINT(google-runtime-int): jpeg_mem_dest's type.
};

}  // namespace docfeed::internal

#endif  // DOCFEED_CODEC_INTERNAL_JPEG_GUARD_H_
