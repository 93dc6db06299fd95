// The Idefics3 / SmolVLM / SmolDocling preset (Idefics3ImageProcessor of transformers 4.x, or
// Idefics3ImageProcessorPil of 5.x): docs/idefics3-preprocessing.md has the processor's steps;
// imaging/idefics3.h implements them. This file only sequences them.
#include <algorithm>
#include <string>
#include <utility>

#include "base/clock.h"
#include "imaging/idefics3.h"
#include "imaging/recycled_image.h"
#include "preset/preset.h"

namespace docfeed::internal {
namespace {

// "longest_edge 2048, max_image_size 512, transformers 4.x" (", no image splitting" when off).
std::string Describe(const PreprocessInfo& p) {
  return "longest_edge " + std::to_string(p.longest_edge) + ", max_image_size " +
         std::to_string(p.max_image_size) + (p.do_image_splitting ? "" : ", no image splitting") +
         ", transformers " + std::to_string(p.hf_version) + ".x";
}

class Idefics3Preset final : public Preset {
 public:
  Idefics3Preset(const Idefics3Config& config, NormalizeTable table)
      : config_(config), table_(std::move(table)), max_tiles_(Idefics3MaxTiles(config)) {}

  std::string_view name() const override { return kPresetIdefics3; }
  // A row per tile: the loader's variable-size slot holds up to max_tiles_ of them.
  OutputShape output_shape() const override {
    return {1, static_cast<int32_t>(max_tiles_), static_cast<int32_t>(Idefics3TileValues(config_))};
  }
  bool variable_size() const override { return true; }
  bool pads_batch() const override { return true; }
  size_t OutputBytesFor(int32_t height, int32_t width, DType dtype) const override {
    const Result<Idefics3Grid> grid = Idefics3GridOf(height, width, config_);
    if (!grid.ok()) return SampleBytes(dtype);
    return static_cast<size_t>(Idefics3Tiles(grid->rows, grid->cols)) *
           static_cast<size_t>(Idefics3TileValues(config_)) * DTypeSize(dtype);
  }
  // A stored prepared page's size says its grid (Idefics3GridOf), so the prediction is exact. For
  // an original the tile count is symmetric in the sides, but an EXIF rotation is taken into
  // account anyway (the larger of both orientations).
  size_t PredictOutputBytes(int32_t stored_width, int32_t stored_height, bool prepared,
                            DType dtype) const override {
    if (prepared) return OutputBytesFor(stored_height, stored_width, dtype);
    size_t largest = 0;
    for (const bool swap : {false, true}) {
      const Result<Idefics3Geometry> g = ComputeIdefics3Geometry(
          swap ? stored_width : stored_height, swap ? stored_height : stored_width, config_);
      if (!g.ok()) return SampleBytes(dtype);
      largest = std::max(largest, static_cast<size_t>(Idefics3Tiles(g->rows, g->cols)));
    }
    return std::min(largest * static_cast<size_t>(Idefics3TileValues(config_)) * DTypeSize(dtype),
                    SampleBytes(dtype));
  }
  // The processor's image_rows / image_cols, which its text side expands <image> with.
  Result<PageGrid> GridOf(int32_t height, int32_t width) const override {
    DOCFEED_ASSIGN_OR_RETURN(const Idefics3Geometry g,
                             ComputeIdefics3Geometry(height, width, config_));
    return PageGrid{1, g.rows, g.cols};
  }
  const std::array<double, 3>& image_mean() const override { return config_.mean; }
  const std::array<double, 3>& image_std() const override { return config_.std; }
  std::vector<float> Float32Table() const override { return FlatFloat32Table(table_); }

  // Decode, EXIF orientation (as `datasets` applies it), the generation's view of the page
  // (4.x: its mode decides the filter and alpha waits until after the resizes; 5.x: RGB first),
  // then the three resizes into the prepared page.
  Status Prepare(std::span<const uint8_t> bytes, const PrepareRequest& request, Image* out,
                 PrepareTimes* times) const override {
    Clock::time_point start = Clock::now();
    DOCFEED_ASSIGN_OR_RETURN(const ImageInfo info, ProbeImage(bytes));
    DOCFEED_ASSIGN_OR_RETURN(Image decoded, DecodeImage(bytes, request.limits, request.report));
    OrientPage(request.orientation, decoded);
    DonutConfig conversion;
    conversion.hf_version = config_.hf_version;
    DOCFEED_ASSIGN_OR_RETURN(Idefics3Input input,
                             ToIdefics3Input(std::move(decoded), PillowModeName(info), config_,
                                             DonutTransparencyKey(bytes, conversion)));
    if (times != nullptr) times->decode += NanosSince(start);
    start = Clock::now();
    DOCFEED_RETURN_IF_ERROR(Idefics3Resize(input.image, input.filter, config_, out));
    RecyclePixels(input.image);
    if (times != nullptr) times->resize += NanosSince(start);
    return Status::Ok();
  }

  // The prepared page depends on the three sizes and the generation (the colour conversion and
  // its place); rescale and normalize are Finish's, so they stay the loader's to choose.
  PreprocessInfo StoredInfo() const override {
    PreprocessInfo info;
    info.preset = kPresetIdefics3;
    info.longest_edge = config_.longest_edge;
    info.max_image_size = config_.max_image_size;
    info.do_image_splitting = config_.do_image_splitting;
    info.hf_version = config_.hf_version;
    return info;
  }

  // `pack --preprocess idefics3` stores Prepare's output: what must agree is what it depends on.
  Status CheckStored(const PreprocessInfo& p, const std::string& dir) const override {
    if (p.preset != kPresetIdefics3)
      return RefuseStoredPages(p, dir, kPresetIdefics3, /*packable=*/true);
    const PreprocessInfo want = StoredInfo();
    if (p.longest_edge == want.longest_edge && p.max_image_size == want.max_image_size &&
        p.do_image_splitting == want.do_image_splitting && p.hf_version == want.hf_version &&
        p.backend == want.backend) {
      return Status::Ok();
    }
    return FailedPreconditionError(
        dir + " holds pages that the idefics3 preset prepared at pack time for " + Describe(p) +
        ", but the loader was asked for " + Describe(want) +
        "; resizing them again would not give the processor's pixels. Re-pack with "
        "--preprocess idefics3 and these settings, or load with the packed ones");
  }

  // rescale + normalize + the tile layout, into the slot; the placement is the prepared page,
  // whose size gives rows and cols (Idefics3GridOf).
  Result<Placement> Finish(const ImageView& view, const SampleKey&, DType dtype,
                           OutputLayout layout, void* out) const override {
    if (view.channels != 1 && view.channels != 3) {
      return CorruptionError("prepared page has " + std::to_string(view.channels) +
                             " channels, expected 1 or 3");
    }
    DOCFEED_RETURN_IF_ERROR(Idefics3Tile(view, config_, table_, dtype, layout, out));
    return Placement{0, 0, view.height, view.width};
  }

 private:
  const Idefics3Config config_;
  const NormalizeTable table_;
  const int64_t max_tiles_;
};

}  // namespace

Result<std::unique_ptr<const Preset>> Idefics3PresetForStored(const PreprocessInfo& stored) {
  DOCFEED_RETURN_IF_ERROR(RequirePilBackend(stored, "idefics3"));
  PresetParams params;
  params.name = kPresetIdefics3;
  params.idefics3.longest_edge = stored.longest_edge;
  params.idefics3.max_image_size = stored.max_image_size;
  params.idefics3.do_image_splitting = stored.do_image_splitting;
  params.idefics3.hf_version = stored.hf_version;
  return MakeIdefics3Preset(params);
}

Result<std::unique_ptr<const Preset>> MakeIdefics3Preset(const PresetParams& params) {
  DOCFEED_RETURN_IF_ERROR(ValidateIdefics3Config(params.idefics3));
  DOCFEED_ASSIGN_OR_RETURN(NormalizeTable table, MakeIdefics3Table(params.idefics3));
  return std::unique_ptr<const Preset>(
      std::make_unique<Idefics3Preset>(params.idefics3, std::move(table)));
}

}  // namespace docfeed::internal
