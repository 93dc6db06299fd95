// DonutImageProcessor's geometry (transformers models/donut/image_processing_donut.py and
// image_transforms.py, 4.x PIL path): sizes, RGB conversion, rotation, the two Pillow resizes and
// the padding. See donut.h.
#include "imaging/donut.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "imaging/drop_alpha.h"
#include "imaging/recycled_image.h"

namespace docfeed {

// Public (docfeed/preprocess.h), defined beside the config they name.
std::string_view DonutBackendName(DonutBackend backend) {
  return backend == DonutBackend::kTorchvision ? "torchvision" : "pil";
}

Result<DonutBackend> ParseDonutBackend(std::string_view name) {
  if (name == "pil") return DonutBackend::kPil;
  if (name == "torchvision") return DonutBackend::kTorchvision;
  return InvalidArgumentError("backend must be \"pil\" or \"torchvision\", got \"" +
                              std::string(name) + "\"");
}

}  // namespace docfeed

namespace docfeed::internal {
namespace {

constexpr int32_t kMaxTargetSide = 65535;

// Python's int(a * b / c) for ints: the product is exact, `/` is a correctly rounded double
// division (exact operands below 2^53, which the callers guarantee), int() truncates.
int64_t PyTruncMulDiv(int64_t a, int64_t b, int64_t c) {
  return static_cast<int64_t>(static_cast<double>(a * b) / static_cast<double>(c));
}

std::string SizeText(int64_t w, int64_t h) { return std::to_string(w) + "x" + std::to_string(h); }

Status CheckSide(int64_t side, const char* what, int32_t width, int32_t height) {
  if (side >= 1 && side <= std::numeric_limits<int32_t>::max()) return Status::Ok();
  return InvalidArgumentError(std::string("donut: ") + what + " of a " + SizeText(width, height) +
                              " image would be " + std::to_string(side) +
                              " pixels (aspect ratio too extreme)");
}

Status CheckImage(const Image& image, const char* what) {
  if (image.width < 1 || image.height < 1 || image.channels < 1 || image.channels > 4 ||
      image.pixels.size() != image.stride_bytes() * static_cast<size_t>(image.height)) {
    return InvalidArgumentError(std::string("donut: ") + what + " is empty or inconsistent (" +
                                SizeText(image.width, image.height) + ", " +
                                std::to_string(image.channels) + " channels, " +
                                std::to_string(image.pixels.size()) + " bytes)");
  }
  return Status::Ok();
}

// `image` without the last (alpha) sample of each of its kIn-sample pixels, in a new image
// (converting in place, into the decode's larger buffer, measured slower for the float passes
// that read the result: Pix2Struct's Finish on FlipkartInvoice.png 2.4 -> 2.8 ms). RGBA goes
// through the SIMD copy of drop_alpha.h.
template <int32_t kIn>
Image DropAlpha(const Image& image) {
  constexpr int32_t kKeep = kIn - 1;
  Image out = ImageToOverwrite(image.width, image.height, kKeep);  // every byte written below
  const size_t n = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
  const uint8_t* src = image.pixels.data();
  uint8_t* dst = out.pixels.data();
  if constexpr (kIn == 4) {
    DropAlphaRgba(src, n, dst);
  } else {
    for (size_t i = 0; i < n; ++i, src += kIn, dst += kKeep) {
      for (int32_t c = 0; c < kKeep; ++c) dst[c] = src[c];
    }
  }
  return out;
}

Status CheckPillowBomb(int32_t width, int32_t height) {
  if (static_cast<uint64_t>(width) * static_cast<uint64_t>(height) >
      DecodeLimits::kPillowBombPixels) {
    return ResourceExhaustedError("donut: intermediate image " + SizeText(width, height) +
                                  " exceeds " + std::to_string(DecodeLimits::kPillowBombPixels) +
                                  " pixels");
  }
  return Status::Ok();
}

// Pillow's resize of `src` (or its `box`) to width x height into `out`, whose pixel buffer is
// reused when large enough (only the part beyond its present size is zeroed; the resize writes
// every byte).
Status PillowResizeInto(const ImageView& src, int32_t width, int32_t height, ResampleFilter filter,
                        const Box* box, double reducing_gap, ResampleArithmetic arithmetic,
                        Image* out) {
  DOCFEED_RETURN_IF_ERROR(CheckPillowBomb(width, height));
  out->width = width;
  out->height = height;
  out->channels = src.channels;
  out->pixels.resize(out->stride_bytes() * static_cast<size_t>(height));
  return Resize(src, MutableViewOf(*out), filter, box, reducing_gap, arithmetic);
}

// The shortest-edge result that only feeds the thumbnail lives in per-thread scratch, reused
// across images: no allocation, zero fill or page faults per image. Larger ones (very long
// pages) get their own buffer rather than pinning that much memory per thread.
constexpr size_t kMaxScratchBytes = size_t{32} << 20;
thread_local std::vector<uint8_t> t_resized;

// The box of a scaled decode (of a full_width x full_height page, by 1 / scale_denom) in its own
// pixel units, before any rotation.
Box ScaledBox(int32_t full_width, int32_t full_height, int32_t scale_denom) {
  const double k = scale_denom;
  return Box{0, 0, full_width / k, full_height / k};
}

// A clockwise turn maps source row y to destination column (H - 1 - y): the box's x range is the
// mirrored y range of the unrotated box, its y range the old x range.
Box RotateBoxClockwise(const Box& box, int32_t unrotated_height) {
  return Box{unrotated_height - box.y1, box.x0, unrotated_height - box.y0, box.x1};
}

Status ResizeStages(const Image& image, const Box& box, const DonutGeometry& g,
                    const DonutConfig& config, Image* out) {
  const bool full_box =
      box.x0 == 0 && box.y0 == 0 && box.x1 == image.width && box.y1 == image.height;
  if (!config.do_resize && !full_box) {
    return InvalidArgumentError("donut: a scaled decode needs do_resize");
  }
  // Without do_resize the geometry's resized size is the (aligned) image size.
  const bool thumbnail = config.do_thumbnail &&
                         (g.thumb_width != g.resized_width || g.thumb_height != g.resized_height);
  const Box* resize_box = full_box ? nullptr : &box;
  const DonutResampling r = ResamplingOf(config);
  if (!thumbnail) {
    if (!config.do_resize) {
      *out = image;
      return Status::Ok();
    }
    return PillowResizeInto(ViewOf(image), g.resized_width, g.resized_height,
                            ResampleFilter::kBilinear, resize_box, 0, r.arithmetic, out);
  }
  ImageView resized = ViewOf(image);
  std::vector<uint8_t> own;
  if (config.do_resize) {
    DOCFEED_RETURN_IF_ERROR(CheckPillowBomb(g.resized_width, g.resized_height));
    const size_t stride = static_cast<size_t>(g.resized_width) * image.channels;
    const size_t size_bytes = stride * static_cast<size_t>(g.resized_height);
    std::vector<uint8_t>& buffer = size_bytes <= kMaxScratchBytes ? t_resized : own;
    if (buffer.size() < size_bytes) buffer.resize(size_bytes);
    const MutableImageView shortest{buffer.data(), g.resized_width, g.resized_height,
                                    image.channels, static_cast<ptrdiff_t>(stride)};
    DOCFEED_RETURN_IF_ERROR(
        Resize(ViewOf(image), shortest, ResampleFilter::kBilinear, resize_box, 0, r.arithmetic));
    resized = ImageView{shortest.data, shortest.width, shortest.height, shortest.channels,
                        shortest.stride_bytes};
  }
  return PillowResizeInto(resized, g.thumb_width, g.thumb_height, r.thumbnail_filter, nullptr,
                          r.thumbnail_reducing_gap, r.arithmetic, out);
}

}  // namespace

Status ValidateDonutConfig(const DonutConfig& config) {
  if (config.height < 1 || config.height > kMaxTargetSide || config.width < 1 ||
      config.width > kMaxTargetSide) {
    return InvalidArgumentError("donut: size height x width must be within 1..65535, got " +
                                std::to_string(config.height) + "x" + std::to_string(config.width));
  }
  if (config.hf_version != 4 && config.hf_version != 5) {
    return InvalidArgumentError(
        "donut: hf_version must be 4 or 5 (the transformers generation), got " +
        std::to_string(config.hf_version));
  }
  if (config.hf_version == 4 && config.backend != DonutBackend::kPil) {
    return InvalidArgumentError(
        "donut: backend \"torchvision\" needs hf_version 5 (transformers 4's fast processor is "
        "not reproduced)");
  }
  if (!std::isfinite(config.rescale_factor)) {
    return InvalidArgumentError("donut: rescale_factor must be finite");
  }
  for (int c = 0; c < 3; ++c) {
    const auto std_f32 = static_cast<float>(config.std[c]);
    if (!std::isfinite(static_cast<float>(config.mean[c]))) {
      return InvalidArgumentError("donut: image_mean[" + std::to_string(c) + "] is not finite");
    }
    if (!std::isfinite(std_f32) || std_f32 == 0.0f) {
      return InvalidArgumentError("donut: image_std[" + std::to_string(c) +
                                  "] must be finite and non-zero in float32, got " +
                                  std::to_string(config.std[c]));
    }
  }
  return Status::Ok();
}

Result<DonutGeometry> ComputeDonutGeometry(int32_t width, int32_t height,
                                           const DonutConfig& config) {
  DOCFEED_RETURN_IF_ERROR(ValidateDonutConfig(config));
  if (width < 1 || height < 1) {
    return InvalidArgumentError("donut: image size " + SizeText(width, height) + " is empty");
  }
  DonutGeometry g;
  g.rotate = config.align_long_axis && ((config.width < config.height && width > height) ||
                                        (config.width > config.height && width < height));
  g.aligned_width = g.rotate ? height : width;
  g.aligned_height = g.rotate ? width : height;
  int64_t w1 = g.aligned_width;
  int64_t h1 = g.aligned_height;
  if (config.do_resize) {
    const int64_t s = std::min(config.height, config.width);
    const bool portrait = w1 <= h1;
    const int64_t long_side = PyTruncMulDiv(s, portrait ? h1 : w1, portrait ? w1 : h1);
    w1 = portrait ? s : long_side;
    h1 = portrait ? long_side : s;
    DOCFEED_RETURN_IF_ERROR(CheckSide(portrait ? h1 : w1, "the resized long side", width, height));
  }
  g.resized_width = static_cast<int32_t>(w1);
  g.resized_height = static_cast<int32_t>(h1);
  int64_t th = h1;
  int64_t tw = w1;
  if (config.do_thumbnail) {
    th = std::min<int64_t>(h1, config.height);
    tw = std::min<int64_t>(w1, config.width);
    if (th != h1 || tw != w1) {
      if (h1 > w1) {
        tw = PyTruncMulDiv(w1, th, h1);
      } else if (w1 > h1) {
        th = PyTruncMulDiv(h1, tw, w1);
      }
    }
    DOCFEED_RETURN_IF_ERROR(
        CheckSide(std::min(th, tw), "the thumbnail's short side", width, height));
  }
  g.thumb_width = static_cast<int32_t>(tw);
  g.thumb_height = static_cast<int32_t>(th);
  return g;
}

Result<Image> ToDonutInput(Image image) {
  DOCFEED_RETURN_IF_ERROR(CheckImage(image, "input image"));
  if (image.channels != 4 && image.channels != 2) return image;
  Image out = image.channels == 4 ? DropAlpha<4>(image) : DropAlpha<2>(image);
  RecyclePixels(image);
  return out;
}

uint8_t CompositeOnWhite(uint8_t value, uint8_t alpha) {
  if (alpha == 0) return 255;  // Pillow copies the background pixel.
  // AlphaComposite.c with dst = (255, 255, 255, 255): blend = dst.a * (255 - src.a),
  // outa255 = src.a * 255 + blend, coef1 = src.a * 255 * 255 * 2^7 / outa255 (integer division),
  // coef2 = 255 * 2^7 - coef1, out = SHIFTFORDIV255(v * coef1 + 255 * coef2 + 0x80 * 2^7) >> 7.
  constexpr uint32_t kPrecisionBits = 7;
  const uint32_t a = alpha;
  const uint32_t outa255 = a * 255 + 255 * (255 - a);
  const uint32_t coef1 = a * 255 * 255 * (1u << kPrecisionBits) / outa255;
  const uint32_t coef2 = 255 * (1u << kPrecisionBits) - coef1;
  const uint32_t tmp = value * coef1 + 255 * coef2 + (0x80u << kPrecisionBits);
  return static_cast<uint8_t>((((tmp >> 8) + tmp) >> 8) >> kPrecisionBits);
}

namespace {

// Pillow's convert_transparent: 8-bit samples equal to the key are transparent, the others
// opaque (L -> LA, RGB -> RGBA).
Image WithColourKeyAlpha(const Image& image, const std::array<uint16_t, 3>& key) {
  const int32_t channels = image.channels;
  Image out = ImageToOverwrite(image.width, image.height, channels + 1);  // all written
  const size_t n = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
  const uint8_t* src = image.pixels.data();
  uint8_t* dst = out.pixels.data();
  for (size_t i = 0; i < n; ++i, src += channels, dst += channels + 1) {
    bool equal = true;
    for (int32_t c = 0; c < channels; ++c) {
      dst[c] = src[c];
      equal = equal && src[c] == key[static_cast<size_t>(c)];
    }
    dst[channels] = equal ? 0 : 255;
  }
  return out;
}

}  // namespace

std::optional<std::array<uint16_t, 3>> DonutTransparencyKey(std::span<const uint8_t> bytes,
                                                            const DonutConfig& config) {
  const ImageCodec codec = SniffCodec(bytes);
  if (config.hf_version == 4 || (codec != ImageCodec::kPng && codec != ImageCodec::kGif)) {
    return std::nullopt;
  }
  Result<ImageInfo> info = ProbeImage(bytes);
  // A header the probe refuses fails the decode that follows, with its own error.
  return info.ok() ? info->transparency : std::nullopt;
}

Result<Image> ToDonutInput(Image image, const DonutConfig& config,
                           const std::optional<std::array<uint16_t, 3>>& transparency) {
  if (config.hf_version == 4) return ToDonutInput(std::move(image));
  DOCFEED_RETURN_IF_ERROR(CheckImage(image, "input image"));
  if (transparency && (image.channels == 1 || image.channels == 3)) {
    image = WithColourKeyAlpha(image, *transparency);
  }
  if (image.channels != 2 && image.channels != 4) return image;
  const int32_t keep = image.channels - 1;
  Image out = ImageToOverwrite(image.width, image.height, keep);  // every byte written below
  const size_t n = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
  const uint8_t* src = image.pixels.data();
  uint8_t* dst = out.pixels.data();
  for (size_t i = 0; i < n; ++i, src += image.channels, dst += keep) {
    const uint8_t alpha = src[keep];
    for (int32_t c = 0; c < keep; ++c) dst[c] = CompositeOnWhite(src[c], alpha);
  }
  RecyclePixels(image);
  return out;
}

DonutResampling ResamplingOf(const DonutConfig& config) {
  if (config.hf_version == 4) return {};
  return {ResampleFilter::kBilinear, 0,
          config.backend == DonutBackend::kTorchvision ? ResampleArithmetic::kTorchUint8
                                                       : ResampleArithmetic::kPillow};
}

Image RotateClockwise(const Image& image) {
  const int32_t c = image.channels;
  Image out = ImageToOverwrite(image.height, image.width, c);  // every pixel written below
  const size_t src_stride = image.stride_bytes();
  const size_t dst_stride = out.stride_bytes();
  // out[r][x] = in[H - 1 - x][r]: walk the source row by row, writing one destination column.
  for (int32_t y = 0; y < image.height; ++y) {
    const uint8_t* src = image.pixels.data() + static_cast<size_t>(y) * src_stride;
    uint8_t* dst = out.pixels.data() + static_cast<size_t>(image.height - 1 - y) * c;
    for (int32_t x = 0; x < image.width; ++x) {
      std::memcpy(dst + static_cast<size_t>(x) * dst_stride, src + static_cast<size_t>(x) * c,
                  static_cast<size_t>(c));
    }
  }
  return out;
}

Result<DonutGeometry> CheckDonutResizable(int32_t width, int32_t height,
                                          const DonutConfig& config) {
  DOCFEED_ASSIGN_OR_RETURN(DonutGeometry g, ComputeDonutGeometry(width, height, config));
  // The two images ResizeStages allocates (each PillowResize checks its own again).
  if (config.do_resize) DOCFEED_RETURN_IF_ERROR(CheckPillowBomb(g.resized_width, g.resized_height));
  if (config.do_thumbnail) DOCFEED_RETURN_IF_ERROR(CheckPillowBomb(g.thumb_width, g.thumb_height));
  return g;
}

namespace {

// DonutResizeScaled's work on the decoded `image` of a full_width x full_height page decoded at
// 1 / k, into `out`; DonutResize passes the image itself (k = 1) rather than a ScaledSource copy.
Status ResizeScaled(const Image& image, int32_t full_width, int32_t full_height, int32_t k,
                    const DonutConfig& config, Image* out) {
  DOCFEED_RETURN_IF_ERROR(CheckImage(image, "input image"));
  if (image.channels != 1 && image.channels != 3) {
    return InvalidArgumentError("donut: resize takes L or RGB images (ToDonutInput), got " +
                                std::to_string(image.channels) + " channels");
  }
  if (k < 1 || (image.width - 1) * int64_t{k} >= full_width ||
      image.width * int64_t{k} < full_width || (image.height - 1) * int64_t{k} >= full_height ||
      image.height * int64_t{k} < full_height) {
    return InvalidArgumentError("donut: scaled image " + SizeText(image.width, image.height) +
                                " is not " + SizeText(full_width, full_height) + " / " +
                                std::to_string(k));
  }
  DOCFEED_ASSIGN_OR_RETURN(const DonutGeometry g,
                           CheckDonutResizable(full_width, full_height, config));
  Box box = ScaledBox(full_width, full_height, k);
  if (!g.rotate) return ResizeStages(image, box, g, config, out);
  box = RotateBoxClockwise(box, image.height);
  return ResizeStages(RotateClockwise(image), box, g, config, out);
}

}  // namespace

Status DonutResizeInto(const Image& image, const DonutConfig& config, Image* out) {
  return ResizeScaled(image, image.width, image.height, 1, config, out);
}

Result<Image> DonutResize(const Image& image, const DonutConfig& config) {
  Image out;
  DOCFEED_RETURN_IF_ERROR(DonutResizeInto(image, config, &out));
  return out;
}

Result<Image> DonutResizeScaled(const ScaledSource& source, const DonutConfig& config) {
  Image out;
  DOCFEED_RETURN_IF_ERROR(ResizeScaled(source.image, source.full_width, source.full_height,
                                       source.scale_denom, config, &out));
  return out;
}

PadOffsets CenterPad(int32_t h, int32_t w, const DonutConfig& config) {
  return PadOffsets{.top = (config.height - h) / 2, .left = (config.width - w) / 2};
}

PadOffsets DrawPad(int32_t h, int32_t w, const DonutConfig& config, PadRng& rng) {
  // Draw order matters for reproducibility across implementations: top first, as the processor.
  const uint32_t top = rng.UniformInclusive(static_cast<uint32_t>(config.height - h));
  const uint32_t left = rng.UniformInclusive(static_cast<uint32_t>(config.width - w));
  return PadOffsets{.top = static_cast<int32_t>(top), .left = static_cast<int32_t>(left)};
}

ImageView ViewOf(const Image& image) {
  return ImageView{image.pixels.data(), image.width, image.height, image.channels,
                   static_cast<ptrdiff_t>(image.stride_bytes())};
}

MutableImageView MutableViewOf(Image& image) {
  return MutableImageView{image.pixels.data(), image.width, image.height, image.channels,
                          static_cast<ptrdiff_t>(image.stride_bytes())};
}

}  // namespace docfeed::internal
