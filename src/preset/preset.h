// The preprocessing seam: a model's image preset, split where the randomness starts.
//
// Every path from stored image bytes to a model input goes through a Preset: the loader's
// workers, `docfeed pack --preprocess`, `docfeed preprocess` and the benchmarks. A preset has
//   Prepare   the deterministic part (decode, EXIF orientation, colour conversion, resize):
//             stored bytes -> the "prepared" page. It can run once, at pack time, when the
//             dataset stores its output (`pack --preprocess NAME`); its parameters are then
//             recorded in the manifest (StoredInfo) and checked at load time (CheckStored).
//   Finish    the per-epoch part (padding, with its per-sample randomness, rescale, normalize,
//             layout): prepared page -> one sample's slot of a batch buffer.
// and says what it yields (OutputShape). Adding a model means adding a Preset and a line in
// MakePreset; the loader and the packer do not change.
//
// Thread safety: a Preset is immutable after creation; Prepare and Finish are const and may be
// called from any number of threads at once, each with its own scratch Image.
#ifndef DOCFEED_PRESET_PRESET_H_
#define DOCFEED_PRESET_PRESET_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codec/codec.h"
#include "docfeed/preprocess.h"
#include "docfeed/status.h"
#include "format/manifest.h"
#include "imaging/donut.h"
#include "imaging/normalize.h"

namespace docfeed::internal {

// The preset vocabulary of docfeed/preprocess.h.
using docfeed::OutputShape;
using docfeed::PadMode;
using docfeed::PageGrid;
using docfeed::Placement;
using docfeed::PrepareMode;
using docfeed::SampleKey;
// The parameters of a preset, in the processor's own terms.
using PresetParams = docfeed::PresetOptions;

// Where Prepare's time went, in nanoseconds, for the loader's statistics. A preset that decodes
// and resizes in one fused pass reports it as decode_resize only.
struct PrepareTimes {
  uint64_t decode = 0;
  uint64_t resize = 0;
  uint64_t decode_resize = 0;
};

// What Prepare needs: the public options (orientation, exact or fast) and the decode limits;
// `report` (optional, not owned) receives the warnings the decode tolerated (codec.h
// DecodeReport; a kFast DCT-scaled JPEG decode reports none).
struct PrepareRequest : docfeed::PrepareOptions {
  DecodeLimits limits;
  DecodeReport* report = nullptr;
};

class Preset {
 public:
  virtual ~Preset() = default;

  virtual std::string_view name() const = 0;
  virtual OutputShape output_shape() const = 0;
  // The normalization Finish applies to float outputs (per channel, as the processor's
  // image_mean / image_std); a uint8 consumer normalizing elsewhere uses these.
  virtual const std::array<double, 3>& image_mean() const = 0;
  virtual const std::array<double, 3>& image_std() const = 0;
  // The float32 output of each uint8 value v of channel c, at [c * 256 + v] (docfeed/
  // preprocess.h Preset::NormalizeTable).
  virtual std::vector<float> Float32Table() const = 0;

  // The deterministic part: stored bytes -> prepared page, written into `out` (its pixel buffer
  // is reused when large enough, so a worker that keeps `out` allocates nothing in steady
  // state). `times` (optional) receives where the time went.
  // Errors: those of decoding (Corruption, Unsupported, ResourceExhausted) and of the preset's
  // geometry (InvalidArgument), without the file or sample name, which the caller adds.
  virtual Status Prepare(std::span<const uint8_t> bytes, const PrepareRequest& request, Image* out,
                         PrepareTimes* times = nullptr) const = 0;

  // What a dataset that stores Prepare's output records in its manifest.
  virtual PreprocessInfo StoredInfo() const = 0;
  // OK when pages that a preset prepared at pack time (`stored`, from the manifest of `dir`)
  // are what this preset's Prepare would give, so Finish can take them as they are.
  // Errors: FailedPrecondition naming the dataset, what it holds and how to re-pack.
  virtual Status CheckStored(const PreprocessInfo& stored, const std::string& dir) const = 0;

  // Bytes of one sample's output in `dtype` (output_shape() elements; for a variable-size
  // preset the largest output, which is what a slot must hold).
  size_t SampleBytes(DType dtype) const;
  // Whether the output's size follows the page (Qwen2-VL: one row per patch). Finish then
  // writes OutputBytesFor(prepared height, width) bytes, at most SampleBytes.
  virtual bool variable_size() const { return false; }
  // For a variable-size preset: whether a batch pads each page's output with zeros to the
  // batch's largest, as the processor does (Idefics3's pixel_values (B, most tiles, 3, S, S));
  // otherwise the outputs follow one another (Qwen2-VL's sum of patches).
  virtual bool pads_batch() const { return false; }
  virtual size_t OutputBytesFor(int32_t /*height*/, int32_t /*width*/, DType dtype) const {
    return SampleBytes(dtype);
  }
  // What Finish will write for a stored image of stored_width x stored_height (the index's
  // size; `prepared`: a page this preset's Prepare stored at pack time, else an original, whose
  // EXIF orientation may swap the sides), so that a loader can size its slots for the pages of
  // one dataset rather than the largest the settings allow. Fixed-size presets and sizes that
  // Prepare would refuse: SampleBytes. Never more than SampleBytes.
  virtual size_t PredictOutputBytes(int32_t /*stored_width*/, int32_t /*stored_height*/,
                                    bool /*prepared*/, DType dtype) const {
    return SampleBytes(dtype);
  }

  // The grid of vision tokens of a page of height x width as decoded (docfeed/preprocess.h
  // PageGrid). Presets whose output has no token grid refuse (InvalidArgument).
  virtual Result<PageGrid> GridOf(int32_t height, int32_t width) const;

  // The per-epoch part: writes one sample's output, every byte of it, at `out` (SampleBytes
  // bytes, aligned for `dtype`). `prepared` is Prepare's output (or a stored page that
  // CheckStored accepted). Random choices are drawn from `key`.
  // Errors: Corruption when `prepared` cannot come from Prepare (channels, a size larger than
  // the output); InvalidArgument for a bad view.
  virtual Result<Placement> Finish(const ImageView& prepared, const SampleKey& key, DType dtype,
                                   OutputLayout layout, void* out) const = 0;

  // A stored form that holds the final output (Pix2Struct's patches form, PreprocessInfo::
  // patches_form(): its output has no per-epoch randomness). What pack stores for a page that
  // Prepare gave: the output's real rows in the container the format names (docs/format.md
  // section 10), with the geometry the index records. Presets without such a form refuse
  // (Unsupported).
  struct StoredOutput {
    std::vector<uint8_t> bytes;
    int32_t width = 0;   // of the stored container (values a row)
    int32_t height = 0;  // rows
  };
  virtual Result<StoredOutput> EncodeStoredOutput(const ImageView& prepared) const;
  // The loader's side of it: writes one sample's output, every byte, at `out` (SampleBytes
  // bytes, as Finish) from `stored`, bytes EncodeStoredOutput made for a preset that CheckStored
  // accepted. Errors: Corruption for bytes that cannot be such an output (container, sizes);
  // InvalidArgument for a dtype the preset does not write; Unsupported for presets without the
  // form.
  virtual Result<Placement> FinishStoredOutput(std::span<const uint8_t> stored, DType dtype,
                                               void* out) const;
};

// Preset names besides kPreprocessDonut (format/manifest.h).
inline constexpr const char* kPresetQwen2VL = kPreprocessQwen2VL;
inline constexpr const char* kPresetQwen25VL = kPreprocessQwen25VL;

// The Qwen2-VL family (qwen_vl_preset.cc): whether `name` is one of its names, and the preset.
bool IsQwenVLPreset(std::string_view name);
Result<std::unique_ptr<const Preset>> MakeQwenVLPreset(const PresetParams& params);
// The Qwen2-VL preset whose Prepare made pages recorded as `stored` (temporal_patch_size, which
// only Finish uses, and the normalization are the defaults).
Result<std::unique_ptr<const Preset>> QwenVLPresetForStored(const PreprocessInfo& stored);

// The Nougat preset (nougat_preset.cc).
inline constexpr char kPresetNougat[] = "nougat";  // = kPreprocessNougat
Result<std::unique_ptr<const Preset>> MakeNougatPreset(const PresetParams& params);
// The Nougat preset whose Prepare made pages recorded as `stored` (the processor's default
// steps; the normalization is the default).
Result<std::unique_ptr<const Preset>> NougatPresetForStored(const PreprocessInfo& stored);

// The Idefics3 / SmolVLM / SmolDocling preset (idefics3_preset.cc).
inline constexpr char kPresetIdefics3[] = "idefics3";  // = kPreprocessIdefics3
Result<std::unique_ptr<const Preset>> MakeIdefics3Preset(const PresetParams& params);
// The Idefics3 preset whose Prepare made pages recorded as `stored` (its longest_edge,
// max_image_size, do_image_splitting and generation; the normalization is the default).
Result<std::unique_ptr<const Preset>> Idefics3PresetForStored(const PreprocessInfo& stored);

// The Pix2Struct preset (pix2struct_preset.cc).
inline constexpr char kPresetPix2Struct[] = "pix2struct";  // = kPreprocessPix2Struct
Result<std::unique_ptr<const Preset>> MakePix2StructPreset(const PresetParams& params);
// The Pix2Struct preset whose Prepare made pages recorded as `stored` (its generation; max_patches
// and the patch size, which only Finish uses, are the defaults, or, for the patches form, those
// the rows were made for).
Result<std::unique_ptr<const Preset>> Pix2StructPresetForStored(const PreprocessInfo& stored);

// `page` turned by EXIF `orientation` (codec.h ApplyOrientation; 0 and 1 leave it), its old
// pixel storage recycled for the thread's next page.
void OrientPage(int32_t orientation, Image& page);

// What every preset's Prepare starts with: decode `bytes`, apply request.orientation, then the
// RGB conversion of `conversion`'s processor generation (donut.h ToDonutInput: 4.x drops alpha,
// 5.x composites it onto white; gray stays one channel). The time goes to times->decode.
// Errors: DecodeImage's and ToDonutInput's.
Result<Image> DecodeToRgb(std::span<const uint8_t> bytes, const PrepareRequest& request,
                          const DonutConfig& conversion, PrepareTimes* times);

// CheckStored of pages `preset` cannot take (another preset prepared them: `stored`):
// FailedPrecondition naming `dir`, both presets and what to load instead; with `packable` (the
// presets `pack --preprocess` offers) also how to re-pack.
Status RefuseStoredPages(const PreprocessInfo& stored, const std::string& dir,
                         std::string_view preset, bool packable = false);

// For the presets that reproduce the PIL processors only (Nougat, Idefics3, Pix2Struct): OK when
// pages recorded as `stored` were prepared with backend "pil", else InvalidArgument naming
// `preset` and the backend.
Status RequirePilBackend(const PreprocessInfo& stored, std::string_view preset);

// The f32 part of `table` as Preset::Float32Table returns it: channel after channel.
std::vector<float> FlatFloat32Table(const NormalizeTable& table);

// Creates the preset `params.name` names.
// Errors: InvalidArgument for an unknown name or parameters the preset refuses (naming them).
Result<std::unique_ptr<const Preset>> MakePreset(const PresetParams& params);

// The preset whose Prepare made (or, at pack time, will make) pages recorded as `stored` in a
// manifest. Errors: InvalidArgument for an unknown preset or bad sizes.
Result<std::unique_ptr<const Preset>> PresetForStored(const PreprocessInfo& stored);

}  // namespace docfeed::internal

#endif  // DOCFEED_PRESET_PRESET_H_
