// Resize() and Reduce(): Pillow's Python-level rules (Image.resize, Image.reduce in Image.py),
// its C entry points (_resize, _reduce in _imaging.c) and ImagingResampleInner (Resample.c),
// composed from the kernels in resample.h, reduce.h and pixel_ops.h. The order of checks and
// shortcuts follows Pillow's, because each shortcut changes bytes (docs/pillow-resample.md 1.1,
// 1.5, 1.9).
#include "kernels/resize.h"

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/pixel_ops.h"
#include "kernels/reduce.h"
#include "kernels/resample.h"
#include "kernels/resample_coeffs.h"
#include "kernels/resample_stream.h"

namespace docfeed::internal {
namespace {

// A growable per-thread buffer: repeated resizes on one thread reuse the same memory.
class Scratch {
 public:
  uint8_t* Get(size_t size_bytes) {
    if (buffer_.size() < size_bytes) buffer_.resize(size_bytes);
    return buffer_.data();
  }

 private:
  std::vector<uint8_t> buffer_;
};

// One buffer per role, because the roles nest (premultiplied source -> reduced -> the
// intermediate of a vertical-first resample; horizontal-first streams its own small band).
thread_local Scratch t_premultiplied;
thread_local Scratch t_reduced;
thread_local Scratch t_vertical_first;

size_t RowBytes(int32_t width, int32_t channels) {
  return static_cast<size_t>(width) * static_cast<size_t>(channels);
}

template <typename View>
Status ValidateView(const View& v, const char* name) {
  if (v.data == nullptr || v.width < 1 || v.height < 1 || v.channels < 1 || v.channels > 4 ||
      v.stride_bytes < static_cast<ptrdiff_t>(RowBytes(v.width, v.channels))) {
    return InvalidArgumentError(std::string(name) +
                                " image view is invalid: " + std::to_string(v.width) + "x" +
                                std::to_string(v.height) + "x" + std::to_string(v.channels) +
                                ", stride " + std::to_string(v.stride_bytes) + " bytes");
  }
  return Status::Ok();
}

Status ValidatePair(const ImageView& src, const MutableImageView& dst) {
  DOCFEED_RETURN_IF_ERROR(ValidateView(src, "source"));
  DOCFEED_RETURN_IF_ERROR(ValidateView(dst, "destination"));
  if (src.channels != dst.channels) {
    return InvalidArgumentError("source has " + std::to_string(src.channels) +
                                " channels but destination has " + std::to_string(dst.channels));
  }
  return Status::Ok();
}

// _resize's checks, on the float32 box; NaN fails every comparison and is rejected too.
Status ValidateFloatBox(const float b[4], int32_t width, int32_t height) {
  const bool ok = b[0] >= 0 && b[1] >= 0 && b[2] <= static_cast<float>(width) &&
                  b[3] <= static_cast<float>(height) && b[2] - b[0] > 0 && b[3] - b[1] > 0;
  if (!ok) {
    return InvalidArgumentError("box (" + std::to_string(b[0]) + ", " + std::to_string(b[1]) +
                                ", " + std::to_string(b[2]) + ", " + std::to_string(b[3]) +
                                ") is empty or outside the " + std::to_string(width) + "x" +
                                std::to_string(height) + " image");
  }
  return Status::Ok();
}

// Source rows (or columns) [first, last) that a coefficient table reads.
void Span(const CoeffTable& t, int32_t* first, int32_t* last) {
  *first = t.first(0);
  *last = t.first(t.out_size - 1) + t.taps(t.out_size - 1);
}

void ShiftFirst(CoeffTable* t, int32_t by) {
  for (int32_t o = 0; o < t->out_size; ++o) t->bounds[2 * static_cast<size_t>(o)] -= by;
}

// Pillow >= 13 (python-pillow/Pillow#9549) runs the vertical pass first when the height shrinks
// by more than twice as many pixels as the width does. The vertical pass reads only the columns
// the horizontal weights use; the 8-bit rounding between passes is the same.
void ResampleVerticalFirst(const ImageView& src, const MutableImageView& dst, CoeffTable* x,
                           const CoeffTable& y) {
  const int32_t c = src.channels;
  int32_t col_first, col_last;
  Span(*x, &col_first, &col_last);
  const auto stride = static_cast<ptrdiff_t>(RowBytes(col_last - col_first, c));
  uint8_t* temp =
      t_vertical_first.Get(static_cast<size_t>(stride) * static_cast<size_t>(dst.height));
  ResampleVertical(src.data + static_cast<ptrdiff_t>(RowBytes(col_first, c)), src.stride_bytes,
                   static_cast<int32_t>(stride), y, temp, stride);
  ShiftFirst(x, col_first);
  ResampleHorizontal(temp, stride, col_last - col_first, dst.height, c, *x, dst.data,
                     dst.stride_bytes);
}

bool VerticalFirst(int32_t src_w, int32_t src_h, int32_t dst_w, int32_t dst_h) {
  return dst_h < src_h && src_h - dst_h > 2 * (src_w - dst_w);
}

// ImagingResampleInner: a pass runs only when its axis changes (size or box); with both, the
// order follows VerticalFirst() (Pillow) or is always horizontal first (torch).
Status Resample(const ImageView& src, const MutableImageView& dst, ResampleFilter filter,
                const float box[4], ResampleArithmetic arithmetic = ResampleArithmetic::kPillow) {
  const int32_t c = src.channels;
  const bool need_h =
      dst.width != src.width || box[0] != 0 || box[2] != static_cast<float>(dst.width);
  const bool need_v =
      dst.height != src.height || box[1] != 0 || box[3] != static_cast<float>(dst.height);
  CoeffTable x, y;
  if (need_h) {
    DOCFEED_RETURN_IF_ERROR(
        ComputeCoeffs(src.width, box[0], box[2], dst.width, filter, &x, arithmetic));
  }
  if (need_v) {
    DOCFEED_RETURN_IF_ERROR(
        ComputeCoeffs(src.height, box[1], box[3], dst.height, filter, &y, arithmetic));
  }
  if (need_h && need_v) {
    if (arithmetic == ResampleArithmetic::kPillow &&
        VerticalFirst(src.width, src.height, dst.width, dst.height)) {
      ResampleVerticalFirst(src, dst, &x, y);
    } else {
      // ImagingResampleInner's order: horizontal pass over the rows the vertical weights read.
      ResampleSeparable(src.data, src.stride_bytes, src.width, c, x, y, dst.data, dst.stride_bytes);
    }
  } else if (need_h) {
    // Unchanged height means the vertical window is every row: no temporary needed.
    ResampleHorizontal(src.data, src.stride_bytes, src.width, src.height, c, x, dst.data,
                       dst.stride_bytes);
  } else if (need_v) {
    ResampleVertical(src.data, src.stride_bytes, static_cast<int32_t>(RowBytes(src.width, c)), y,
                     dst.data, dst.stride_bytes);
  } else {
    CopyRows(src.data, src.stride_bytes, static_cast<int32_t>(RowBytes(src.width, c)), src.height,
             dst.data, dst.stride_bytes);
  }
  return Status::Ok();
}

// _resize in _imaging.c: box validation, the crop shortcut, NEAREST, then resampling.
Status ResizeC(const ImageView& src, const MutableImageView& dst, ResampleFilter filter,
               const float box[4]) {
  DOCFEED_RETURN_IF_ERROR(ValidateFloatBox(box, src.width, src.height));
  const auto x0 = static_cast<int32_t>(box[0]);
  const auto y0 = static_cast<int32_t>(box[1]);
  if (box[0] - static_cast<float>(x0) == 0 && box[2] - box[0] == static_cast<float>(dst.width) &&
      box[1] - static_cast<float>(y0) == 0 && box[3] - box[1] == static_cast<float>(dst.height)) {
    CopyRows(src.data + y0 * src.stride_bytes + static_cast<ptrdiff_t>(RowBytes(x0, src.channels)),
             src.stride_bytes, static_cast<int32_t>(RowBytes(dst.width, dst.channels)), dst.height,
             dst.data, dst.stride_bytes);
    return Status::Ok();
  }
  if (filter == ResampleFilter::kNearest) {
    ResizeNearest(src.data, src.stride_bytes, src.width, src.height, src.channels, box, dst.data,
                  dst.stride_bytes, dst.width, dst.height);
    return Status::Ok();
  }
  return Resample(src, dst, filter, box);
}

void ToFloatBox(const Box& b, float out[4]) {
  out[0] = static_cast<float>(b.x0);
  out[1] = static_cast<float>(b.y0);
  out[2] = static_cast<float>(b.x1);
  out[3] = static_cast<float>(b.y1);
}

// Image._get_safe_box: the box widened by the filter's reach, in whole source pixels.
void SafeBox(const ImageView& src, const MutableImageView& dst, ResampleFilter filter,
             const Box& box, int32_t out[4]) {
  const double support = FilterSupport(filter) - 0.5;
  const double support_x = support * ((box.x1 - box.x0) / dst.width);
  const double support_y = support * ((box.y1 - box.y0) / dst.height);
  out[0] = std::max(0, static_cast<int32_t>(box.x0 - support_x));
  out[1] = std::max(0, static_cast<int32_t>(box.y0 - support_y));
  out[2] = std::min(src.width, static_cast<int32_t>(std::ceil(box.x1 + support_x)));
  out[3] = std::min(src.height, static_cast<int32_t>(std::ceil(box.y1 + support_y)));
}

// Image.resize after the alpha step: the optional reduce() pre-step, then _resize.
Status ResizeOpaque(const ImageView& src, const MutableImageView& dst, ResampleFilter filter,
                    const Box& box, double reducing_gap) {
  float fbox[4];
  ToFloatBox(box, fbox);
  DOCFEED_RETURN_IF_ERROR(ValidateFloatBox(fbox, src.width, src.height));
  if (reducing_gap == 0 || filter == ResampleFilter::kNearest) {
    return ResizeC(src, dst, filter, fbox);
  }
  // Python's int() truncates; `or 1` maps 0 to 1.
  const auto factor_x =
      std::max(1, static_cast<int32_t>((box.x1 - box.x0) / dst.width / reducing_gap));
  const auto factor_y =
      std::max(1, static_cast<int32_t>((box.y1 - box.y0) / dst.height / reducing_gap));
  if (factor_x == 1 && factor_y == 1) return ResizeC(src, dst, filter, fbox);
  int32_t rb[4];
  SafeBox(src, dst, filter, box, rb);
  const int32_t box_w = rb[2] - rb[0];
  const int32_t box_h = rb[3] - rb[1];
  const MutableImageView reduced{
      nullptr, (box_w + factor_x - 1) / factor_x, (box_h + factor_y - 1) / factor_y, src.channels,
      static_cast<ptrdiff_t>(RowBytes((box_w + factor_x - 1) / factor_x, src.channels))};
  uint8_t* reduced_data = t_reduced.Get(static_cast<size_t>(reduced.stride_bytes) * reduced.height);
  ReduceBox(
      src.data + rb[1] * src.stride_bytes + static_cast<ptrdiff_t>(RowBytes(rb[0], src.channels)),
      src.stride_bytes, box_w, box_h, src.channels, factor_x, factor_y, reduced_data,
      reduced.stride_bytes);
  const Box reduced_box{(box.x0 - rb[0]) / factor_x, (box.y0 - rb[1]) / factor_y,
                        (box.x1 - rb[0]) / factor_x, (box.y1 - rb[1]) / factor_y};
  ToFloatBox(reduced_box, fbox);
  const ImageView reduced_view{reduced_data, reduced.width, reduced.height, reduced.channels,
                               reduced.stride_bytes};
  return ResizeC(reduced_view, dst, filter, fbox);
}

bool HasAlpha(int32_t channels) { return channels == 2 || channels == 4; }

// Premultiplies the whole source into per-thread scratch (modes LA -> La, RGBA -> RGBa).
ImageView Premultiplied(const ImageView& src) {
  const auto stride = static_cast<ptrdiff_t>(RowBytes(src.width, src.channels));
  uint8_t* data = t_premultiplied.Get(static_cast<size_t>(stride) * src.height);
  PremultiplyAlpha(src.data, src.stride_bytes, src.width, src.height, src.channels, data, stride);
  return ImageView{data, src.width, src.height, src.channels, stride};
}

// MakeResizeStream's plan: Resize's decisions (ResizeOpaque, ResizeC, Resample) without the
// pixels. Returns false for the cases the stream leaves to Resize.
Result<bool> PlanStream(int32_t src_w, int32_t src_h, int32_t dst_w, int32_t dst_h,
                        ResampleFilter filter, const Box& box, double reducing_gap,
                        ResampleArithmetic arithmetic, StreamPlan* plan) {
  plan->out_width = dst_w;
  plan->out_height = dst_h;
  const bool is_full = box.x0 == 0 && box.y0 == 0 && box.x1 == src_w && box.y1 == src_h;
  if (is_full && dst_w == src_w && dst_h == src_h) return true;  // A copy: no pass.
  if (HasAlpha(plan->channels) || filter == ResampleFilter::kNearest) return false;
  float fbox[4];
  ToFloatBox(box, fbox);
  DOCFEED_RETURN_IF_ERROR(ValidateFloatBox(fbox, src_w, src_h));
  if (reducing_gap != 0 && (static_cast<int32_t>((box.x1 - box.x0) / dst_w / reducing_gap) > 1 ||
                            static_cast<int32_t>((box.y1 - box.y0) / dst_h / reducing_gap) > 1)) {
    return false;  // ReduceBox first.
  }
  const auto x0 = static_cast<int32_t>(fbox[0]);
  const auto y0 = static_cast<int32_t>(fbox[1]);
  if (fbox[0] - static_cast<float>(x0) == 0 && fbox[2] - fbox[0] == static_cast<float>(dst_w) &&
      fbox[1] - static_cast<float>(y0) == 0 && fbox[3] - fbox[1] == static_cast<float>(dst_h)) {
    return false;  // ResizeC's crop.
  }
  plan->has_x = dst_w != src_w || fbox[0] != 0 || fbox[2] != static_cast<float>(dst_w);
  plan->has_y = dst_h != src_h || fbox[1] != 0 || fbox[3] != static_cast<float>(dst_h);
  if (plan->has_x) {
    DOCFEED_RETURN_IF_ERROR(
        ComputeCoeffs(src_w, fbox[0], fbox[2], dst_w, filter, &plan->x, arithmetic));
  }
  if (plan->has_y) {
    DOCFEED_RETURN_IF_ERROR(
        ComputeCoeffs(src_h, fbox[1], fbox[3], dst_h, filter, &plan->y, arithmetic));
  }
  plan->vertical_first = arithmetic == ResampleArithmetic::kPillow && plan->has_x && plan->has_y &&
                         VerticalFirst(src_w, src_h, dst_w, dst_h);
  return true;
}

// kTorchUint8 covers what torch's uint8 path does: BILINEAR/BICUBIC over the whole image, no
// reduce() pre-step, no alpha.
Status CheckTorchArithmetic(int32_t channels, ResampleFilter filter, const Box* box,
                            double reducing_gap) {
  if ((filter != ResampleFilter::kBilinear && filter != ResampleFilter::kBicubic) ||
      box != nullptr || reducing_gap != 0 || (channels != 1 && channels != 3)) {
    return InvalidArgumentError(
        "torch uint8 arithmetic takes BILINEAR or BICUBIC on 1 or 3 channels, without box or "
        "reducing_gap");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<RowSink>> MakeResizeStream(int32_t src_width, int32_t src_height,
                                                  int32_t channels, int32_t dst_width,
                                                  int32_t dst_height, ResampleFilter filter,
                                                  const Box* box, double reducing_gap,
                                                  StreamOutput out, ResampleArithmetic arithmetic) {
  if (src_width < 1 || src_height < 1 || dst_width < 1 || dst_height < 1 || channels < 1 ||
      channels > 4) {
    return InvalidArgumentError("resize stream: bad sizes " + std::to_string(src_width) + "x" +
                                std::to_string(src_height) + " -> " + std::to_string(dst_width) +
                                "x" + std::to_string(dst_height) + " with " +
                                std::to_string(channels) + " channels");
  }
  if (out.dst == nullptr && out.next == nullptr) {
    return InvalidArgumentError("resize stream: no output (dst or next)");
  }
  if (out.dst != nullptr &&
      out.dst_stride_bytes < static_cast<ptrdiff_t>(RowBytes(dst_width, channels))) {
    return InvalidArgumentError("resize stream: destination stride smaller than a row");
  }
  if (!(reducing_gap == 0 || reducing_gap >= 1.0)) {
    return InvalidArgumentError("reducing_gap must be 0 (none) or >= 1.0, got " +
                                std::to_string(reducing_gap));
  }
  if (arithmetic == ResampleArithmetic::kTorchUint8) {
    DOCFEED_RETURN_IF_ERROR(CheckTorchArithmetic(channels, filter, box, reducing_gap));
  }
  const Box b = box != nullptr
                    ? *box
                    : Box{0, 0, static_cast<double>(src_width), static_cast<double>(src_height)};
  StreamPlan plan;
  plan.src_width = src_width;
  plan.src_height = src_height;
  plan.channels = channels;
  DOCFEED_ASSIGN_OR_RETURN(const bool streamed,
                           PlanStream(src_width, src_height, dst_width, dst_height, filter, b,
                                      reducing_gap, arithmetic, &plan));
  if (!streamed) return std::unique_ptr<RowSink>();
  return MakeResampleStream(std::move(plan), out);
}

Status Resize(const ImageView& src, const MutableImageView& dst, ResampleFilter filter,
              const Box* box, double reducing_gap, ResampleArithmetic arithmetic) {
  DOCFEED_RETURN_IF_ERROR(ValidatePair(src, dst));
  if (!(reducing_gap == 0 || reducing_gap >= 1.0)) {
    return InvalidArgumentError("reducing_gap must be 0 (none) or >= 1.0, got " +
                                std::to_string(reducing_gap));
  }
  const Box full{0, 0, static_cast<double>(src.width), static_cast<double>(src.height)};
  const Box b = box != nullptr ? *box : full;
  const bool is_full = b.x0 == 0 && b.y0 == 0 && b.x1 == full.x1 && b.y1 == full.y1;
  if (is_full && dst.width == src.width && dst.height == src.height) {
    CopyRows(src.data, src.stride_bytes, static_cast<int32_t>(RowBytes(src.width, src.channels)),
             src.height, dst.data, dst.stride_bytes);
    return Status::Ok();
  }
  if (arithmetic == ResampleArithmetic::kTorchUint8) {
    DOCFEED_RETURN_IF_ERROR(CheckTorchArithmetic(src.channels, filter, box, reducing_gap));
    float fbox[4];
    ToFloatBox(full, fbox);
    return Resample(src, dst, filter, fbox, arithmetic);
  }
  if (!HasAlpha(src.channels) || filter == ResampleFilter::kNearest) {
    return ResizeOpaque(src, dst, filter, b, reducing_gap);
  }
  DOCFEED_RETURN_IF_ERROR(ResizeOpaque(Premultiplied(src), dst, filter, b, reducing_gap));
  UnpremultiplyAlphaInPlace(dst.data, dst.stride_bytes, dst.width, dst.height, dst.channels);
  return Status::Ok();
}

Status Reduce(const ImageView& src, int32_t factor_x, int32_t factor_y, const Box* box,
              const MutableImageView& dst) {
  DOCFEED_RETURN_IF_ERROR(ValidatePair(src, dst));
  if (factor_x < 1 || factor_y < 1) {
    return InvalidArgumentError("reduce factors must be >= 1, got " + std::to_string(factor_x) +
                                "x" + std::to_string(factor_y));
  }
  const Box b = box != nullptr
                    ? *box
                    : Box{0, 0, static_cast<double>(src.width), static_cast<double>(src.height)};
  const bool integral = b.x0 == std::floor(b.x0) && b.y0 == std::floor(b.y0) &&
                        b.x1 == std::floor(b.x1) && b.y1 == std::floor(b.y1);
  if (!integral || b.x0 < 0 || b.y0 < 0 || b.x1 > src.width || b.y1 > src.height || b.x1 <= b.x0 ||
      b.y1 <= b.y0) {
    return InvalidArgumentError("reduce box must be integral, non-empty and inside the image");
  }
  const auto x0 = static_cast<int32_t>(b.x0);
  const auto y0 = static_cast<int32_t>(b.y0);
  const auto box_w = static_cast<int32_t>(b.x1) - x0;
  const auto box_h = static_cast<int32_t>(b.y1) - y0;
  if (dst.width != (box_w + factor_x - 1) / factor_x ||
      dst.height != (box_h + factor_y - 1) / factor_y) {
    return InvalidArgumentError("reduce destination must be " +
                                std::to_string((box_w + factor_x - 1) / factor_x) + "x" +
                                std::to_string((box_h + factor_y - 1) / factor_y));
  }
  const ptrdiff_t offset =
      y0 * src.stride_bytes + static_cast<ptrdiff_t>(RowBytes(x0, src.channels));
  const int32_t row_bytes = static_cast<int32_t>(RowBytes(box_w, src.channels));
  // Image.reduce: factor (1, 1) is a crop, taken before any alpha premultiplication.
  if (factor_x == 1 && factor_y == 1) {
    CopyRows(src.data + offset, src.stride_bytes, row_bytes, box_h, dst.data, dst.stride_bytes);
    return Status::Ok();
  }
  const ImageView in = HasAlpha(src.channels) ? Premultiplied(src) : src;
  ReduceBox(in.data + y0 * in.stride_bytes + static_cast<ptrdiff_t>(RowBytes(x0, in.channels)),
            in.stride_bytes, box_w, box_h, in.channels, factor_x, factor_y, dst.data,
            dst.stride_bytes);
  if (HasAlpha(src.channels)) {
    UnpremultiplyAlphaInPlace(dst.data, dst.stride_bytes, dst.width, dst.height, dst.channels);
  }
  return Status::Ok();
}

}  // namespace docfeed::internal
