// The Nougat image preset: NougatImageProcessor's steps that Donut does not have
// (docs/nougat-preprocessing.md).
//
// The processor (4.57.6's NougatImageProcessor and 5.23.0's NougatImageProcessorPil) runs
//   [RGB] -> crop_margin -> [align long axis] -> shortest-edge resize (BILINEAR)
//   -> thumbnail (BICUBIC, reducing_gap 2.0) -> centred pad with 0 -> rescale -> normalize -> CHW
// Everything after crop_margin is Donut 4.x's (donut.h, normalize.h), in both generations: the
// preset runs those kernels with NougatGeometry(config). This header adds crop_margin:
//   gray = Pillow's convert("L") (ITU-R 601-2 luma in 16-bit fixed point),
//   normalized = (gray - min) / (max - min) * 255 in float64 (numpy's uint8 true division),
//   dark = normalized < 200, the image cropped to the bounding box of the dark pixels;
//   a page of one gray value (all white, all black) is returned as it is.
// A gray page stays one channel (Pillow's luma of (v, v, v) is v), as in donut.h.
//
// Thread safety: all functions are reentrant.
#ifndef DOCFEED_IMAGING_NOUGAT_H_
#define DOCFEED_IMAGING_NOUGAT_H_

#include <array>
#include <cstdint>

#include "docfeed/preprocess.h"
#include "docfeed/status.h"
#include "imaging/donut.h"
#include "kernels/resize.h"

namespace docfeed::internal {

using docfeed::NougatConfig;

// crop_margin's gray_threshold (a method argument the processor never sets).
inline constexpr int kNougatGrayThreshold = 200;

// Errors: InvalidArgument naming the field: height/width outside 1..65535, do_pad false (the
// preset's output is the padded page), a std that is zero or not finite in float32, a non-finite
// mean or rescale_factor, hf_version not 4 or 5.
Status ValidateNougatConfig(const NougatConfig& config);

// The Donut settings whose kernels do Nougat's remaining steps: size, align_long_axis, do_resize,
// do_thumbnail, rescale/normalize, and the 4.x resampling (BICUBIC thumbnail with reducing_gap
// 2.0, which NougatImageProcessorPil keeps in 5.x) with Pillow arithmetic. For DonutResize,
// CenterPad / DrawPad and MakeNormalizeTable.
DonutConfig NougatGeometry(const NougatConfig& config);
// The settings of the colour conversion (ToDonutInput, DonutTransparencyKey): the generation's.
DonutConfig NougatConversion(const NougatConfig& config);

// Pillow's convert("L") of one RGB pixel: (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16.
inline uint8_t PillowLuma(uint8_t r, uint8_t g, uint8_t b) {
  return static_cast<uint8_t>(
      (uint32_t{r} * 19595u + uint32_t{g} * 38470u + uint32_t{b} * 7471u + 0x8000u) >> 16);
}

// Which gray values crop_margin counts as content for a page whose gray values span
// min_gray..max_gray (min_gray < max_gray): dark[v] = float64(v - min) / float64(max - min) * 255
// < 200, false outside min..max. The value min_gray is always dark.
std::array<bool, 256> NougatDarkValues(uint8_t min_gray, uint8_t max_gray);

// The rectangle crop_margin keeps, in the image's pixels.
struct CropBox {
  int32_t x = 0, y = 0;
  int32_t width = 0, height = 0;
};

// crop_margin's box for `image` (1 channel: gray; 3: RGB through PillowLuma): the bounding box
// of its dark pixels, or the whole image when every pixel has the same gray value.
// Errors: InvalidArgument for a bad view (null, empty, channels not 1 or 3, short stride).
Result<CropBox> NougatMarginBox(const ImageView& image);

// crop_margin: `image` (1 or 3 channels) cropped to NougatMarginBox (moved through unchanged when
// the box is the whole image). Errors: as NougatMarginBox.
Result<Image> NougatCropMargin(Image image);

// The deterministic steps after the colour conversion: crop_margin (do_crop_margin), then
// DonutResize with NougatGeometry(config) (align, resize, thumbnail): the "resized" stage.
// `image` has 1 (L) or 3 (RGB) channels, as ToDonutInput returns; so does the result.
// Errors: InvalidArgument for a bad config or image, or a size ComputeDonutGeometry refuses (a
// crop to a thin line can make the thumbnail 0 pixels wide, where the processor fails too);
// ResourceExhausted for an intermediate image beyond Pillow's bomb limit.
Result<Image> NougatResize(Image image, const NougatConfig& config);
// The same into `out`, its pixel buffer reused when large enough (DonutResizeInto).
// REQUIRES: out is not &image.
Status NougatResizeInto(Image image, const NougatConfig& config, Image* out);

}  // namespace docfeed::internal

#endif  // DOCFEED_IMAGING_NOUGAT_H_
