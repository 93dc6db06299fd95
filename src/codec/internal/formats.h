// Per-format entry points behind codec.h's ProbeImage/DecodeImage dispatch. Each takes bytes whose
// magic already matched its format; the dispatcher has checked `limits.max_input_bytes`.
#ifndef DOCFEED_CODEC_INTERNAL_FORMATS_H_
#define DOCFEED_CODEC_INTERNAL_FORMATS_H_

#include <cstdint>
#include <span>

#include "codec/codec.h"
#include "docfeed/status.h"

namespace docfeed::internal {

Result<ImageInfo> ProbeJpeg(std::span<const uint8_t> bytes);
// `report` (may be null) receives libjpeg's tolerated warnings.
Result<Image> DecodeJpeg(std::span<const uint8_t> bytes, const DecodeLimits& limits,
                         DecodeReport* report);
// DecodeJpeg's outcome and report without its pixels (codec.h ValidateImage).
Result<DecodedGeometry> ValidateJpeg(std::span<const uint8_t> bytes, const DecodeLimits& limits,
                                     DecodeReport* report);

// DecodeJpeg's header read and every check it makes before decoding (decodable colour space,
// CheckGeometry, the data-can-hold-the-image floor), with the warnings libjpeg gave reading the
// markers up to the first SOS into `report` (may be null). structure.cc walks the rest.
Result<ImageInfo> OpenJpegHeader(std::span<const uint8_t> bytes, const DecodeLimits& limits,
                                 DecodeReport* report);
// codec.h ValidateImageStructure of a JPEG (structure.cc).
Result<DecodedGeometry> ValidateJpegStructure(std::span<const uint8_t> bytes,
                                              const DecodeLimits& limits, DecodeReport* report);

Result<ImageInfo> ProbePng(std::span<const uint8_t> bytes);
Result<Image> DecodePng(std::span<const uint8_t> bytes, const DecodeLimits& limits);
// Tests only: false makes DecodePng and ValidatePng read every PNG through libspng's own rows,
// as they did before the whole-buffer path (png_inflate.h), so that tests can compare the two.
void SetPngWholeBufferForTesting(bool enabled);
// DecodePng's outcome without its pixels (codec.h ValidateImage).
Result<DecodedGeometry> ValidatePng(std::span<const uint8_t> bytes, const DecodeLimits& limits);

// DecodePng's header read (libspng's IHDR, the IHDR CRC) and the checks it makes before
// decoding (CheckGeometry, the IDAT-can-hold-the-image floor).
Result<ImageInfo> OpenPngHeader(std::span<const uint8_t> bytes, const DecodeLimits& limits);
// codec.h ValidateImageStructure of a PNG (structure.cc).
Result<DecodedGeometry> ValidatePngStructure(std::span<const uint8_t> bytes,
                                             const DecodeLimits& limits);

Result<ImageInfo> ProbeWebp(std::span<const uint8_t> bytes);
Result<Image> DecodeWebp(std::span<const uint8_t> bytes, const DecodeLimits& limits);

Result<ImageInfo> ProbeGif(std::span<const uint8_t> bytes);
Result<Image> DecodeGif(std::span<const uint8_t> bytes, const DecodeLimits& limits);

Result<ImageInfo> ProbePpm(std::span<const uint8_t> bytes);
Result<Image> DecodePpm(std::span<const uint8_t> bytes, const DecodeLimits& limits);

// `frame` is the page (IFD) to read; InvalidArgument when the file has no such page.
Result<ImageInfo> ProbeTiff(std::span<const uint8_t> bytes, int32_t frame);
Result<Image> DecodeTiff(std::span<const uint8_t> bytes, const DecodeLimits& limits, int32_t frame);

// The checks every decoder runs on header geometry before allocating: both sides positive
// (Corruption otherwise) and width * height <= limits.max_pixels (ResourceExhausted otherwise).
Status CheckGeometry(uint64_t width, uint64_t height, const DecodeLimits& limits);

// Validates an image handed to an encoder: 1..4 channels, positive sides, pixel count matching.
Status CheckEncoderInput(const Image& image);

}  // namespace docfeed::internal

#endif  // DOCFEED_CODEC_INTERNAL_FORMATS_H_
