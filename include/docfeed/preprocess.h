// docfeed's model presets: a model's image preprocessing, exactly as its Hugging Face processor
// does it, split where the randomness starts.
//
//   Prepare  the deterministic part (decode, EXIF orientation, colour conversion, resize):
//            image file bytes -> the "prepared" page. `docfeed pack --preprocess NAME` runs it
//            once, at pack time, and stores the result.
//   Finish   the per-epoch part (padding with per-sample randomness, rescale, normalize,
//            layout): prepared page -> one sample's model input, written where the caller says
//            (the loader: a slot of a batch buffer).
//
// The loader, the packer and `docfeed preprocess` all run presets through this interface.
// Donut (DonutImageProcessor: docs/donut-preprocessing.md), in two processor generations
// (transformers 4.x, the default, and 5.x with its PIL or torchvision backend), and Qwen2-VL /
// Qwen2.5-VL (Qwen2VLImageProcessor: docs/qwen-vl-preprocessing.md), whose output size follows
// the page, Nougat (NougatImageProcessor: docs/nougat-preprocessing.md), and Idefics3 / SmolVLM /
// SmolDocling (Idefics3ImageProcessor: docs/idefics3-preprocessing.md), whose tile count follows
// the page, and Pix2Struct (Pix2StructImageProcessor: docs/pix2struct-preprocessing.md), whose
// output is max_patches rows of flattened patches.
//
// Thread safety: a Preset is immutable; copies share it. Prepare and Finish may run on any
// number of threads at once (each with its own output).
#ifndef DOCFEED_PREPROCESS_H_
#define DOCFEED_PREPROCESS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "docfeed/image.h"
#include "docfeed/status.h"

namespace docfeed {

namespace internal {
class Preset;
}  // namespace internal

// Which transformers generation's DonutImageProcessor a Donut preset reproduces, and for 5.x
// which of its backends (docs/donut-preprocessing.md section 6):
//   4  DonutImageProcessor of 4.x (checked against 4.57.6): thumbnail BICUBIC with
//      reducing_gap 2.0, alpha dropped. Only backend kPil (4.x's fast processor is not covered).
//   5  transformers 5.x (checked against 5.23.0): thumbnail with the configured BILINEAR and no
//      reducing gap, transparency composited onto white (do_convert_rgb=True); kPil is
//      DonutImageProcessorPil, kTorchvision is DonutImageProcessor on the CPU (torch's int16
//      resampling arithmetic and fused rescale/normalize).
// Datasets and manifests that do not say are 4.x / pil.
enum class DonutBackend { kPil, kTorchvision };

// "pil" / "torchvision".
std::string_view DonutBackendName(DonutBackend backend);
// The inverse of DonutBackendName. Errors: InvalidArgument naming `backend` and the choices.
Result<DonutBackend> ParseDonutBackend(std::string_view name);

// DonutImageProcessor's settings, under its own names. The defaults are the processor's (size
// 2560 x 1920, IMAGENET_STANDARD mean/std 0.5); naver-clova-ix/donut-base-finetuned-cord-v2
// uses height 1280, width 960. `height`/`width` are the processor's size["height"] /
// size["width"]; a legacy list `size=[a, b]` in a config means width a, height b.
struct DonutConfig {
  int32_t height = 2560;
  int32_t width = 1920;
  bool align_long_axis = false;  // do_align_long_axis
  bool do_resize = true;
  bool do_thumbnail = true;
  bool do_pad = true;
  bool do_rescale = true;
  bool do_normalize = true;
  double rescale_factor = 1.0 / 255.0;
  // numpy turns these Python floats into float32 arrays before normalizing; so does docfeed.
  std::array<double, 3> mean = {0.5, 0.5, 0.5};
  std::array<double, 3> std = {0.5, 0.5, 0.5};
  // The processor generation (4 or 5) and, for 5, its backend (see DonutBackend).
  int32_t hf_version = 4;
  DonutBackend backend = DonutBackend::kPil;
};

// Qwen2VLImageProcessor's settings (Qwen2-VL and Qwen2.5-VL share it), under its own names; the
// defaults are the public checkpoints' (Qwen/Qwen2-VL-7B-Instruct, Qwen/Qwen2.5-VL-7B-Instruct:
// min_pixels 56*56, max_pixels 28*28*16384, patch 14, temporal patch 2, merge 2, OpenAI CLIP
// mean/std). docs/qwen-vl-preprocessing.md has the processor's steps:
//   smart_resize (each side a multiple of patch_size * merge_size, the area within
//   [min_pixels, max_pixels], the aspect ratio kept) -> BICUBIC resize -> rescale -> normalize
//   -> patches of temporal_patch_size identical frames, flattened in merge order.
// One page gives (h / patch_size) * (w / patch_size) rows of 3 * temporal_patch_size *
// patch_size^2 values: a variable-size output (Preset::variable_size()).
// Generations (hf_version): 4 = Qwen2VLImageProcessor of 4.x (checked against 4.57.6): its
// convert("RGB") drops alpha; 5 = transformers 5.x (checked against 5.23.0): transparency
// composited onto white, and `backend` kPil = Qwen2VLImageProcessorPil, kTorchvision =
// Qwen2VLImageProcessor (torchvision) on the CPU: torch's uint8 BICUBIC and fused
// rescale/normalize, as for Donut (DonutBackend is the processors' backend choice).
struct QwenVLConfig {
  int64_t min_pixels = 56 * 56;
  int64_t max_pixels = 28 * 28 * 16384;
  int32_t patch_size = 14;
  int32_t temporal_patch_size = 2;
  int32_t merge_size = 2;
  bool do_resize = true;
  bool do_rescale = true;
  bool do_normalize = true;
  double rescale_factor = 1.0 / 255.0;
  std::array<double, 3> mean = {0.48145466, 0.4578275, 0.40821073};
  std::array<double, 3> std = {0.26862954, 0.26130258, 0.27577711};
  int32_t hf_version = 4;
  DonutBackend backend = DonutBackend::kPil;
};

// NougatImageProcessor's settings, under its own names; the defaults are the processor's, which
// the public checkpoint facebook/nougat-base's preprocessor_config.json repeats (size 896 x 672,
// BILINEAR, IMAGENET_DEFAULT mean/std). docs/nougat-preprocessing.md has the processor's steps:
//   crop_margin (the bounding box of the page's dark pixels, in gray normalized to its own
//   min..max) -> [align long axis] -> shortest-edge resize (BILINEAR) -> thumbnail (BICUBIC,
//   reducing_gap 2.0) -> centred pad to height x width with 0 -> rescale -> normalize -> CHW.
// The output is one padded page of a fixed shape, 3 x height x width. `height`/`width` are
// size["height"] / size["width"]. Generations (hf_version): 4 = NougatImageProcessor of 4.x
// (checked against 4.57.6), which takes RGB only: docfeed converts as image.convert("RGB") does
// (alpha dropped); 5 = NougatImageProcessorPil of 5.x (checked against 5.23.0) with
// do_convert_rgb=True: transparency composited onto white. Both resize the same way. Only the
// PIL path. The preset always pads (do_pad must stay true: the output has a fixed shape).
struct NougatConfig {
  int32_t height = 896;
  int32_t width = 672;
  bool do_crop_margin = true;
  bool align_long_axis = false;  // do_align_long_axis
  bool do_resize = true;
  bool do_thumbnail = true;
  bool do_pad = true;
  bool do_rescale = true;
  bool do_normalize = true;
  double rescale_factor = 1.0 / 255.0;
  std::array<double, 3> mean = {0.485, 0.456, 0.406};  // IMAGENET_DEFAULT_MEAN
  std::array<double, 3> std = {0.229, 0.224, 0.225};   // IMAGENET_DEFAULT_STD
  int32_t hf_version = 4;
};

// Idefics3ImageProcessor's settings (Idefics3, SmolVLM and SmolDocling share it), under its own
// names. The defaults are ds4sd/SmolDocling-256M-preview's (size longest_edge 2048, max_image_size
// longest_edge 512, as its preprocessor_config.json is documented to set them; the processor
// class's own defaults are 1456 and 364, Idefics3-8B's). docs/idefics3-preprocessing.md has the
// processor's steps:
//   resize so the longest edge is longest_edge (LANCZOS) -> resize each side up to a multiple of
//   max_image_size (LANCZOS) -> rows x cols tiles of max_image_size^2 plus the whole page resized
//   to max_image_size^2 (LANCZOS) -> RGB -> rescale -> normalize, CHW.
// One page gives rows * cols + 1 tiles, or one tile when the page fits in one (rows = cols = 0):
// a variable-size output (Preset::variable_size()). `longest_edge` is size["longest_edge"] and
// `max_image_size` is max_image_size["longest_edge"]. Generations (hf_version): 4 =
// Idefics3ImageProcessor of 4.x (checked against 4.57.6), which resizes before converting to RGB:
// an RGBA page is resized with premultiplied alpha and composited onto white afterwards; it
// raises on gray, palette and two-band pages, for which docfeed gives what it returns for
// image.convert("RGB"), and reads CMYK as RGBA, which docfeed refuses. 5 =
// Idefics3ImageProcessorPil of 5.x (checked against 5.23.0): RGB first (transparency composited
// onto white), then the same resizes. Only the PIL path (5.x's default torchvision
// Idefics3ImageProcessor is not reproduced). do_resize must stay true (it bounds the tile count).
struct Idefics3Config {
  int32_t longest_edge = 2048;
  int32_t max_image_size = 512;
  bool do_image_splitting = true;
  bool do_resize = true;
  bool do_rescale = true;
  bool do_normalize = true;
  double rescale_factor = 1.0 / 255.0;
  std::array<double, 3> mean = {0.5, 0.5, 0.5};  // IMAGENET_STANDARD_MEAN
  std::array<double, 3> std = {0.5, 0.5, 0.5};   // IMAGENET_STANDARD_STD
  int32_t hf_version = 4;
};

// Pix2StructImageProcessor's settings, under its own names; the defaults are the processor's,
// which the public checkpoints (google/pix2struct-base and its fine-tunes) keep: max_patches
// 2048, patch_size 16 x 16. docs/pix2struct-preprocessing.md has the processor's steps:
//   RGB -> per-image standardization (the page's own mean and std over every value, std floored
//   at 1 / sqrt(values)) -> aspect-preserving resize (torch's antialiased bilinear on float32)
//   to rows x cols patches, rows * cols <= max_patches -> each patch flattened (row, column,
//   channel order) after its 1-based row and column ids -> zero rows up to max_patches.
// The output has a fixed shape, max_patches x (2 + 3 * patch_height * patch_width) float32
// ("flattened_patches"); attention_mask is derived from it as the processor does. Generations
// (hf_version): 4 = Pix2StructImageProcessor of 4.x (checked against 4.57.6: RGB conversion as
// image.convert("RGB"), alpha dropped); 5 = Pix2StructImageProcessorPil of 5.x (checked against
// 5.23.0: transparency composited onto white). Only the PIL/numpy path (5.x's default
// torchvision Pix2StructImageProcessor uses torch's unbiased std: docs/pix2struct-
// preprocessing.md). is_vqa (a header rendered with a downloaded font) and do_normalize=False
// (which sends uint8 pixels through torch's uint8 resize) are not offered.
struct Pix2StructConfig {
  int32_t max_patches = 2048;
  int32_t patch_height = 16;  // patch_size["height"]
  int32_t patch_width = 16;   // patch_size["width"]
  int32_t hf_version = 4;
};

// The processor's padding: random offsets (random_padding=True, the training default) or
// centred.
enum class PadMode { kRandom, kCenter };

// Which preset, with its parameters: "donut" reads `donut` and `pad`; "qwen2-vl" and
// "qwen2.5-vl" (the same processor) read `qwen_vl`; "nougat" reads `nougat` and `pad` (the
// processor pads centred; kRandom is docfeed's augmentation, as for Donut); "idefics3" reads
// `idefics3`; "pix2struct" reads `pix2struct`. Each preset reads the struct it knows.
struct PresetOptions {
  std::string name = "donut";
  DonutConfig donut;
  PadMode pad = PadMode::kRandom;
  QwenVLConfig qwen_vl;
  NougatConfig nougat;
  Idefics3Config idefics3;
  Pix2StructConfig pix2struct;
};

// How Prepare decodes. kFast trades exactness for speed where a preset allows it (Donut: a
// DCT-scaled JPEG decode); everything that must equal the processor uses kExact.
enum class PrepareMode { kExact, kFast };

struct PrepareOptions {
  // EXIF orientation (1..8) to apply first, as `datasets` does when it decodes; 1 = none, as
  // `PIL.Image.open` gives for every format but TIFF (see OrientationAppliedOnOpen).
  int32_t orientation = 1;
  PrepareMode mode = PrepareMode::kExact;
};

// The orientation `PIL.Image.open(...).load()` itself applies to these encoded bytes: a TIFF's
// Orientation tag (Pillow's TIFF loader turns the page as it loads it), 1 for every other format
// and for bytes that do not probe. Pass it as PrepareOptions::orientation to reproduce
// `processor(Image.open(path))` rather than what `datasets` gives. Reentrant.
int32_t OrientationAppliedOnOpen(std::span<const uint8_t> bytes);

// The size of the page in image file `bytes` as `datasets` decodes it: after the EXIF
// orientation (a quarter turn swaps the sides), from the headers only (microseconds, no pixel
// decoded). Errors: those of reading the headers (Unsupported, Corruption).
struct PageSize {
  int32_t height = 0;
  int32_t width = 0;
};
Result<PageSize> ProbePageSize(std::span<const uint8_t> bytes);

// The grid of vision tokens a page gives, which decides how many image tokens a chat template's
// placeholder expands to:
//   Qwen2-VL:  temporal x rows x cols patches = image_grid_thw (temporal 1 for an image); the
//              placeholder becomes rows * cols / merge_size^2 image tokens;
//   Idefics3:  rows x cols tiles plus the global image (rows = cols = 0: the page is one tile),
//              the processor's image_rows / image_cols.
struct PageGrid {
  int32_t temporal = 1;
  int32_t rows = 0;
  int32_t cols = 0;
};

// A sample's identity, from which Finish draws its randomness: a function of these only.
struct SampleKey {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t sample_id = 0;
};

// Where Finish put the prepared page inside the output: pad offsets and the page's size.
struct Placement {
  int32_t top = 0, left = 0;
  int32_t height = 0, width = 0;
};

// One sample's model input: channels x height x width (kChw) or height x width x channels.
struct OutputShape {
  int32_t channels = 3;
  int32_t height = 0;
  int32_t width = 0;
};

class Preset {
 public:
  // Errors: InvalidArgument for an unknown name or parameters the preset refuses (naming them).
  static Result<Preset> Create(const PresetOptions& options);

  std::string_view name() const;
  // The output's shape; for a variable-size preset the largest any page can give (Qwen2-VL:
  // channels 1, height = patches, width = values per patch).
  OutputShape output_shape() const;
  // Bytes of one sample's output in `dtype` (for a variable-size preset, the largest).
  size_t SampleBytes(DType dtype) const;
  // Whether pages give outputs of different sizes (Qwen2-VL's patch count follows the page).
  bool variable_size() const;
  // Bytes Finish wrote for a page it placed at `placement` (SampleBytes for fixed-size presets).
  size_t OutputBytes(const Placement& placement, DType dtype) const;
  // The normalization of float outputs (per channel, the processor's image_mean / image_std).
  const std::array<double, 3>& image_mean() const;
  const std::array<double, 3>& image_std() const;
  // What Finish writes in float32 for each uint8 value v of channel c (after the preset's
  // rescale and normalization), at [c * 256 + v]: 3 x 256 values. A consumer that takes uint8
  // batches and normalizes elsewhere (docfeed's GPU stage) looks its values up here to give the
  // same floats bit for bit.
  std::vector<float> NormalizeTable() const;

  // The grid of a page of height x width as decoded (PageSize), as the processor computes it
  // from the size alone. Errors: InvalidArgument for a size the preset refuses (an extreme
  // aspect ratio) and for a preset without a token grid (donut, nougat, pix2struct).
  Result<PageGrid> GridOf(int32_t height, int32_t width) const;

  // Image file bytes (JPEG, PNG, WebP, PPM) -> the prepared page in `out`, whose pixel buffer is
  // reused when large enough.
  // Errors: Corruption / Unsupported / ResourceExhausted from decoding, InvalidArgument from the
  // preset's geometry (an extreme aspect ratio); the caller adds the file name.
  Status Prepare(std::span<const uint8_t> bytes, const PrepareOptions& options, Image* out) const;

  // Writes every byte of one sample's output (SampleBytes(dtype) bytes, aligned for dtype) at
  // `out` from a prepared page.
  // Errors: Corruption when `prepared` cannot be Prepare's output (channels, larger than the
  // output).
  Result<Placement> Finish(const Image& prepared, const SampleKey& key, DType dtype,
                           OutputLayout layout, void* out) const;

 private:
  explicit Preset(std::shared_ptr<const internal::Preset> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const internal::Preset> impl_;
};

}  // namespace docfeed

#endif  // DOCFEED_PREPROCESS_H_
