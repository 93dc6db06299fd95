// libjpeg-turbo error plumbing; see internal/jpeg_guard.h for why setjmp lives only here.
#include "codec/internal/jpeg_guard.h"

#include <jerror.h>

#include <cstdlib>
#include <string>

namespace docfeed::internal {
namespace {

[[noreturn]] void FailAndJump(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  err->msg_code = err->pub.msg_code;
  err->pub.format_message(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void OnError(j_common_ptr cinfo) { FailAndJump(cinfo); }

// msg_level -1 is a warning; >= 0 are trace messages (jpeglib.h, emit_message). The end of the
// input is Pillow's truncation; any other warning is counted as libjpeg's own emit_message
// counts it, and decoding goes on (see InstallJpegErrorManager).
void OnMessage(j_common_ptr cinfo, int msg_level) {
  if (msg_level >= 0) return;
  if (cinfo->err->msg_code == JWRN_JPEG_EOF) FailAndJump(cinfo);
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  if (err->pub.num_warnings++ == 0) err->pub.format_message(cinfo, err->first_warning);
}

void OnOutput(j_common_ptr /*cinfo*/) {}  // Never print to stderr.

}  // namespace

jpeg_error_mgr* InstallJpegErrorManager(JpegErrorManager* err) {
  jpeg_error_mgr* pub = jpeg_std_error(&err->pub);
  pub->error_exit = OnError;
  pub->emit_message = OnMessage;
  pub->output_message = OnOutput;
  err->msg_code = 0;
  err->message[0] = '\0';
  err->first_warning[0] = '\0';
  return pub;
}

bool RunJpegStep(JpegErrorManager* err, JpegStep step, void* args) {
  // Only the two arguments (never modified after setjmp) are live across the jump.
  if (setjmp(err->jump) != 0) return false;
  step(args);
  return true;
}

Status JpegFailure(const JpegErrorManager& err) {
  const std::string message(err.message);
  switch (err.msg_code) {
    case JWRN_JPEG_EOF:
    case JERR_INPUT_EOF:
      return CorruptionError("JPEG image file is truncated (" + message + ")");
    case JERR_BAD_PRECISION:
    case JERR_SOF_UNSUPPORTED:
    case JERR_ARITH_NOTIMPL:
    case JERR_NOT_COMPILED:
      return UnsupportedError("JPEG variant not supported: " + message);
    case JERR_OUT_OF_MEMORY:
      return ResourceExhaustedError("JPEG decoder out of memory: " + message);
    default:
      return CorruptionError("corrupt JPEG data: " + message);
  }
}

JpegDecompressor::JpegDecompressor() { cinfo_.err = InstallJpegErrorManager(&err_); }

JpegDecompressor::~JpegDecompressor() {
  if (created_) jpeg_destroy_decompress(&cinfo_);
}

Status JpegDecompressor::Open(const uint8_t* bytes, size_t size_bytes) {
  struct Args {
    j_decompress_ptr cinfo;
    const uint8_t* bytes;
    unsigned long size_bytes;  // NOLINT(google-runtime-int): jpeg_mem_src's type.
  } args{&cinfo_, bytes, size_bytes};
  // jpeg_create_decompress itself can fail (out of memory), so it runs guarded; created_ is set
  // before it because jpeg_destroy_decompress is safe on a partly created object.
  created_ = true;
  return Run(
      [](void* p) {
        auto* a = static_cast<Args*>(p);
        jpeg_create_decompress(a->cinfo);
        jpeg_mem_src(a->cinfo, a->bytes, a->size_bytes);
        jpeg_save_markers(a->cinfo, JPEG_APP0 + 1, 0xffff);
      },
      &args);
}

Status JpegDecompressor::Run(JpegStep step, void* args) {
  if (RunJpegStep(&err_, step, args)) return Status::Ok();
  return JpegFailure(err_);
}

JpegCompressor::JpegCompressor() { cinfo_.err = InstallJpegErrorManager(&err_); }

JpegCompressor::~JpegCompressor() {
  if (created_) jpeg_destroy_compress(&cinfo_);
  std::free(buffer_);  // jpeg_mem_dest allocates with malloc and leaves freeing to us.
}

Status JpegCompressor::Open() {
  struct Args {
    j_compress_ptr cinfo;
    unsigned char** buffer;
    unsigned long* size;  // NOLINT(google-runtime-int): jpeg_mem_dest's type.
  } args{&cinfo_, &buffer_, &buffer_size_};
  created_ = true;
  return Run(
      [](void* p) {
        auto* a = static_cast<Args*>(p);
        jpeg_create_compress(a->cinfo);
        jpeg_mem_dest(a->cinfo, a->buffer, a->size);
      },
      &args);
}

Status JpegCompressor::Run(JpegStep step, void* args) {
  if (RunJpegStep(&err_, step, args)) return Status::Ok();
  return JpegFailure(err_);
}

Status CheckJpegDataCanHoldImage(const jpeg_decompress_struct& cinfo, size_t size_bytes) {
  if (cinfo.progressive_mode || cinfo.arith_code) return Status::Ok();
  uint64_t blocks = 0;
  for (int i = 0; i < cinfo.num_components; ++i) {
    blocks += uint64_t{cinfo.comp_info[i].width_in_blocks} * cinfo.comp_info[i].height_in_blocks;
  }
  if (uint64_t{size_bytes} * 4 < blocks) {
    return CorruptionError("JPEG image file is truncated: " + std::to_string(size_bytes) +
                           " bytes cannot hold " + std::to_string(blocks) + " blocks");
  }
  return Status::Ok();
}

}  // namespace docfeed::internal
