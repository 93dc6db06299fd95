// NougatImageProcessor's crop_margin (transformers models/nougat/image_processing_nougat.py,
// 4.x, and image_processing_pil_nougat.py, 5.x) and the Donut settings of its other steps. See
// nougat.h.
#include "imaging/nougat.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "imaging/luma_range.h"
#include "imaging/recycled_image.h"
#include "kernels/simd_mode.h"

namespace docfeed::internal {
namespace {

constexpr int32_t kMaxTargetSide = 65535;

// The gray value of pixel x of a row of 1 or 3 channels.
template <int kChannels>
inline uint8_t GrayAt(const uint8_t* row, int32_t x) {
  if constexpr (kChannels == 1) {
    return row[x];
  } else {
    const uint8_t* p = row + static_cast<ptrdiff_t>(x) * 3;
    return PillowLuma(p[0], p[1], p[2]);
  }
}

// The range of the page's gray values, row by row; an RGB row's luma through the SIMD scan
// (luma_range.h; 0.6 of a 3.4 ms Nougat page one pixel at a time) unless the scalar mode is
// forced, which the tests compare it with.
template <int kChannels>
void GrayRange(const ImageView& image, uint8_t& min_out, uint8_t& max_out) {
  const bool simd = kChannels == 3 && CurrentSimdMode() != SimdMode::kScalar;
  uint8_t lo = 255, hi = 0;
  for (int32_t y = 0; y < image.height; ++y) {
    const uint8_t* row = image.data + y * image.stride_bytes;
    if (simd) {
      ExtendLumaRangeRgb(row, static_cast<size_t>(image.width), &lo, &hi);
    } else {
      uint8_t row_lo = 255, row_hi = 0;
      for (int32_t x = 0; x < image.width; ++x) {
        const uint8_t g = GrayAt<kChannels>(row, x);
        row_lo = std::min(row_lo, g);
        row_hi = std::max(row_hi, g);
      }
      lo = std::min(lo, row_lo);
      hi = std::max(hi, row_hi);
    }
    if (lo == 0 && hi == 255) break;  // the full range: the rest cannot change it
  }
  min_out = lo;
  max_out = hi;
}

// The bounding box of the pixels whose gray value is dark. Rows are scanned from the top and
// from the bottom until one holds a dark pixel; the rows between only need the columns outside
// the box found so far. REQUIRES: at least one dark pixel.
template <int kChannels>
CropBox DarkBox(const ImageView& image, const std::array<bool, 256>& dark) {
  const int32_t w = image.width;
  auto is_dark = [&](const uint8_t* row, int32_t x) { return dark[GrayAt<kChannels>(row, x)]; };
  // Widens [left, right] to the dark pixels of row y outside it: searches [0, left) from the
  // left and (right, w) from the right. Returns whether the row has a dark pixel there.
  auto widen = [&](int32_t y, int32_t& left, int32_t& right) {
    const uint8_t* row = image.data + y * image.stride_bytes;
    bool found = false;
    for (int32_t x = 0; x < left; ++x) {
      if (is_dark(row, x)) {
        left = x;
        found = true;
        break;
      }
    }
    for (int32_t x = w - 1; x > right; --x) {
      if (is_dark(row, x)) {
        right = x;
        found = true;
        break;
      }
    }
    return found;
  };
  // Whether row y has a dark pixel anywhere (then widens [left, right] to it).
  auto any_dark = [&](int32_t y, int32_t& left, int32_t& right) {
    const uint8_t* row = image.data + y * image.stride_bytes;
    for (int32_t x = 0; x < w; ++x) {
      if (is_dark(row, x)) {
        widen(y, left, right);
        return true;
      }
    }
    return false;
  };
  int32_t left = w, right = -1;  // empty: every column is outside
  int32_t top = 0;
  while (top < image.height - 1 && !any_dark(top, left, right)) ++top;
  if (right < 0) widen(top, left, right);  // the last row: the dark pixel is there
  int32_t bottom = image.height - 1;
  while (bottom > top && !any_dark(bottom, left, right)) --bottom;
  for (int32_t y = top + 1; y < bottom; ++y) widen(y, left, right);
  return CropBox{left, top, right - left + 1, bottom - top + 1};
}

Status CheckView(const ImageView& image) {
  if (image.data == nullptr || image.width < 1 || image.height < 1 ||
      (image.channels != 1 && image.channels != 3) ||
      image.stride_bytes < static_cast<ptrdiff_t>(image.width) * image.channels) {
    return InvalidArgumentError("nougat: crop_margin takes a non-empty L or RGB image, got " +
                                std::to_string(image.width) + "x" + std::to_string(image.height) +
                                " with " + std::to_string(image.channels) + " channels");
  }
  return Status::Ok();
}

}  // namespace

Status ValidateNougatConfig(const NougatConfig& config) {
  if (config.height < 1 || config.height > kMaxTargetSide || config.width < 1 ||
      config.width > kMaxTargetSide) {
    return InvalidArgumentError("nougat: size height x width must be within 1..65535, got " +
                                std::to_string(config.height) + "x" + std::to_string(config.width));
  }
  if (!config.do_pad) {
    return InvalidArgumentError(
        "nougat: do_pad must be true (the preset's output is the padded height x width page)");
  }
  if (config.hf_version != 4 && config.hf_version != 5) {
    return InvalidArgumentError(
        "nougat: hf_version must be 4 or 5 (the transformers generation), got " +
        std::to_string(config.hf_version));
  }
  // The rest (rescale_factor, mean, std) as Donut checks them.
  Status s = ValidateDonutConfig(NougatGeometry(config));
  if (!s.ok()) {
    std::string message(s.message());
    if (message.starts_with("donut: ")) message = "nougat: " + message.substr(7);
    return InvalidArgumentError(message);
  }
  return Status::Ok();
}

DonutConfig NougatGeometry(const NougatConfig& config) {
  DonutConfig d;
  d.height = config.height;
  d.width = config.width;
  d.align_long_axis = config.align_long_axis;
  d.do_resize = config.do_resize;
  d.do_thumbnail = config.do_thumbnail;
  d.do_pad = config.do_pad;
  d.do_rescale = config.do_rescale;
  d.do_normalize = config.do_normalize;
  d.rescale_factor = config.rescale_factor;
  d.mean = config.mean;
  d.std = config.std;
  d.hf_version = 4;  // BICUBIC thumbnail with reducing_gap 2.0 in both generations
  d.backend = DonutBackend::kPil;
  return d;
}

DonutConfig NougatConversion(const NougatConfig& config) {
  DonutConfig d;
  d.hf_version = config.hf_version;
  return d;
}

std::array<bool, 256> NougatDarkValues(uint8_t min_gray, uint8_t max_gray) {
  std::array<bool, 256> dark{};
  // numpy: (uint8 - uint8) stays uint8 (no underflow within min..max), uint8 / uint8 is a
  // float64 true division, * 255 a float64 product, then the comparison with the int 200.
  const double range = static_cast<double>(max_gray - min_gray);
  for (int v = min_gray; v <= max_gray; ++v) {
    const double normalized = static_cast<double>(v - min_gray) / range * 255.0;
    dark[static_cast<size_t>(v)] = normalized < static_cast<double>(kNougatGrayThreshold);
  }
  return dark;
}

Result<CropBox> NougatMarginBox(const ImageView& image) {
  DOCFEED_RETURN_IF_ERROR(CheckView(image));
  uint8_t lo = 0, hi = 0;
  if (image.channels == 1) {
    GrayRange<1>(image, lo, hi);
  } else {
    GrayRange<3>(image, lo, hi);
  }
  if (lo == hi) return CropBox{0, 0, image.width, image.height};
  const std::array<bool, 256> dark = NougatDarkValues(lo, hi);
  const CropBox box = image.channels == 1 ? DarkBox<1>(image, dark) : DarkBox<3>(image, dark);
  if (box.width < 1 || box.height < 1) {  // the darkest value is always dark
    return InternalError("nougat: crop_margin found no dark pixel");
  }
  return box;
}

Result<Image> NougatCropMargin(Image image) {
  if (image.pixels.size() !=
      image.stride_bytes() * static_cast<size_t>(std::max(image.height, 0))) {
    return InvalidArgumentError("nougat: crop_margin got an inconsistent image");
  }
  DOCFEED_ASSIGN_OR_RETURN(const CropBox box, NougatMarginBox(ViewOf(image)));
  if (box.x == 0 && box.y == 0 && box.width == image.width && box.height == image.height) {
    return image;
  }
  // In place: destination row y starts at or before source row y + box.y (the new stride is no
  // longer), so moving the rows in order never overwrites one not yet moved. No allocation, no
  // zero fill, no fresh pages.
  const size_t src_stride = image.stride_bytes();
  const size_t row_bytes = static_cast<size_t>(box.width) * static_cast<size_t>(image.channels);
  uint8_t* base = image.pixels.data();
  const size_t offset = static_cast<size_t>(box.y) * src_stride +
                        static_cast<size_t>(box.x) * static_cast<size_t>(image.channels);
  for (int32_t y = 0; y < box.height; ++y) {
    std::memmove(base + static_cast<size_t>(y) * row_bytes,
                 base + offset + static_cast<size_t>(y) * src_stride, row_bytes);
  }
  image.width = box.width;
  image.height = box.height;
  image.pixels.resize(row_bytes * static_cast<size_t>(box.height));
  return image;
}

Status NougatResizeInto(Image image, const NougatConfig& config, Image* out) {
  DOCFEED_RETURN_IF_ERROR(ValidateNougatConfig(config));
  if (config.do_crop_margin) {
    DOCFEED_ASSIGN_OR_RETURN(image, NougatCropMargin(std::move(image)));
  }
  DOCFEED_RETURN_IF_ERROR(DonutResizeInto(image, NougatGeometry(config), out));
  RecyclePixels(image);
  return Status::Ok();
}

Result<Image> NougatResize(Image image, const NougatConfig& config) {
  Image out;
  DOCFEED_RETURN_IF_ERROR(NougatResizeInto(std::move(image), config, &out));
  return out;
}

}  // namespace docfeed::internal
