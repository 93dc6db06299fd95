// Pillow-identical 8-bit image resampling: Resize() and Reduce().
//
// docfeed feeds models trained on images that Hugging Face's DonutImageProcessor produced with
// Pillow, so a resize here must give exactly Pillow's bytes, not merely similar ones. Resize()
// reproduces PIL.Image.Image.resize(size, resample, box, reducing_gap) and Reduce() reproduces
// PIL.Image.Image.reduce(factor, box) for 8-bit modes L, LA, RGB and RGBA (1..4 interleaved
// channels). The exact rules (22-bit fixed-point coefficients, horizontal-then-vertical passes
// with 8-bit rounding between them, pass skipping, the box, reducing_gap) are described in
// docs/pillow-resample.md and src/kernels/README.md, after Pillow's Resample.c, Reduce.c,
// Geometry.c, _imaging.c and Image.py.
//
// Thread safety: all functions are reentrant; each thread keeps its own scratch buffers.
#ifndef DOCFEED_KERNELS_RESIZE_H_
#define DOCFEED_KERNELS_RESIZE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "docfeed/status.h"

namespace docfeed::internal {

// Pillow's Image.Resampling filters. The numeric values are Pillow's.
enum class ResampleFilter : int {
  kNearest = 0,
  kLanczos = 1,
  kBilinear = 2,
  kBicubic = 3,
  kBox = 4,
  kHamming = 5,
};

// A read-only 8-bit interleaved image. Row y starts at data + y * stride_bytes; a row holds
// width * channels bytes. channels 1, 2, 3, 4 mean Pillow modes L, LA, RGB, RGBA. The view does
// not own the pixels.
struct ImageView {
  const uint8_t* data = nullptr;
  int32_t width = 0;
  int32_t height = 0;
  int32_t channels = 0;
  ptrdiff_t stride_bytes = 0;
};

// A writable ImageView.
struct MutableImageView {
  uint8_t* data = nullptr;
  int32_t width = 0;
  int32_t height = 0;
  int32_t channels = 0;
  ptrdiff_t stride_bytes = 0;
};

// Whose fixed-point arithmetic a resize uses. Both compute the same double-precision weights
// (Pillow's precompute_coeffs, which torch's antialiased upsampling copies); they differ in how
// the weights become integers and in the pass order:
//   kPillow      22-bit weights (normalize_coeffs_8bpc); vertical pass first when Pillow's
//                ImagingResampleInner would choose it.
//   kTorchUint8  torch's CPU uint8 antialiased path (UpSampleKernel.cpp
//                _compute_index_ranges_int16_weights, the AVX2 loops adapted from Pillow-SIMD):
//                int16 weights at the largest precision p < 22 for which the axis's largest
//                weight still fits, horizontal pass always first. What torchvision's
//                resize(uint8 tensor, antialias=True) gives on the CPU.
// kTorchUint8 is implemented by scaling the int16 weights up to 22 bits (w << (22 - p)), which
// gives exactly torch's (sum + 2^(p-1)) >> p, so the same kernels run both.
enum class ResampleArithmetic { kPillow, kTorchUint8 };

// Pillow's `box` argument: the source region (x0, y0) - (x1, y1) in pixel units, which may be
// fractional for Resize(). Pillow passes it to C as float32, and so does Resize().
struct Box {
  double x0 = 0;
  double y0 = 0;
  double x1 = 0;
  double y1 = 0;
};

// Writes into `dst` what PIL's `src.resize((dst.width, dst.height), filter, box, reducing_gap)`
// returns, byte for byte. `box == nullptr` means the whole image; `reducing_gap == 0` means None.
// For 2 and 4 channels (LA, RGBA) the non-NEAREST filters resample premultiplied alpha, as Pillow
// does.
// REQUIRES: src and dst do not overlap.
// Errors: InvalidArgument if a view is empty or inconsistent (null data, size < 1, channels
// outside 1..4, stride smaller than a row, channel counts differ), the box lies outside the
// image or is empty (Pillow accepts a zero-width box; docfeed does not), or 0 < reducing_gap < 1.
// `arithmetic` kTorchUint8 (see above) takes BILINEAR or BICUBIC, no box and no reducing_gap,
// and 1 or 3 channels (torch has no premultiplied-alpha step).
Status Resize(const ImageView& src, const MutableImageView& dst, ResampleFilter filter,
              const Box* box = nullptr, double reducing_gap = 0,
              ResampleArithmetic arithmetic = ResampleArithmetic::kPillow);

// Writes into `dst` what PIL's `src.reduce((factor_x, factor_y), box)` returns: every output
// pixel is the rounded mean of a factor_x x factor_y block of the box; the last column and row
// average partial blocks. dst must be ceil(box width / factor_x) x ceil(box height / factor_y).
// REQUIRES: src and dst do not overlap.
// Errors: InvalidArgument for bad views, factors < 1, a box that is not integral, lies outside
// the image or is empty, or a dst of the wrong size.
Status Reduce(const ImageView& src, int32_t factor_x, int32_t factor_y, const Box* box,
              const MutableImageView& dst);

// Receives the rows of an image top to bottom, over any number of calls.
class RowSink {
 public:
  virtual ~RowSink() = default;
  // `count` rows, `stride_bytes` apart, continuing where the previous call stopped. The rows are
  // read during the call only. REQUIRES: count >= 0.
  virtual void PushRows(const uint8_t* rows, ptrdiff_t stride_bytes, int32_t count) = 0;
};

// Where a stream's output rows go: into `dst` (row o at dst + o * dst_stride_bytes) when it is
// set, else to `next`, in order, in bands of a few rows.
struct StreamOutput {
  uint8_t* dst = nullptr;
  ptrdiff_t dst_stride_bytes = 0;
  RowSink* next = nullptr;
};

// Resize() as a stream, for a source that arrives band by band (a decoder) and a destination
// that may be the next stage: push the src_width x src_height source's rows in order, and the
// output rows arrive in order at `out`, byte-identical to Resize(src, dst, filter, box,
// reducing_gap) with dst of dst_width x dst_height. Rows are consumed as they arrive (a few
// rows of state, no whole intermediate image), so the source can live in a small reused buffer.
// Returns nullptr (and no error) for the cases it does not stream, where the caller uses
// Resize(): 2 or 4 channels (alpha), NEAREST, a reduce() pre-step (reducing_gap large enough to
// reduce), and a crop that Pillow copies. Once all source rows are pushed, every output row has
// been delivered. REQUIRES: out.dst (if set) holds dst_height rows of dst_width * channels
// bytes; out.next (if used) outlives the stream.
// Errors: as Resize for bad sizes, channels, box or reducing_gap; InvalidArgument if out has
// neither dst nor next.
Result<std::unique_ptr<RowSink>> MakeResizeStream(
    int32_t src_width, int32_t src_height, int32_t channels, int32_t dst_width, int32_t dst_height,
    ResampleFilter filter, const Box* box, double reducing_gap, StreamOutput out,
    ResampleArithmetic arithmetic = ResampleArithmetic::kPillow);

}  // namespace docfeed::internal

#endif  // DOCFEED_KERNELS_RESIZE_H_
