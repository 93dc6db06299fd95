// The Donut image preset: the geometry half of Hugging Face's DonutImageProcessor (PIL path).
//
// DonutImageProcessor.preprocess (transformers 4.x, checked against 4.57.6) turns a PIL image into
// the model's pixel_values in this order (docs/donut-preprocessing.md section 3):
//   convert("RGB") -> [align long axis] -> shortest-edge resize (BILINEAR) -> thumbnail
//   (BICUBIC, reducing_gap 2.0) -> pad to (height, width) with 0 -> rescale -> normalize -> CHW.
// This header covers everything up to the padding, split where the randomness starts:
//   DonutResize    deterministic ("resized" stage); can run once, at pack time.
//   CenterPad / DrawPad + DonutPad   the padding ("padded" stage); DrawPad is the augmentation
//                  and is redrawn per sample and epoch from a seeded PadRng.
// normalize.h holds the last step. Every stage gives exactly the processor's bytes; the parity
// tests (tests/python/test_donut_parity.py) compare against the real transformers.
//
// Grayscale: Pillow resamples every band independently with the same integer maths, so resizing
// an L image and replicating it afterwards equals convert("RGB") followed by the resize. The
// resized stage therefore keeps 1 channel for grayscale input (a third of the work and storage);
// DonutPad and Normalize replicate it into RGB.
//
// Thread safety: all functions are reentrant. A PadRng is a plain value; do not share one between
// threads without a lock.
#ifndef DOCFEED_IMAGING_DONUT_H_
#define DOCFEED_IMAGING_DONUT_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "base/random.h"
#include "codec/codec.h"
#include "docfeed/preprocess.h"
#include "docfeed/status.h"
#include "kernels/resize.h"

namespace docfeed::internal {

// DonutImageProcessor's settings (docfeed/preprocess.h).
using docfeed::DonutConfig;

// Errors: InvalidArgument naming the field: height/width outside 1..65535, a std that is zero or
// not finite in float32, a non-finite mean or rescale_factor, hf_version not 4 or 5, backend
// torchvision with hf_version 4.
Status ValidateDonutConfig(const DonutConfig& config);

// The sizes DonutResize goes through for a w x h input (after the optional rotation).
struct DonutGeometry {
  bool rotate = false;  // align_long_axis turns the image 90 degrees clockwise.
  int32_t aligned_width = 0, aligned_height = 0;
  int32_t resized_width = 0, resized_height = 0;  // after the shortest-edge resize
  int32_t thumb_width = 0, thumb_height = 0;      // after the thumbnail (the "resized" stage)
};

// Computes the processor's sizes with its exact integer/float rules:
//   shortest edge s = min(height, width): portrait (w <= h) -> (s, int(s * h / w)), landscape ->
//   (int(s * w / h), s), Python true division then truncation;
//   thumbnail: th = min(h1, height), tw = min(w1, width); unless both are unchanged, h1 > w1 ->
//   tw = int(w1 * th / h1); w1 > h1 -> th = int(h1 * tw / w1).
// Errors: InvalidArgument if w or h < 1, or a computed side is 0 or above 2^31 - 1 (extreme
// aspect ratios, where Pillow would refuse too).
Result<DonutGeometry> ComputeDonutGeometry(int32_t width, int32_t height,
                                           const DonutConfig& config);

// Whether DonutResize can process a width x height image with `config`: the geometry, or the
// error DonutResize gives for that size (ComputeDonutGeometry's, or ResourceExhausted when an
// intermediate image would exceed Pillow's decompression-bomb limit; a 1x100000 page fails
// the first: its thumbnail would be 0 pixels wide). DonutResize checks through it, and the packer
// asks it about every image it stores unprocessed, so an image the loader would refuse is
// refused at pack time instead (pack/sample_encoder.h).
Result<DonutGeometry> CheckDonutResizable(int32_t width, int32_t height, const DonutConfig& config);
// The two resizes of a processor generation: the shortest-edge resize is BILINEAR without a
// reducing gap in both; the thumbnail is BICUBIC with reducing_gap 2.0 in 4.x and the configured
// BILINEAR without a gap in 5.x; the torchvision backend uses torch's uint8 arithmetic.
struct DonutResampling {
  ResampleFilter thumbnail_filter = ResampleFilter::kBicubic;
  double thumbnail_reducing_gap = 2.0;
  ResampleArithmetic arithmetic = ResampleArithmetic::kPillow;
};
DonutResampling ResamplingOf(const DonutConfig& config);

// What convert("RGB") keeps of a decoded image, before resizing: L stays L (see the header
// comment), LA -> L and RGBA -> RGB drop alpha without compositing, RGB is unchanged. Palette
// images arrive from DecodeImage already expanded to RGB/RGBA, which convert("RGB") equals.
// Errors: InvalidArgument for an empty or inconsistent image.
Result<Image> ToDonutInput(Image image);

// The colour conversion of `config`'s generation: 4.x as ToDonutInput(image); 5.x (convert_to_rgb
// with do_convert_rgb=True) composites LA / RGBA onto opaque white with Pillow's
// alpha_composite arithmetic before dropping alpha (LA stays one channel: each band is
// composited alone). `transparency` is the source's ImageInfo::transparency: under 5.x an L or
// RGB pixel equal to it is transparent (Pillow's convert("RGBA") of a PNG with a tRNS colour
// key) and becomes white; 4.x ignores it, as convert("RGB") does. Errors: as ToDonutInput.
Result<Image> ToDonutInput(Image image, const DonutConfig& config,
                           const std::optional<std::array<uint16_t, 3>>& transparency = {});

// The `transparency` argument for ToDonutInput of the image in `bytes`: its PNG colour key (or
// the transparent index of a GIF that Pillow opens as L) under transformers 5 (a header probe,
// microseconds), nothing under 4.x or for other files.
std::optional<std::array<uint16_t, 3>> DonutTransparencyKey(std::span<const uint8_t> bytes,
                                                            const DonutConfig& config);

// Pillow's alpha_composite of value v with alpha a over opaque white (255), per band:
// AlphaComposite.c with PRECISION_BITS 7.
uint8_t CompositeOnWhite(uint8_t value, uint8_t alpha);

// Rotates 90 degrees clockwise, as np.rot90(image, 3) on an HWC array. REQUIRES: a valid image.
Image RotateClockwise(const Image& image);

// The deterministic stages: align, shortest-edge resize (BILINEAR, no reducing gap), thumbnail
// (ResamplingOf(config)). `image` has 1 (L) or 3 (RGB) channels, as ToDonutInput returns,
// and the result has the same channel count.
// Errors: InvalidArgument for a bad config or image (including 2 or 4 channels), or a size that
// ComputeDonutGeometry refuses.
Result<Image> DonutResize(const Image& image, const DonutConfig& config);
// The same into `out`, whose pixel buffer is reused when large enough: a worker that keeps
// `out` allocates, zeroes and faults in no page-sized memory for pages of the same size.
// REQUIRES: out is not &image.
Status DonutResizeInto(const Image& image, const DonutConfig& config, Image* out);

// A reduced-resolution decode of a larger image (jpeg_scaled.h): `image` holds
// ceil(full_width / scale_denom) x ceil(full_height / scale_denom) pixels that cover the whole
// full_width x full_height picture. scale_denom == 1 means an ordinary full decode.
struct ScaledSource {
  Image image;
  int32_t full_width = 0;
  int32_t full_height = 0;
  int32_t scale_denom = 1;
};

// Like DonutResize on the full image, but starting from a scaled decode: the sizes are computed
// from the full size and the first resize reads the scaled pixels through the box
// (0, 0, full_width / scale_denom, full_height / scale_denom), as Pillow's draft() does. With
// scale_denom 1 this is exactly DonutResize. Otherwise it is an approximation (README.md has its
// measured cost).
Result<Image> DonutResizeScaled(const ScaledSource& source, const DonutConfig& config);

// Where the resized image sits in the padded (height x width) canvas.
struct PadOffsets {
  int32_t top = 0;
  int32_t left = 0;
};

// The processor's centred padding: top = (height - h) // 2, left = (width - w) // 2.
// REQUIRES: 1 <= h <= config.height, 1 <= w <= config.width.
PadOffsets CenterPad(int32_t h, int32_t w, const DonutConfig& config);

// The seeded generator behind random padding: xoshiro256** seeded through SplitMix64. It is not
// numpy's MT19937 (we do not reproduce Python's stream, only its distribution). Copyable value.
class PadRng {
 public:
  explicit PadRng(uint64_t seed);
  // A generator for one sample of one epoch, independent of the order samples are visited in.
  static PadRng ForSample(uint64_t seed, uint64_t epoch, uint64_t sample_index);

  uint64_t Next();
  // Uniform on 0..max_inclusive, unbiased (Lemire's multiply-and-reject), like
  // np.random.randint(0, max_inclusive + 1).
  uint32_t UniformInclusive(uint32_t max_inclusive);

 private:
  Xoshiro256 engine_;
};

// The processor's random padding: top = randint(0, height - h) is drawn first, then
// left = randint(0, width - w), both uniform and inclusive, so every offset is reachable.
// REQUIRES: 1 <= h <= config.height, 1 <= w <= config.width.
PadOffsets DrawPad(int32_t h, int32_t w, const DonutConfig& config, PadRng& rng);

// Writes `resized` (1 or 3 channels) into the 3-channel `out` at `offsets` and fills the rest
// with 0, as np.pad(mode="constant") on uint8. A 1-channel input is replicated into R, G, B.
// REQUIRES: out does not overlap resized.
// Errors: InvalidArgument for bad views, out not 3 channels, or resized not fitting in out at
// the offsets (the processor's pad would raise).
Status DonutPad(const ImageView& resized, PadOffsets offsets, const MutableImageView& out);

// Views over an Image. REQUIRES: image outlives the view.
ImageView ViewOf(const Image& image);
MutableImageView MutableViewOf(Image& image);

}  // namespace docfeed::internal

#endif  // DOCFEED_IMAGING_DONUT_H_
