// The Idefics3 / SmolVLM / SmolDocling image preset: Idefics3ImageProcessor's geometry, its
// colour conversion of each generation, and its tiles (docs/idefics3-preprocessing.md).
//
// The processor (4.57.6's Idefics3ImageProcessor and 5.23.0's Idefics3ImageProcessorPil) turns
// one PIL image into (rows * cols + 1) or 1 tiles of max_image_size^2:
//   longest-edge resize -> resize to multiples of max_image_size -> rows x cols crops + the page
//   resized to max_image_size^2 (the "global image", last) -> RGB -> rescale -> normalize, CHW.
// Every resize is PIL's Image.resize (no reducing gap). 4.x converts to RGB after the resizes,
// so the mode of the opened image chooses the filter (Idefics3Input); 5.x converts first.
//
// docfeed splits it where the processor's arithmetic on floats starts. The "prepared" page
// (Idefics3Resize) holds every resized pixel in one image: the grid (rows * S x cols * S, S =
// max_image_size) with, below it, a band of S rows whose first S columns are the global image
// and whose other columns are 0. A page that is one tile is that S x S tile alone. Its size thus
// says rows and cols (Idefics3GridOf). Idefics3Tile then writes the tiles, normalized.
//
// Thread safety: all functions are reentrant.
#ifndef DOCFEED_IMAGING_IDEFICS3_H_
#define DOCFEED_IMAGING_IDEFICS3_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "codec/codec.h"
#include "docfeed/preprocess.h"
#include "docfeed/status.h"
#include "imaging/normalize.h"
#include "kernels/resize.h"

namespace docfeed::internal {

using docfeed::Idefics3Config;

// Errors: InvalidArgument naming the field: longest_edge or max_image_size outside 1..8192,
// do_resize off (the tile count would follow the original size without bound), a std that is
// zero or not finite, a non-finite mean or rescale_factor, hf_version not 4 or 5.
Status ValidateIdefics3Config(const Idefics3Config& config);

// The normalization table of `config` (normalize.h): float32(float64(v) * rescale_factor), then
// (x - float32(mean)) / float32(std) in float32.
Result<NormalizeTable> MakeIdefics3Table(const Idefics3Config& config);

// The sizes the processor goes through for a height x width page, with Python's arithmetic
// (true division in double, int() truncation, math.ceil).
struct Idefics3Geometry {
  int32_t resized_height = 0, resized_width = 0;  // after the longest-edge resize
  int32_t grid_height = 0, grid_width = 0;        // after resize_for_vision_encoder (or S x S)
  int32_t rows = 0, cols = 0;                     // 0, 0: the page is one tile
};
// Errors: InvalidArgument for an empty page or a side above 2^30.
Result<Idefics3Geometry> ComputeIdefics3Geometry(int64_t height, int64_t width,
                                                 const Idefics3Config& config);

// Tiles of a page of rows x cols: rows * cols + 1, or 1 when rows == 0.
int64_t Idefics3Tiles(int32_t rows, int32_t cols);
// An upper bound of the tiles over every page (see idefics3.cc).
int64_t Idefics3MaxTiles(const Idefics3Config& config);
// Values in one tile: 3 * max_image_size^2.
int64_t Idefics3TileValues(const Idefics3Config& config);

// The size of the prepared page of a geometry, and the inverse: rows and cols of a prepared page
// of height x width. Errors (the inverse): Corruption when no geometry gives that size.
struct Idefics3Grid {
  int32_t rows = 0, cols = 0;
};
void Idefics3PreparedSize(const Idefics3Geometry& g, const Idefics3Config& config, int32_t* height,
                          int32_t* width);
Result<Idefics3Grid> Idefics3GridOf(int32_t height, int32_t width, const Idefics3Config& config);

// A decoded page as the generation's processor holds it before its first resize, and the filter
// its resizes use (the configured LANCZOS).
//   4.x: an RGB page stays RGB and an RGBA page stays RGBA (resized with premultiplied alpha and
//        composited onto white by Idefics3Resize at the end, as the processor's convert_to_rgb
//        after the resizes; a page whose alpha is 255 everywhere gives the same bytes as RGB
//        and is taken as RGB). The processor raises ValueError on every other mode (L, P, 1, LA,
//        PA, I;16: its channel inference fails on one or two bands); docfeed gives what it
//        returns for image.convert("RGB") (ToDonutInput of 4.x: alpha dropped, gray kept one
//        channel).
//   5.x: ToDonutInput of 5.x (transparency composited onto white first).
// `pillow_mode` is PillowModeName of the source; `transparency` its DonutTransparencyKey.
// Errors: InvalidArgument for a 4.x CMYK image (the processor reads its bands as RGBA), and
// ToDonutInput's.
struct Idefics3Input {
  Image image;
  ResampleFilter filter = ResampleFilter::kLanczos;
};
Result<Idefics3Input> ToIdefics3Input(Image decoded, std::string_view pillow_mode,
                                      const Idefics3Config& config,
                                      const std::optional<std::array<uint16_t, 3>>& transparency);

// The prepared page (header comment) of `input` (1, 3 or 4 channels, as ToIdefics3Input gives):
// every resize with `filter` through Pillow's arithmetic (a resize to the same size is a copy);
// 4 channels are composited onto white at the end. The result, written to `out`, has 1 or 3
// channels; out's pixel buffer is reused when large enough (a worker that keeps `out` neither
// allocates nor zeroes a page's worth of memory for pages of the same size).
// REQUIRES: ValidateIdefics3Config(config) is OK; out is not &input.
// Errors: InvalidArgument for a bad image or a size ComputeIdefics3Geometry refuses.
Status Idefics3Resize(const Image& input, ResampleFilter filter, const Idefics3Config& config,
                      Image* out);

// Writes the tiles of a prepared page (1 or 3 channels, a size Idefics3GridOf accepts) in the
// processor's order: row-major grid tiles, then the global image (or the one tile). Each tile
// is 3 x S x S (kChw) or S x S x 3 (kHwc) values table[c][v] in `dtype` (kUint8: v itself).
// REQUIRES: `out` holds Idefics3Tiles * Idefics3TileValues * DTypeSize(dtype) bytes, aligned.
// Errors: InvalidArgument for a bad view; Corruption for a size no geometry gives.
Status Idefics3Tile(const ImageView& page, const Idefics3Config& config,
                    const NormalizeTable& table, DType dtype, OutputLayout layout, void* out);

}  // namespace docfeed::internal

#endif  // DOCFEED_IMAGING_IDEFICS3_H_
