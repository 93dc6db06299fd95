// The Qwen2-VL / Qwen2.5-VL preset (Qwen2VLImageProcessor of transformers 4.x, or
// Qwen2VLImageProcessorPil of 5.x): docs/qwen-vl-preprocessing.md has the processor's steps;
// imaging/qwen_vl.h implements them. This file only sequences them.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "base/clock.h"
#include "imaging/jpeg_stream.h"
#include "imaging/qwen_vl.h"
#include "imaging/recycled_image.h"
#include "preset/preset.h"

namespace docfeed::internal {
namespace {

// The colour conversion is Donut's of the same generation: 4.x's convert("RGB") drops alpha,
// 5.x's convert_to_rgb composites it onto white (donut.h ToDonutInput); only hf_version matters.
DonutConfig ConversionOf(const QwenVLConfig& config) {
  DonutConfig conversion;
  conversion.hf_version = config.hf_version;
  return conversion;
}

std::string Describe(const PreprocessInfo& p) {
  return "min_pixels " + std::to_string(p.min_pixels) + ", max_pixels " +
         std::to_string(p.max_pixels) + ", patch_size " + std::to_string(p.patch_size) +
         ", merge_size " + std::to_string(p.merge_size) + ", transformers " +
         std::to_string(p.hf_version) + ".x " + p.backend;
}

class QwenVLPreset final : public Preset {
 public:
  QwenVLPreset(std::string name, const QwenVLConfig& config, NormalizeTable table)
      : name_(std::move(name)),
        config_(config),
        table_(std::move(table)),
        max_patches_(QwenMaxPatches(config)) {}

  std::string_view name() const override { return name_; }
  OutputShape output_shape() const override {
    return {1, static_cast<int32_t>(max_patches_), static_cast<int32_t>(QwenPatchDim(config_))};
  }
  bool variable_size() const override { return true; }
  size_t OutputBytesFor(int32_t height, int32_t width, DType dtype) const override {
    return static_cast<size_t>(QwenPatchCount(height, width, config_)) *
           static_cast<size_t>(QwenPatchDim(config_)) * DTypeSize(dtype);
  }
  // smart_resize is symmetric in the sides, so an orientation that swaps them changes nothing.
  size_t PredictOutputBytes(int32_t stored_width, int32_t stored_height, bool prepared,
                            DType dtype) const override {
    QwenGeometry g{stored_height, stored_width};
    if (!prepared) {
      const Result<QwenGeometry> resized = QwenSmartResize(stored_height, stored_width, config_);
      if (!resized.ok()) return SampleBytes(dtype);
      g = *resized;
    }
    return std::min(OutputBytesFor(g.height, g.width, dtype), SampleBytes(dtype));
  }
  // image_grid_thw of an image: smart_resize's size in patches, one temporal step.
  Result<PageGrid> GridOf(int32_t height, int32_t width) const override {
    DOCFEED_ASSIGN_OR_RETURN(const QwenGeometry g, QwenSmartResize(height, width, config_));
    return PageGrid{1, g.height / config_.patch_size, g.width / config_.patch_size};
  }
  const std::array<double, 3>& image_mean() const override { return config_.mean; }
  const std::array<double, 3>& image_std() const override { return config_.std; }
  std::vector<float> Float32Table() const override { return FlatFloat32Table(table_); }

  // Decode, EXIF orientation (as `datasets` applies it), the generation's RGB conversion
  // (gray stays one channel), then smart_resize and Pillow's BICUBIC resize. A JPEG that needs no
  // turning goes through the streamed decode + resize (StreamJpeg), which never holds the
  // full-size page; the bytes are the same either way.
  Status Prepare(std::span<const uint8_t> bytes, const PrepareRequest& request, Image* out,
                 PrepareTimes* times) const override {
    Clock::time_point start = Clock::now();
    const Result<bool> streamed = StreamJpeg(bytes, request, out);
    if (streamed.ok() && *streamed) {
      // Decode and resize are interleaved band by band: one stage, as Donut's streamed path.
      if (times != nullptr) times->decode_resize += NanosSince(start);
      return Status::Ok();
    }
    // A stream that gave up partway spent its time decoding.
    if (times != nullptr) times->decode += NanosSince(start);
    DOCFEED_ASSIGN_OR_RETURN(Image input,
                             DecodeToRgb(bytes, request, ConversionOf(config_), times));
    start = Clock::now();
    DOCFEED_ASSIGN_OR_RETURN(const QwenGeometry g,
                             QwenSmartResize(input.height, input.width, config_));
    if (g.height == input.height && g.width == input.width) {
      RecyclePixels(*out);
      *out = std::move(input);  // PIL's resize to the same size is a copy
    } else {
      ResizeInto(g, input.channels, out);
      DOCFEED_RETURN_IF_ERROR(Resize(ViewOf(input), MutableViewOf(*out), ResampleFilter::kBicubic,
                                     nullptr, 0, Arithmetic()));
      RecyclePixels(input);
    }
    if (times != nullptr) times->resize += NanosSince(start);
    return Status::Ok();
  }

  PreprocessInfo StoredInfo() const override {
    PreprocessInfo info;
    info.preset = name_;
    info.hf_version = config_.hf_version;
    info.backend = std::string(DonutBackendName(config_.backend));
    info.min_pixels = config_.min_pixels;
    info.max_pixels = config_.max_pixels;
    info.patch_size = config_.patch_size;
    info.merge_size = config_.merge_size;
    return info;
  }

  // Pages stored by either Qwen name are the same processor's; what must agree is everything
  // Prepare depends on.
  Status CheckStored(const PreprocessInfo& p, const std::string& dir) const override {
    if (!IsQwenVLPreset(p.preset)) {
      return FailedPreconditionError(dir + " holds pages preprocessed by \"" + p.preset +
                                     "\" at pack time, which the " + name_ +
                                     " preset cannot take; load the original images (a dataset "
                                     "packed without --preprocess) or re-pack with --preprocess " +
                                     name_);
    }
    const PreprocessInfo want = StoredInfo();
    if (p.min_pixels == want.min_pixels && p.max_pixels == want.max_pixels &&
        p.patch_size == want.patch_size && p.merge_size == want.merge_size &&
        p.hf_version == want.hf_version && p.backend == want.backend) {
      return Status::Ok();
    }
    return FailedPreconditionError(
        dir + " holds pages resized at pack time for " + Describe(p) +
        ", but the loader was asked for " + Describe(want) +
        "; resizing them again would not give the processor's pixels. Re-pack with "
        "--preprocess " +
        name_ + " and these settings, or load with the packed ones");
  }

  // rescale + normalize + the patch layout, into the slot; the placement is the whole page.
  Result<Placement> Finish(const ImageView& view, const SampleKey&, DType dtype, OutputLayout,
                           void* out) const override {
    if (view.channels != 1 && view.channels != 3) {
      return CorruptionError("prepared page has " + std::to_string(view.channels) +
                             " channels, expected 1 or 3");
    }
    const int32_t merged = config_.patch_size * config_.merge_size;
    if (view.height % merged != 0 || view.width % merged != 0 ||
        QwenPatchCount(view.height, view.width, config_) > max_patches_) {
      return CorruptionError("prepared page is " + std::to_string(view.width) + "x" +
                             std::to_string(view.height) +
                             ", which smart_resize cannot give with these settings");
    }
    DOCFEED_RETURN_IF_ERROR(QwenPatchify(view, config_, table_, dtype, out));
    return Placement{0, 0, view.height, view.width};
  }

 private:
  ResampleArithmetic Arithmetic() const {
    return config_.backend == DonutBackend::kTorchvision ? ResampleArithmetic::kTorchUint8
                                                         : ResampleArithmetic::kPillow;
  }

  // `out` as the g.width x g.height page, its buffer reused when large enough.
  static void ResizeInto(const QwenGeometry& g, int32_t channels, Image* out) {
    out->width = g.width;
    out->height = g.height;
    out->channels = channels;
    out->pixels.resize(out->stride_bytes() * static_cast<size_t>(g.height));
  }

  // Prepare for a JPEG that DecodeImage gives as L or RGB and that needs no turning
  // (orientation <= 1, where OrientPage does nothing): the bands of JpegBandDecoder go straight
  // into the BICUBIC resize stream (MakeResizeStream, which is byte-identical to Resize and a row
  // copy where smart_resize keeps the size). The colour conversion is left out because it is the
  // identity here: for L and RGB, ToDonutInput of 4.x returns the image as it is, and 5.x's
  // composites only alpha or a PNG/GIF colour key, which a JPEG has neither of
  // (DonutTransparencyKey is empty for it). Returns false (or an error) where Prepare should take
  // the whole-page path, which then gives its own result or error: anything not streamed, any
  // decode error, a size smart_resize refuses. On true, request.report holds DecodeImage's
  // warnings.
  Result<bool> StreamJpeg(std::span<const uint8_t> bytes, const PrepareRequest& request,
                          Image* out) const {
    if (request.orientation > 1) return false;
    JpegBandDecoder decoder;
    DOCFEED_ASSIGN_OR_RETURN(const bool open, decoder.Open(bytes, request.limits));
    if (!open) return false;
    DOCFEED_ASSIGN_OR_RETURN(const QwenGeometry g,
                             QwenSmartResize(decoder.height(), decoder.width(), config_));
    DOCFEED_ASSIGN_OR_RETURN(const bool full_size, decoder.SetScale(1));
    if (!full_size) return false;
    ResizeInto(g, decoder.channels(), out);
    const StreamOutput rows{out->pixels.data(), static_cast<ptrdiff_t>(out->stride_bytes()),
                            nullptr};
    DOCFEED_ASSIGN_OR_RETURN(
        const std::unique_ptr<RowSink> resize,
        MakeResizeStream(decoder.width(), decoder.height(), decoder.channels(), g.width, g.height,
                         ResampleFilter::kBicubic, nullptr, 0, rows, Arithmetic()));
    if (resize == nullptr) return false;
    DOCFEED_RETURN_IF_ERROR(decoder.DecodeInto(*resize, request.report));
    return true;
  }

  const std::string name_;
  const QwenVLConfig config_;
  const NormalizeTable table_;
  const int64_t max_patches_;
};

}  // namespace

bool IsQwenVLPreset(std::string_view name) {
  return name == kPresetQwen2VL || name == kPresetQwen25VL;
}

Result<std::unique_ptr<const Preset>> QwenVLPresetForStored(const PreprocessInfo& stored) {
  PresetParams params;
  params.name = stored.preset;
  QwenVLConfig& q = params.qwen_vl;
  q.min_pixels = stored.min_pixels;
  q.max_pixels = stored.max_pixels;
  q.patch_size = stored.patch_size;
  q.merge_size = stored.merge_size;
  q.hf_version = stored.hf_version;
  DOCFEED_ASSIGN_OR_RETURN(q.backend, ParseDonutBackend(stored.backend));
  return MakeQwenVLPreset(params);
}

Result<std::unique_ptr<const Preset>> MakeQwenVLPreset(const PresetParams& params) {
  DOCFEED_RETURN_IF_ERROR(ValidateQwenVLConfig(params.qwen_vl));
  DOCFEED_ASSIGN_OR_RETURN(NormalizeTable table, MakeQwenVLTable(params.qwen_vl));
  return std::unique_ptr<const Preset>(
      std::make_unique<QwenVLPreset>(params.name, params.qwen_vl, std::move(table)));
}

}  // namespace docfeed::internal
