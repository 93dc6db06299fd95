#include "imaging/idefics3.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "imaging/donut.h"
#include "imaging/recycled_image.h"

namespace docfeed::internal {
namespace {

// The processor's absolute cap on the longest-edge resize (MAX_IMAGE_SIZE, "4k resolution").
constexpr int64_t kMaxImageSize = 4096;
constexpr int32_t kMaxSetting = 8192;

std::string Dims(int64_t height, int64_t width) {
  return std::to_string(width) + "x" + std::to_string(height);
}

// Python's int(x) of a finite, non-negative double: truncation.
int64_t PyInt(double x) { return static_cast<int64_t>(x); }

// Python's math.ceil(a / b) for ints: true division in double, then ceil.
int64_t PyCeilDiv(int64_t a, int64_t b) {
  return static_cast<int64_t>(std::ceil(static_cast<double>(a) / static_cast<double>(b)));
}

// _resize_output_size_rescale_to_max_len(height, width, min_len=1, max_len): the longest edge
// becomes max_len, the other keeps the aspect ratio, truncated, then made even.
void RescaleToMaxLen(int64_t& height, int64_t& width, int64_t max_len) {
  const double aspect = static_cast<double>(width) / static_cast<double>(height);
  if (width >= height) {
    width = max_len;
    height = PyInt(static_cast<double>(width) / aspect);
    if (height % 2 != 0) height += 1;
  } else {
    height = max_len;
    width = PyInt(static_cast<double>(height) * aspect);
    if (width % 2 != 0) width += 1;
  }
  height = std::max<int64_t>(height, 1);
  width = std::max<int64_t>(width, 1);
}

// _resize_output_size_scale_below_upper_bound(height, width, max_len=MAX_IMAGE_SIZE).
void ScaleBelowUpperBound(int64_t& height, int64_t& width, int64_t max_len) {
  const double aspect = static_cast<double>(width) / static_cast<double>(height);
  if (width >= height && width > max_len) {
    width = max_len;
    height = PyInt(static_cast<double>(width) / aspect);
  } else if (height > width && height > max_len) {
    height = max_len;
    width = PyInt(static_cast<double>(height) * aspect);
  }
  height = std::max<int64_t>(height, 1);
  width = std::max<int64_t>(width, 1);
}

// resize_for_vision_encoder's size: the longer side rounded up to a multiple of s, the other
// from the aspect ratio (truncated), then rounded up too.
void VisionEncoderSize(int64_t& height, int64_t& width, int64_t s) {
  const double aspect = static_cast<double>(width) / static_cast<double>(height);
  if (width >= height) {
    width = PyCeilDiv(width, s) * s;
    height = PyInt(static_cast<double>(width) / aspect);
    height = PyCeilDiv(height, s) * s;
  } else {
    height = PyCeilDiv(height, s) * s;
    width = PyInt(static_cast<double>(height) * aspect);
    width = PyCeilDiv(width, s) * s;
  }
}

// PIL's Image.resize(size, filter) of `src` into `dst` (a copy when the size is the same, as
// Pillow returns self.copy()).
Status ResizeInto(const ImageView& src, const MutableImageView& dst, ResampleFilter filter) {
  if (src.width == dst.width && src.height == dst.height) {
    const size_t row = static_cast<size_t>(src.width) * static_cast<size_t>(src.channels);
    for (int32_t y = 0; y < src.height; ++y) {
      std::memcpy(dst.data + y * dst.stride_bytes, src.data + y * src.stride_bytes, row);
    }
    return Status::Ok();
  }
  return Resize(src, dst, filter);
}

// The rectangle of `image` at (top, left) of height x width, as a view.
MutableImageView SubView(Image& image, int32_t top, int32_t left, int32_t height, int32_t width) {
  const auto stride = static_cast<ptrdiff_t>(image.stride_bytes());
  return {image.pixels.data() + top * stride + static_cast<ptrdiff_t>(left) * image.channels, width,
          height, image.channels, stride};
}

ImageView Const(const MutableImageView& v) {
  return {v.data, v.width, v.height, v.channels, v.stride_bytes};
}

// The processor's convert_to_rgb of an RGBA page: alpha_composite onto opaque white, alpha
// dropped.
Image CompositeRgba(const Image& rgba) {
  Image rgb = ImageToOverwrite(rgba.width, rgba.height, 3);  // every byte written below
  const size_t pixels = static_cast<size_t>(rgba.width) * static_cast<size_t>(rgba.height);
  for (size_t i = 0; i < pixels; ++i) {
    const uint8_t alpha = rgba.pixels[4 * i + 3];
    for (size_t c = 0; c < 3; ++c) {
      rgb.pixels[3 * i + c] = CompositeOnWhite(rgba.pixels[4 * i + c], alpha);
    }
  }
  return rgb;
}

// An RGBA page whose alpha is 255 everywhere, without its alpha band. Resizing it as RGB gives
// the same colour bytes as Pillow's RGBA path: premultiplying and unpremultiplying by 255 are
// the identity (MULDIV255(v, 255) = v; rgba2rgbA copies alpha-255 pixels), and the resampled
// alpha stays 255 (the integer weights sum to 2^22 within a few units, so 255 * their sum
// rounds back to 255, or is clipped to it); compositing an opaque pixel onto white keeps it.
std::optional<Image> OpaqueRgb(const Image& rgba) {
  const size_t pixels = static_cast<size_t>(rgba.width) * static_cast<size_t>(rgba.height);
  for (size_t i = 0; i < pixels; ++i) {
    if (rgba.pixels[4 * i + 3] != 255) return std::nullopt;
  }
  Image rgb = ImageToOverwrite(rgba.width, rgba.height, 3);  // every byte written below
  for (size_t i = 0; i < pixels; ++i) {
    for (size_t c = 0; c < 3; ++c) rgb.pixels[3 * i + c] = rgba.pixels[4 * i + c];
  }
  return rgb;
}

}  // namespace

Status ValidateIdefics3Config(const Idefics3Config& config) {
  if (config.longest_edge < 1 || config.longest_edge > kMaxSetting) {
    return InvalidArgumentError("idefics3: size longest_edge must be in 1.." +
                                std::to_string(kMaxSetting) + ", got " +
                                std::to_string(config.longest_edge));
  }
  if (config.max_image_size < 1 || config.max_image_size > kMaxSetting) {
    return InvalidArgumentError("idefics3: max_image_size longest_edge must be in 1.." +
                                std::to_string(kMaxSetting) + ", got " +
                                std::to_string(config.max_image_size));
  }
  if (!config.do_resize) {
    return InvalidArgumentError(
        "idefics3: do_resize must be true (without it the tile count follows the original "
        "page's size without bound)");
  }
  if (config.hf_version != 4 && config.hf_version != 5) {
    return InvalidArgumentError("idefics3: hf_version must be 4 or 5, got " +
                                std::to_string(config.hf_version));
  }
  // The normalization's checks are Donut's (ValidateDonutConfig through MakeNormalizeTable).
  return MakeIdefics3Table(config).status();
}

Result<NormalizeTable> MakeIdefics3Table(const Idefics3Config& config) {
  DonutConfig normalization;  // numpy's rescale + normalize, as Donut's PIL path
  normalization.do_rescale = config.do_rescale;
  normalization.do_normalize = config.do_normalize;
  normalization.rescale_factor = config.rescale_factor;
  normalization.mean = config.mean;
  normalization.std = config.std;
  Result<NormalizeTable> table = MakeNormalizeTable(normalization);
  if (!table.ok()) {
    return InvalidArgumentError("idefics3: " + std::string(table.status().message()));
  }
  return table;
}

Result<Idefics3Geometry> ComputeIdefics3Geometry(int64_t height, int64_t width,
                                                 const Idefics3Config& config) {
  if (height < 1 || width < 1 || height > (int64_t{1} << 30) || width > (int64_t{1} << 30)) {
    return InvalidArgumentError("idefics3: page size " + Dims(height, width) +
                                " is empty or too large");
  }
  const int64_t s = config.max_image_size;
  int64_t h = height, w = width;
  RescaleToMaxLen(h, w, config.longest_edge);
  ScaleBelowUpperBound(h, w, kMaxImageSize);
  Idefics3Geometry g;
  g.resized_height = static_cast<int32_t>(h);
  g.resized_width = static_cast<int32_t>(w);
  if (!config.do_image_splitting) {
    g.grid_height = g.grid_width = static_cast<int32_t>(s);
    return g;
  }
  VisionEncoderSize(h, w, s);
  if (h < 1 || w < 1) {  // int() truncated a side to 0: PIL would refuse the resize
    return InvalidArgumentError("idefics3: page " + Dims(height, width) +
                                " gives an empty side in resize_for_vision_encoder");
  }
  g.grid_height = static_cast<int32_t>(h);
  g.grid_width = static_cast<int32_t>(w);
  if (h > s || w > s) {
    g.rows = static_cast<int32_t>(PyCeilDiv(h, s));
    g.cols = static_cast<int32_t>(PyCeilDiv(w, s));
  }
  return g;
}

int64_t Idefics3Tiles(int32_t rows, int32_t cols) {
  return rows == 0 ? 1 : int64_t{rows} * cols + 1;
}

// The longest-edge step leaves each side at most min(longest_edge + 1, 4096) (+1: an odd
// longest_edge whose other side rounds up to even); resize_for_vision_encoder rounds the longer
// side up to a multiple of S and never makes the shorter one longer than it.
int64_t Idefics3MaxTiles(const Idefics3Config& config) {
  if (!config.do_image_splitting) return 1;
  const int64_t side = std::min<int64_t>(int64_t{config.longest_edge} + 1, kMaxImageSize);
  const int64_t n = (side + config.max_image_size - 1) / config.max_image_size;
  return n * n + 1;
}

int64_t Idefics3TileValues(const Idefics3Config& config) {
  return 3 * int64_t{config.max_image_size} * config.max_image_size;
}

void Idefics3PreparedSize(const Idefics3Geometry& g, const Idefics3Config& config, int32_t* height,
                          int32_t* width) {
  const int32_t s = config.max_image_size;
  *height = g.rows == 0 ? s : (g.rows + 1) * s;
  *width = g.rows == 0 ? s : g.cols * s;
}

Result<Idefics3Grid> Idefics3GridOf(int32_t height, int32_t width, const Idefics3Config& config) {
  const int32_t s = config.max_image_size;
  if (height == s && width == s) return Idefics3Grid{};
  const bool multiple = height % s == 0 && width % s == 0;
  const Idefics3Grid grid{multiple ? height / s - 1 : 0, multiple ? width / s : 0};
  if (!config.do_image_splitting || !multiple || grid.rows < 1 || grid.cols < 1 ||
      (grid.rows == 1 && grid.cols == 1) ||
      Idefics3Tiles(grid.rows, grid.cols) > Idefics3MaxTiles(config)) {
    return CorruptionError("prepared page is " + Dims(height, width) +
                           ", which the idefics3 preset cannot give with max_image_size " +
                           std::to_string(s));
  }
  return grid;
}

Result<Idefics3Input> ToIdefics3Input(Image decoded, std::string_view pillow_mode,
                                      const Idefics3Config& config,
                                      const std::optional<std::array<uint16_t, 3>>& transparency) {
  Idefics3Input in;
  DonutConfig conversion;
  conversion.hf_version = config.hf_version;
  if (config.hf_version == 4 && (pillow_mode == "RGB" || pillow_mode == "RGBA")) {
    // The bands the processor's numpy array holds: RGBA keeps its alpha through the resizes.
    if (decoded.channels != static_cast<int32_t>(pillow_mode.size())) {
      return InvalidArgumentError("idefics3: a " + std::string(pillow_mode) + " image decoded to " +
                                  std::to_string(decoded.channels) + " channels");
    }
    std::optional<Image> opaque = decoded.channels == 4 ? OpaqueRgb(decoded) : std::nullopt;
    if (opaque) {
      RecyclePixels(decoded);
      in.image = std::move(*opaque);
    } else {
      in.image = std::move(decoded);
    }
    return in;
  }
  if (config.hf_version == 4 && pillow_mode == "CMYK") {
    return InvalidArgumentError(
        "idefics3: Idefics3ImageProcessor of transformers 4.x reads the four bands of a mode "
        "CMYK image as RGBA; convert it to RGB first or use hf_version 5");
  }
  // 4.x raises on every other mode (one or two bands); docfeed gives what it returns for
  // image.convert("RGB"). 5.x converts first, compositing transparency onto white.
  DOCFEED_ASSIGN_OR_RETURN(in.image, ToDonutInput(std::move(decoded), conversion, transparency));
  return in;
}

Status Idefics3Resize(const Image& input, ResampleFilter filter, const Idefics3Config& config,
                      Image* out) {
  if (input.channels < 1 || input.channels == 2 || input.channels > 4 ||
      input.pixels.size() != input.stride_bytes() * static_cast<size_t>(input.height)) {
    return InvalidArgumentError(
        "idefics3: the page must have 1, 3 or 4 channels and match its size");
  }
  DOCFEED_ASSIGN_OR_RETURN(const Idefics3Geometry g,
                           ComputeIdefics3Geometry(input.height, input.width, config));
  const int32_t s = config.max_image_size;
  const int32_t ch = input.channels;
  // The resize writes every byte.
  Image resized = ImageToOverwrite(g.resized_width, g.resized_height, ch);
  DOCFEED_RETURN_IF_ERROR(ResizeInto(ViewOf(input), MutableViewOf(resized), filter));
  // The page is written in place into `out` (4 channels: into a page composited afterwards).
  Image rgba;
  Image& page = ch == 4 ? rgba : *out;
  Idefics3PreparedSize(g, config, &page.height, &page.width);
  page.channels = ch;
  page.pixels.resize(page.stride_bytes() * static_cast<size_t>(page.height));
  if (g.rows == 0) {
    // Without splitting: the page squared to S x S; with it, a grid of one tile (already S x S
    // after resize_for_vision_encoder, or resized to it).
    DOCFEED_RETURN_IF_ERROR(ResizeInto(ViewOf(resized), SubView(page, 0, 0, s, s), filter));
  } else {
    const MutableImageView grid = SubView(page, 0, 0, g.grid_height, g.grid_width);
    DOCFEED_RETURN_IF_ERROR(ResizeInto(ViewOf(resized), grid, filter));
    DOCFEED_RETURN_IF_ERROR(ResizeInto(Const(grid), SubView(page, g.grid_height, 0, s, s), filter));
    // The band's columns right of the global image are 0 (the buffer may hold an earlier page).
    const size_t rest = static_cast<size_t>(page.width - s) * static_cast<size_t>(ch);
    for (int32_t y = g.grid_height; y < page.height && rest > 0; ++y) {
      std::memset(page.pixels.data() + static_cast<size_t>(y) * page.stride_bytes() +
                      static_cast<size_t>(s) * static_cast<size_t>(ch),
                  0, rest);
    }
  }
  RecyclePixels(resized);
  if (ch == 4) {
    RecyclePixels(*out);
    *out = CompositeRgba(rgba);
    RecyclePixels(rgba);
  }
  return Status::Ok();
}

Status Idefics3Tile(const ImageView& page, const Idefics3Config& config,
                    const NormalizeTable& table, DType dtype, OutputLayout layout, void* out) {
  if (page.data == nullptr || (page.channels != 1 && page.channels != 3) ||
      page.stride_bytes < static_cast<ptrdiff_t>(page.width) * page.channels) {
    return InvalidArgumentError("idefics3: bad prepared page view");
  }
  DOCFEED_ASSIGN_OR_RETURN(const Idefics3Grid grid,
                           Idefics3GridOf(page.height, page.width, config));
  // Each tile, then the global image below the grid (or the one tile), through Normalize: its
  // layouts are the processor's per-tile layouts, and its CHW float32 writer is the SIMD one.
  const int32_t s = config.max_image_size;
  const size_t tile_bytes =
      size_t{3} * static_cast<size_t>(s) * static_cast<size_t>(s) * DTypeSize(dtype);
  auto* dst = static_cast<uint8_t*>(out);
  auto write_tile = [&](int32_t y0, int32_t x0) {
    const ImageView tile{page.data + static_cast<ptrdiff_t>(y0) * page.stride_bytes +
                             static_cast<ptrdiff_t>(x0) * page.channels,
                         s, s, page.channels, page.stride_bytes};
    const Status status = Normalize(tile, table, layout, dtype, dst);
    dst += tile_bytes;
    return status;
  };
  for (int32_t r = 0; r < grid.rows; ++r) {
    for (int32_t c = 0; c < grid.cols; ++c) DOCFEED_RETURN_IF_ERROR(write_tile(r * s, c * s));
  }
  DOCFEED_RETURN_IF_ERROR(write_tile(grid.rows * s, 0));
  return Status::Ok();
}

}  // namespace docfeed::internal
