// The Pix2Struct preset (Pix2StructImageProcessor of transformers 4.x, or
// Pix2StructImageProcessorPil of 5.x): docs/pix2struct-preprocessing.md has the processor's
// steps; imaging/pix2struct.h implements them. Prepare is the decode and the RGB conversion:
// every later step is float arithmetic on the whole page (its own mean and std), so Finish does
// it, and its output has a fixed shape (max_patches rows, zero rows after the page's patches).
// `pack --preprocess pix2struct` stores Prepare's output, the page at its own size (the page
// form), or with `--stored-form patches` Finish's output itself: its real rows (rows * cols of
// them, without the zero rows) as a grayscale float PFM, which the loader copies and pads with
// zero rows (EncodeStoredOutput / FinishStoredOutput). The output depends only on the page,
// max_patches, the patch size and the generation, all recorded, so the copy is exact.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "imaging/pix2struct.h"
#include "imaging/recycled_image.h"
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
    RecyclePixels(*out);  // the last page's, which the decode below may reuse
    DOCFEED_ASSIGN_OR_RETURN(*out, DecodeToRgb(bytes, request, conversion, times));
    return ComputePix2StructGrid(out->height, out->width, config_).status();
  }

  PreprocessInfo StoredInfo() const override {
    PreprocessInfo info;
    info.preset = kPresetPix2Struct;
    info.hf_version = config_.hf_version;
    return info;
  }

  // The page form stores Prepare's output, which depends on the generation only (its RGB
  // conversion of transparent pages); max_patches and the patch size are Finish's. The patches
  // form stores Finish's output, which depends on all three.
  Status CheckStored(const PreprocessInfo& p, const std::string& dir) const override {
    if (p.preset != kPresetPix2Struct) {
      return RefuseStoredPages(p, dir, kPresetPix2Struct, /*packable=*/true);
    }
    if (p.patches_form()) return CheckStoredPatches(p, dir);
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

  // Finish in float32, then its first rows * cols rows (the rest are Finish's zero rows) as PFM.
  Result<StoredOutput> EncodeStoredOutput(const ImageView& prepared) const override {
    DOCFEED_ASSIGN_OR_RETURN(const Pix2StructGrid grid,
                             ComputePix2StructGrid(prepared.height, prepared.width, config_));
    const int64_t row_values = Pix2StructRowValues(config_);
    std::vector<float> rows(static_cast<size_t>(config_.max_patches * row_values));
    DOCFEED_RETURN_IF_ERROR(
        Finish(prepared, {}, DType::kFloat32, OutputLayout::kChw, rows.data()).status());
    StoredOutput out;
    out.width = static_cast<int32_t>(row_values);
    out.height = grid.rows * grid.cols;  // <= max_patches (ComputePix2StructGrid)
    DOCFEED_ASSIGN_OR_RETURN(out.bytes, EncodePfm(rows.data(), out.width, out.height));
    return out;
  }

  // The stored rows, then zero rows to max_patches: what Finish writes for the page. The
  // placement is the resized image the rows cover (rows * ph x cols * pw): the page's own size is
  // not stored in this form.
  Result<Placement> FinishStoredOutput(std::span<const uint8_t> stored, DType dtype,
                                       void* out) const override {
    if (dtype != DType::kFloat32) {
      return InvalidArgumentError(
          "the pix2struct preset writes float32 flattened_patches (as the processor); convert "
          "after loading for another dtype");
    }
    DOCFEED_ASSIGN_OR_RETURN(const FloatRowsView rows, ViewPfm(stored));
    const int64_t row_values = Pix2StructRowValues(config_);
    if (rows.width != row_values || rows.height > config_.max_patches) {
      return CorruptionError("stored patches are " + std::to_string(rows.height) + " rows of " +
                             std::to_string(rows.width) + " values, not at most " +
                             std::to_string(config_.max_patches) + " rows of " +
                             std::to_string(row_values));
    }
    float* dst = static_cast<float*>(out);
    CopyFloatRows(rows, 0, rows.height, dst);
    std::memset(
        dst + int64_t{rows.height} * row_values, 0,
        static_cast<size_t>((config_.max_patches - rows.height) * row_values) * sizeof(float));
    // The last real row holds the grid's last row and column ids (1-based), as the processor
    // writes them: [rows, cols, ...].
    // The ids are checked as floats before any conversion (a NaN or a huge value has no int).
    const float* last = dst + int64_t{rows.height - 1} * row_values;
    const float rows_id = last[0], cols_id = last[1];
    const auto most = static_cast<float>(config_.max_patches);
    if (!(rows_id >= 1 && rows_id <= most && cols_id >= 1 && cols_id <= most) ||
        rows_id != std::floor(rows_id) || cols_id != std::floor(cols_id) ||
        static_cast<int64_t>(rows_id) * static_cast<int64_t>(cols_id) != rows.height) {
      return CorruptionError("stored patches: the last row's ids (" + std::to_string(rows_id) +
                             ", " + std::to_string(cols_id) + ") do not make a grid of " +
                             std::to_string(rows.height) + " rows");
    }
    return Placement{0, 0, static_cast<int32_t>(rows_id) * config_.patch_height,
                     static_cast<int32_t>(cols_id) * config_.patch_width};
  }

 private:
  // The patches form: rows made for this max_patches, patch size and generation only.
  Status CheckStoredPatches(const PreprocessInfo& p, const std::string& dir) const {
    if (p.max_patches == config_.max_patches && p.patch_height == config_.patch_height &&
        p.patch_width == config_.patch_width && p.hf_version == config_.hf_version) {
      return Status::Ok();
    }
    auto settings = [](int32_t max_patches, int32_t ph, int32_t pw, int32_t hf_version) {
      return "max_patches " + std::to_string(max_patches) + ", patch size " + std::to_string(ph) +
             "x" + std::to_string(pw) + ", transformers " + std::to_string(hf_version) + ".x";
    };
    return FailedPreconditionError(
        dir + " holds the pix2struct flattened_patches rows made at pack time for " +
        settings(p.max_patches, p.patch_height, p.patch_width, p.hf_version) +
        " (--stored-form patches), but the loader was asked for " +
        settings(config_.max_patches, config_.patch_height, config_.patch_width,
                 config_.hf_version) +
        "; load with the stored settings, or re-pack with --preprocess pix2struct --stored-form "
        "patches --max-patches " +
        std::to_string(config_.max_patches) + " --patch-size " +
        std::to_string(config_.patch_height) + "x" + std::to_string(config_.patch_width) +
        " --hf-version " + std::to_string(config_.hf_version) +
        " (or --stored-form page, which any max_patches loads)");
  }

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
  if (stored.patches_form()) {
    params.pix2struct.max_patches = stored.max_patches;
    params.pix2struct.patch_height = stored.patch_height;
    params.pix2struct.patch_width = stored.patch_width;
  }
  return MakePix2StructPreset(params);
}

Result<std::unique_ptr<const Preset>> MakePix2StructPreset(const PresetParams& params) {
  DOCFEED_RETURN_IF_ERROR(ValidatePix2StructConfig(params.pix2struct));
  return std::unique_ptr<const Preset>(std::make_unique<Pix2StructPreset>(params.pix2struct));
}

}  // namespace docfeed::internal
