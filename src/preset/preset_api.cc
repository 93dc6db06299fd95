// docfeed::Preset (docfeed/preprocess.h): the public handle over an internal::Preset.
#include <string>
#include <string_view>
#include <utility>

#include "base/clock.h"
#include "codec/codec.h"
#include "docfeed/preprocess.h"
#include "imaging/recycled_image.h"
#include "preset/preset.h"

namespace docfeed {
namespace internal {

void OrientPage(int32_t orientation, Image& page) {
  if (orientation <= 1) return;
  Image turned = ApplyOrientation(page, orientation);
  RecyclePixels(page);
  page = std::move(turned);
}

Result<Image> DecodeToRgb(std::span<const uint8_t> bytes, const PrepareRequest& request,
                          const DonutConfig& conversion, PrepareTimes* times) {
  const Clock::time_point start = Clock::now();
  DOCFEED_ASSIGN_OR_RETURN(Image decoded, DecodeImage(bytes, request.limits, request.report));
  OrientPage(request.orientation, decoded);
  Result<Image> rgb =
      ToDonutInput(std::move(decoded), conversion, DonutTransparencyKey(bytes, conversion));
  if (times != nullptr) times->decode += NanosSince(start);
  return rgb;
}

Status RequirePilBackend(const PreprocessInfo& stored, std::string_view preset) {
  if (stored.backend == "pil") return Status::Ok();
  return InvalidArgumentError(std::string(preset) + ": backend \"" + stored.backend +
                              "\" (the preset reproduces the PIL processors only)");
}

std::vector<float> FlatFloat32Table(const NormalizeTable& table) {
  std::vector<float> flat;
  flat.reserve(3 * 256);
  for (const auto& channel : table.f32) flat.insert(flat.end(), channel.begin(), channel.end());
  return flat;
}

Status RefuseStoredPages(const PreprocessInfo& stored, const std::string& dir,
                         std::string_view preset, bool packable) {
  return FailedPreconditionError(
      dir + " holds pages preprocessed by \"" + stored.preset + "\" at pack time, which the " +
      std::string(preset) +
      " preset cannot take; load the original images (a dataset packed without --preprocess)" +
      (packable ? " or re-pack with --preprocess " + std::string(preset) : std::string()));
}

Result<PageGrid> Preset::GridOf(int32_t /*height*/, int32_t /*width*/) const {
  return InvalidArgumentError("the " + std::string(name()) +
                              " preset has no grid of image tokens (qwen2-vl, qwen2.5-vl and "
                              "idefics3 have)");
}

Result<Preset::StoredOutput> Preset::EncodeStoredOutput(const ImageView& /*prepared*/) const {
  return UnsupportedError("the " + std::string(name()) +
                          " preset stores prepared pages only (pix2struct also stores its "
                          "patches)");
}

Result<Placement> Preset::FinishStoredOutput(std::span<const uint8_t> /*stored*/, DType /*dtype*/,
                                             void* /*out*/) const {
  return UnsupportedError("the " + std::string(name()) +
                          " preset stores prepared pages only (pix2struct also stores its "
                          "patches)");
}

}  // namespace internal

Result<PageSize> ProbePageSize(std::span<const uint8_t> bytes) {
  DOCFEED_ASSIGN_OR_RETURN(const internal::ImageInfo info, internal::ProbeImage(bytes));
  PageSize size{info.height, info.width};
  // Orientations 5..8 are a quarter turn, with or without a flip (the EXIF specification).
  if (info.exif_orientation >= 5) std::swap(size.height, size.width);
  return size;
}

int32_t OrientationAppliedOnOpen(std::span<const uint8_t> bytes) {
  if (internal::SniffCodec(bytes) != internal::ImageCodec::kTiff) return 1;
  const Result<internal::ImageInfo> info = internal::ProbeImage(bytes);
  return info.ok() ? info->exif_orientation : 1;
}

Result<Preset> Preset::Create(const PresetOptions& options) {
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<const internal::Preset> impl,
                           internal::MakePreset(options));
  return Preset(std::shared_ptr<const internal::Preset>(std::move(impl)));
}

std::string_view Preset::name() const { return impl_->name(); }
OutputShape Preset::output_shape() const { return impl_->output_shape(); }
size_t Preset::SampleBytes(DType dtype) const { return impl_->SampleBytes(dtype); }
bool Preset::variable_size() const { return impl_->variable_size(); }
size_t Preset::OutputBytes(const Placement& placement, DType dtype) const {
  return impl_->OutputBytesFor(placement.height, placement.width, dtype);
}
const std::array<double, 3>& Preset::image_mean() const { return impl_->image_mean(); }
const std::array<double, 3>& Preset::image_std() const { return impl_->image_std(); }
std::vector<float> Preset::NormalizeTable() const { return impl_->Float32Table(); }
Result<PageGrid> Preset::GridOf(int32_t height, int32_t width) const {
  return impl_->GridOf(height, width);
}

Status Preset::Prepare(std::span<const uint8_t> bytes, const PrepareOptions& options,
                       Image* out) const {
  if (out == nullptr) return InvalidArgumentError("Preset::Prepare: out is null");
  internal::PrepareRequest request;
  static_cast<PrepareOptions&>(request) = options;
  return impl_->Prepare(bytes, request, out);
}

Result<Placement> Preset::Finish(const Image& prepared, const SampleKey& key, DType dtype,
                                 OutputLayout layout, void* out) const {
  if (out == nullptr) return InvalidArgumentError("Preset::Finish: out is null");
  if (prepared.pixels.size() != prepared.stride_bytes() * static_cast<size_t>(prepared.height)) {
    return InvalidArgumentError("Preset::Finish: the image's pixels do not match its size");
  }
  return impl_->Finish(internal::ViewOf(prepared), key, dtype, layout, out);
}

}  // namespace docfeed
