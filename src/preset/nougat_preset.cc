// The Nougat preset (NougatImageProcessor of transformers 4.x, or NougatImageProcessorPil of
// 5.x): docs/nougat-preprocessing.md has the processor's steps; imaging/nougat.h implements
// crop_margin and names the Donut kernels that do the rest. This file only sequences them.
#include <string>
#include <utility>

#include "base/clock.h"
#include "imaging/nougat.h"
#include "preset/preset.h"

namespace docfeed::internal {
namespace {

// "size 896x672 (height x width), align_long_axis, transformers 4.x".
std::string Describe(const PreprocessInfo& p) {
  return "size " + std::to_string(p.height) + "x" + std::to_string(p.width) + " (height x width)" +
         (p.align_long_axis ? ", align_long_axis" : "") + ", transformers " +
         std::to_string(p.hf_version) + ".x";
}

class NougatPreset final : public Preset {
 public:
  NougatPreset(const NougatConfig& config, PadMode pad, NormalizeTable table)
      : config_(config),
        geometry_(NougatGeometry(config)),
        conversion_(NougatConversion(config)),
        pad_(pad),
        table_(std::move(table)) {}

  std::string_view name() const override { return kPresetNougat; }
  OutputShape output_shape() const override { return {3, config_.height, config_.width}; }
  const std::array<double, 3>& image_mean() const override { return config_.mean; }
  const std::array<double, 3>& image_std() const override { return config_.std; }
  std::vector<float> Float32Table() const override { return FlatFloat32Table(table_); }

  // Decode, EXIF orientation (as `datasets` applies it), the generation's RGB conversion (gray
  // stays one channel), crop_margin, then align + shortest-edge resize + thumbnail. crop_margin
  // needs the whole page, so there is no streamed decode as for Donut.
  Status Prepare(std::span<const uint8_t> bytes, const PrepareRequest& request, Image* out,
                 PrepareTimes* times) const override {
    DOCFEED_ASSIGN_OR_RETURN(Image input, DecodeToRgb(bytes, request, conversion_, times));
    const Clock::time_point start = Clock::now();
    DOCFEED_RETURN_IF_ERROR(NougatResizeInto(std::move(input), config_, out));
    if (times != nullptr) times->resize += NanosSince(start);
    if (out->height > config_.height || out->width > config_.width) {
      // Only without do_thumbnail: the processor's pad would fail on a negative margin.
      return InvalidArgumentError("nougat: the resized page is " + std::to_string(out->width) +
                                  "x" + std::to_string(out->height) + ", larger than the " +
                                  std::to_string(config_.width) + "x" +
                                  std::to_string(config_.height) + " output (do_thumbnail off)");
    }
    return Status::Ok();
  }

  PreprocessInfo StoredInfo() const override {
    PreprocessInfo info;
    info.preset = kPresetNougat;
    info.height = config_.height;
    info.width = config_.width;
    info.align_long_axis = config_.align_long_axis;
    info.hf_version = config_.hf_version;
    return info;
  }

  // `pack --preprocess nougat` stores Prepare's output with the processor's default steps
  // (crop_margin, resize and thumbnail on), which the record implies; what must agree is the
  // size, the alignment and the generation.
  Status CheckStored(const PreprocessInfo& p, const std::string& dir) const override {
    if (p.preset != kPresetNougat)
      return RefuseStoredPages(p, dir, kPresetNougat, /*packable=*/true);
    const PreprocessInfo want = StoredInfo();
    if (config_.do_crop_margin && config_.do_resize && config_.do_thumbnail &&
        p.height == want.height && p.width == want.width &&
        p.align_long_axis == want.align_long_axis && p.hf_version == want.hf_version) {
      return Status::Ok();
    }
    return FailedPreconditionError(
        dir + " holds pages that the nougat preset prepared at pack time for " + Describe(p) +
        ", but the loader was asked for " + Describe(want) +
        "; preparing them again would not give the processor's pixels. Re-pack with "
        "--preprocess nougat and these settings, or load with the packed ones");
  }

  // The processor's centred padding (or docfeed's random one, drawn from the sample's key), then
  // rescale + normalize + layout in one pass into the slot; uint8 HWC is the padded stage.
  Result<Placement> Finish(const ImageView& view, const SampleKey& key, DType dtype,
                           OutputLayout layout, void* out) const override {
    if (view.channels != 1 && view.channels != 3) {
      return CorruptionError("prepared page has " + std::to_string(view.channels) +
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
      offsets = CenterPad(view.height, view.width, geometry_);
    } else {
      PadRng rng = PadRng::ForSample(key.seed, key.epoch, key.sample_id);
      offsets = DrawPad(view.height, view.width, geometry_, rng);
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
  const NougatConfig config_;
  const DonutConfig geometry_;    // the Donut kernels' settings (size, resampling, table)
  const DonutConfig conversion_;  // the generation's colour conversion
  const PadMode pad_;
  const NormalizeTable table_;
};

}  // namespace

Result<std::unique_ptr<const Preset>> NougatPresetForStored(const PreprocessInfo& stored) {
  DOCFEED_RETURN_IF_ERROR(RequirePilBackend(stored, "nougat"));
  PresetParams params;
  params.name = kPresetNougat;
  params.nougat.height = stored.height;
  params.nougat.width = stored.width;
  params.nougat.align_long_axis = stored.align_long_axis;
  params.nougat.hf_version = stored.hf_version;
  return MakeNougatPreset(params);
}

Result<std::unique_ptr<const Preset>> MakeNougatPreset(const PresetParams& params) {
  DOCFEED_RETURN_IF_ERROR(ValidateNougatConfig(params.nougat));
  DOCFEED_ASSIGN_OR_RETURN(NormalizeTable table, MakeNormalizeTable(NougatGeometry(params.nougat)));
  return std::unique_ptr<const Preset>(
      std::make_unique<NougatPreset>(params.nougat, params.pad, std::move(table)));
}

}  // namespace docfeed::internal
