// Turns one source image file into the bytes a shard stores: validates it as a full decode
// would (so a corrupt or truncated file is caught at pack time, not in training; with `keep`
// through codec.h's ValidateImage, which refuses and warns exactly as DecodeImage without
// producing pixels), then keeps the original bytes or re-encodes them (PNG, lossless WebP, JPEG at
// a quality), or, with
// `--preprocess donut`, stores the Donut "resized" stage as binary PGM/PPM.
#ifndef DOCFEED_PACK_SAMPLE_ENCODER_H_
#define DOCFEED_PACK_SAMPLE_ENCODER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codec/codec.h"
#include "docfeed/status.h"
#include "format/index.h"
#include "format/manifest.h"
#include "preset/preset.h"

namespace docfeed::internal {

enum class CodecChoice { kKeep, kPng, kWebp, kJpeg };

// Parses "keep", "png", "webp", "jpeg".
Result<CodecChoice> ParseCodecChoice(std::string_view name);
std::string_view CodecChoiceName(CodecChoice choice);

// How a source stored as it is (kKeep) is validated: kFull runs codec.h ValidateImage (refuses and
// warns exactly as DecodeImage); kStructure runs ValidateImageStructure (JPEG and PNG container
// structure and checksums without entropy decoding or inflating; other formats as kFull).
// Re-encoding and preprocessing always decode fully. kAuto is Pack's default and is resolved by
// Pack and PackFrom (ResolveValidation, packer.h) before anything is encoded.
enum class ValidationMode { kFull, kStructure, kAuto };

// Parses "full", "structure" or "auto".
Result<ValidationMode> ParseValidationMode(std::string_view name);

struct EncodeOptions {
  CodecChoice codec = CodecChoice::kKeep;
  ValidationMode validation = ValidationMode::kFull;
  int jpeg_quality = 90;
  int png_level = 6;
  DecodeLimits limits;
  // A preset ("donut"): store its Prepare output (preset/preset.h: EXIF orientation, colour
  // conversion, resize) as PPM (P5 for grayscale pages, P6 for RGB); `codec` is then ignored.
  // `preset` is PresetForStored(preprocess), made once by the caller (EncodeSample makes it
  // per call when it is null). With preprocess.patches_form() (Pix2Struct's patches form) the
  // preset's final output is stored instead, as grayscale float PFM (codec pfm).
  PreprocessInfo preprocess;
  std::shared_ptr<const Preset> preset;
  bool keep_original = false;  // also return the source bytes in EncodedImage::original
};

struct EncodedImage {
  std::vector<uint8_t> bytes;  // what the shard stores
  StoredCodec codec = StoredCodec::kJpeg;
  uint32_t width = 0;  // of the stored bitstream
  uint32_t height = 0;
  uint8_t channels = 0;  // as the stored bitstream decodes
  // EXIF orientation a reader must still apply (1..8): the source's for `keep`, 1 after a
  // re-encode (which applies it to the pixels, as `datasets` does when it decodes).
  uint8_t orientation = 1;
  std::vector<uint8_t> original;  // the source file, with EncodeOptions::keep_original
  // What the source's decode tolerated (codec.h DecodeReport: libjpeg warnings about corrupt
  // data that Pillow decodes anyway); the packer reports such samples, or refuses them when
  // strict.
  DecodeReport decode_report;
};

// REQUIRES: `source` is the whole file. Errors carry no file name; the caller adds it.
// For kJpeg, alpha is dropped (LA -> L, RGBA -> RGB) as Pillow's convert("RGB") does.
// A GIF is never stored as it is: with kKeep its frame 0 (as DecodeImage returns it) is stored
// as a lossless PNG, since shards hold JPEG, PNG, WebP and PPM only (docs/format.md).
// With a preprocess preset, errors also cover the resize (e.g. an extreme aspect ratio).
Result<EncodedImage> EncodeSample(std::vector<uint8_t> source, const EncodeOptions& options);

}  // namespace docfeed::internal

#endif  // DOCFEED_PACK_SAMPLE_ENCODER_H_
