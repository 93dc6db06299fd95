// The Donut preset (DonutImageProcessor of transformers 4.x, or 5.x with its PIL or torchvision
// backend): docs/donut-preprocessing.md has the processor's steps; imaging/ implements each of them
// bit-exactly. This file only sequences them.
#include <utility>

#include "base/clock.h"
#include "imaging/jpeg_scaled.h"
#include "imaging/recycled_image.h"
#include "preset/preset.h"

namespace docfeed::internal {
namespace {

std::string Describe(int32_t height, int32_t width, bool align, int32_t hf_version,
                     std::string_view backend) {
  return std::to_string(height) + "x" + std::to_string(width) + (align ? " with" : " without") +
         " align_long_axis, transformers " + std::to_string(hf_version) + ".x " +
         std::string(backend);
}

class DonutPreset final : public Preset {
 public:
  DonutPreset(const DonutConfig& config, PadMode pad, NormalizeTable table)
      : config_(config), pad_(pad), table_(std::move(table)) {}

  std::string_view name() const override { return kPreprocessDonut; }
  OutputShape output_shape() const override { return {3, config_.height, config_.width}; }
  const std::array<double, 3>& image_mean() const override { return config_.mean; }
  const std::array<double, 3>& image_std() const override { return config_.std; }
  std::vector<float> Float32Table() const override { return FlatFloat32Table(table_); }

  // EXIF orientation (as `datasets` applies it), convert("RGB") keeping L as L, then align +
  // shortest-edge resize + thumbnail. A page that needs no rotation goes through the streamed
  // decode + resize (imaging/jpeg_scaled.h), which for JPEGs never holds the full-size image;
  // the bytes are the same either way.
  Status Prepare(std::span<const uint8_t> bytes, const PrepareRequest& request, Image* out,
                 PrepareTimes* times) const override {
    Clock::time_point start = Clock::now();
    const DonutDecodeMode mode =
        request.mode == PrepareMode::kFast ? DonutDecodeMode::kFast : DonutDecodeMode::kExact;
    if (request.orientation <= 1) {
      DOCFEED_RETURN_IF_ERROR(
          DecodeAndResizeForDonut(bytes, config_, mode, out, request.limits, request.report));
      if (times != nullptr) times->decode_resize += NanosSince(start);
      return Status::Ok();
    }
    DOCFEED_ASSIGN_OR_RETURN(Image input, DecodeToRgb(bytes, request, config_, times));
    start = Clock::now();
    DOCFEED_RETURN_IF_ERROR(DonutResizeInto(input, config_, out));
    RecyclePixels(input);
    if (times != nullptr) times->resize += NanosSince(start);
    return Status::Ok();
  }

  PreprocessInfo StoredInfo() const override {
    return {kPreprocessDonut,        config_.height,     config_.width,
            config_.align_long_axis, config_.hf_version, BackendName()};
  }

  Status CheckStored(const PreprocessInfo& p, const std::string& dir) const override {
    if (p.preset != kPreprocessDonut) {
      return FailedPreconditionError(dir + " holds pages preprocessed by \"" + p.preset +
                                     "\", which the donut preset cannot take");
    }
    if (p.height == config_.height && p.width == config_.width &&
        p.align_long_axis == config_.align_long_axis && p.hf_version == config_.hf_version &&
        p.backend == BackendName()) {
      return Status::Ok();
    }
    return FailedPreconditionError(
        dir + " holds pages resized at pack time for " +
        Describe(p.height, p.width, p.align_long_axis, p.hf_version, p.backend) +
        ", but the loader was asked for " +
        Describe(config_.height, config_.width, config_.align_long_axis, config_.hf_version,
                 BackendName()) +
        "; resizing them again would not give the processor's pixels. Re-pack with "
        "--preprocess donut --size " +
        std::to_string(config_.height) + "x" + std::to_string(config_.width) + " --hf-version " +
        std::to_string(config_.hf_version) + " --backend " + std::string(BackendName()) +
        " (from the originals, or from --keep-original), or load with the packed settings");
  }

  // The processor's padding (centred, or randint offsets drawn from the sample's key), then
  // rescale + normalize + layout in one pass into the slot (imaging/normalize.h
  // NormalizePadded), or, for uint8 HWC, the padded stage itself.
  Result<Placement> Finish(const ImageView& view, const SampleKey& key, DType dtype,
                           OutputLayout layout, void* out) const override {
    if (view.channels != 1 && view.channels != 3) {
      return CorruptionError("stored page has " + std::to_string(view.channels) +
                             " channels, expected 1 or 3");
    }
    if (view.height > config_.height || view.width > config_.width) {
      return CorruptionError("page is " + std::to_string(view.width) + "x" +
                             std::to_string(view.height) + ", larger than the " +
                             std::to_string(config_.width) + "x" + std::to_string(config_.height) +
                             " output");
    }
    PadOffsets offsets;
    if (pad_ == PadMode::kCenter) {
      offsets = CenterPad(view.height, view.width, config_);
    } else {
      PadRng rng = PadRng::ForSample(key.seed, key.epoch, key.sample_id);
      offsets = DrawPad(view.height, view.width, config_, rng);
    }
    if (dtype == DType::kUint8 && layout == OutputLayout::kHwc) {
      const MutableImageView slot{static_cast<uint8_t*>(out), config_.width, config_.height, 3,
                                  ptrdiff_t{config_.width} * 3};
      DOCFEED_RETURN_IF_ERROR(DonutPad(view, offsets, slot));
    } else {
      DOCFEED_RETURN_IF_ERROR(NormalizePadded(view, offsets, config_.height, config_.width, table_,
                                              layout, dtype, out));
    }
    return Placement{offsets.top, offsets.left, view.height, view.width};
  }

 private:
  std::string BackendName() const { return std::string(DonutBackendName(config_.backend)); }

  const DonutConfig config_;
  const PadMode pad_;
  const NormalizeTable table_;
};

}  // namespace

size_t Preset::SampleBytes(DType dtype) const {
  const OutputShape s = output_shape();
  return static_cast<size_t>(s.channels) * static_cast<size_t>(s.height) *
         static_cast<size_t>(s.width) * DTypeSize(dtype);
}

Result<std::unique_ptr<const Preset>> MakePreset(const PresetParams& params) {
  if (params.name == kPreprocessDonut) {
    DOCFEED_RETURN_IF_ERROR(ValidateDonutConfig(params.donut));
    DOCFEED_ASSIGN_OR_RETURN(NormalizeTable table, MakeNormalizeTable(params.donut));
    return std::unique_ptr<const Preset>(
        std::make_unique<DonutPreset>(params.donut, params.pad, std::move(table)));
  }
  if (IsQwenVLPreset(params.name)) return MakeQwenVLPreset(params);
  if (params.name == kPresetNougat) return MakeNougatPreset(params);
  if (params.name == kPresetIdefics3) return MakeIdefics3Preset(params);
  if (params.name == kPresetPix2Struct) return MakePix2StructPreset(params);
  return InvalidArgumentError(
      "unknown preset \"" + params.name +
      "\" (known: donut, qwen2-vl, qwen2.5-vl, nougat, idefics3, pix2struct)");
}

Result<std::unique_ptr<const Preset>> PresetForStored(const PreprocessInfo& stored) {
  if (IsQwenVLPreset(stored.preset)) return QwenVLPresetForStored(stored);
  if (stored.preset == kPresetNougat) return NougatPresetForStored(stored);
  if (stored.preset == kPresetIdefics3) return Idefics3PresetForStored(stored);
  if (stored.preset == kPresetPix2Struct) return Pix2StructPresetForStored(stored);
  if (stored.preset != kPreprocessDonut) {
    return InvalidArgumentError(
        "unknown preprocessing \"" + stored.preset +
        "\" (expected donut, nougat, qwen2-vl, qwen2.5-vl, idefics3 or pix2struct)");
  }
  PresetParams params;
  params.name = stored.preset;
  params.donut.height = stored.height;
  params.donut.width = stored.width;
  params.donut.align_long_axis = stored.align_long_axis;
  params.donut.hf_version = stored.hf_version;
  DOCFEED_ASSIGN_OR_RETURN(params.donut.backend, ParseDonutBackend(stored.backend));
  return MakePreset(params);
}

}  // namespace docfeed::internal
