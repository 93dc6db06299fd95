// The Pix2Struct preset (Pix2StructImageProcessor of transformers 4.x, or
// Pix2StructImageProcessorPil of 5.x): docs/pix2struct-preprocessing.md has the processor's
// steps; imaging/pix2struct.h implements them. Prepare is the decode and the RGB conversion:
// every later step is float arithmetic on the whole page (its own mean and std), so Finish does
// it, and its output has a fixed shape (max_patches rows, zero rows after the page's patches).
// `pack --preprocess pix2struct` stores Prepare's output, the page at its own size.
#include <string>

#include "imaging/pix2struct.h"
#include "preset/preset.h"

namespace docfeed::internal {
namespace {

class Pix2StructPreset final : public Preset {
 public:
  explicit Pix2StructPreset(const Pix2StructConfig& config) : config_(config) {}

  std::string_view name() const override { return kPresetPix2Struct; }
  // flattened_patches of one page: max_patches x (2 + 3 * ph * pw).
  OutputShape output_shape() const override {
    return {1, config_.max_patches, static_cast<int32_t>(Pix2StructRowValues(config_))};
  }
  // The processor standardizes each page with its own statistics: there is no per-channel
  // mean / std, and no uint8-to-float table.
  const std::array<double, 3>& image_mean() const override { return kZero; }
  const std::array<double, 3>& image_std() const override { return kOne; }
  std::vector<float> Float32Table() const override { return {}; }

  // Decode, EXIF orientation, the generation's RGB conversion (4.x image.convert("RGB"): alpha
  // dropped; 5.x: transparency composited onto white). Gray stays one channel (Finish reads it
  // as three).
  Status Prepare(std::span<const uint8_t> bytes, const PrepareRequest& request, Image* out,
                 PrepareTimes* times) const override {
    DonutConfig conversion;
    conversion.hf_version = config_.hf_version;
    DOCFEED_ASSIGN_OR_RETURN(*out, DecodeToRgb(bytes, request, conversion, times));
    return ComputePix2StructGrid(out->height, out->width, config_).status();
  }

  PreprocessInfo StoredInfo() const override {
    PreprocessInfo info;
    info.preset = kPresetPix2Struct;
    info.hf_version = config_.hf_version;
    return info;
  }

  // `pack --preprocess pix2struct` stores Prepare's output, which depends on the generation only
  // (its RGB conversion of transparent pages); max_patches and the patch size are Finish's.
  Status CheckStored(const PreprocessInfo& p, const std::string& dir) const override {
    if (p.preset != kPresetPix2Struct) {
      return RefuseStoredPages(p, dir, kPresetPix2Struct, /*packable=*/true);
    }
    // (The manifest reader admits backend "pil" only for this preset.)
    if (p.hf_version == config_.hf_version) return Status::Ok();
    return FailedPreconditionError(
        dir + " holds pages that the pix2struct preset prepared at pack time for transformers " +
        std::to_string(p.hf_version) + ".x, but the loader was asked for " +
        std::to_string(config_.hf_version) +
        ".x (the generations convert transparent pages to RGB differently); load with "
        "hf_version=" +
        std::to_string(p.hf_version) + ", or re-pack with --preprocess pix2struct --hf-version " +
        std::to_string(config_.hf_version));
  }

  // Standardize, resize, patch: float32 only (the processor's output type); the layout does not
  // apply (rows of patches). The placement is the page.
  Result<Placement> Finish(const ImageView& view, const SampleKey&, DType dtype, OutputLayout,
                           void* out) const override {
    if (view.channels != 1 && view.channels != 3) {
      return CorruptionError("prepared page has " + std::to_string(view.channels) +
                             " channels, expected 1 or 3");
    }
    if (dtype != DType::kFloat32) {
      return InvalidArgumentError(
          "the pix2struct preset writes float32 flattened_patches (as the processor); convert "
          "after loading for another dtype");
    }
    DOCFEED_RETURN_IF_ERROR(Pix2StructPatches(view, config_, static_cast<float*>(out)));
    return Placement{0, 0, view.height, view.width};
  }

 private:
  static constexpr std::array<double, 3> kZero = {0.0, 0.0, 0.0};
  static constexpr std::array<double, 3> kOne = {1.0, 1.0, 1.0};
  const Pix2StructConfig config_;
};

}  // namespace

Result<std::unique_ptr<const Preset>> Pix2StructPresetForStored(const PreprocessInfo& stored) {
  DOCFEED_RETURN_IF_ERROR(RequirePilBackend(stored, "pix2struct"));
  PresetParams params;
  params.name = kPresetPix2Struct;
  params.pix2struct.hf_version = stored.hf_version;
  return MakePix2StructPreset(params);
}

Result<std::unique_ptr<const Preset>> MakePix2StructPreset(const PresetParams& params) {
  DOCFEED_RETURN_IF_ERROR(ValidatePix2StructConfig(params.pix2struct));
  return std::unique_ptr<const Preset>(std::make_unique<Pix2StructPreset>(params.pix2struct));
}

}  // namespace docfeed::internal
