// Row-streaming resampler (resample_stream.h).
#include "kernels/resample_stream.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/resample.h"

namespace docfeed::internal {
namespace {

// Rows handled per kernel call, both for incoming source rows and for outgoing output rows.
constexpr int32_t kBandRows = 16;

class ResampleStream final : public RowSink {
 public:
  ResampleStream(StreamPlan plan, StreamOutput out) : p_(std::move(plan)), out_(out) {
    const int32_t c = p_.channels;
    out_row_bytes_ = static_cast<ptrdiff_t>(p_.out_width) * c;
    stage_h_ = p_.has_x && !p_.vertical_first;
    post_h_ = p_.has_x && p_.vertical_first;
    int32_t col_last = p_.src_width;
    if (post_h_) {  // The vertical pass reads only the columns the horizontal weights use.
      col_first_ = p_.x.first(0);
      col_last = p_.x.first(p_.x.out_size - 1) + p_.x.taps(p_.x.out_size - 1);
      for (int32_t o = 0; o < p_.x.out_size; ++o)
        p_.x.bounds[2 * static_cast<size_t>(o)] -= col_first_;
    }
    const auto staged_bytes =
        stage_h_ ? out_row_bytes_ : static_cast<ptrdiff_t>(col_last - col_first_) * c;
    ring_stride_ = staged_bytes;
    if (p_.has_x) {
      h_ = MakeHorizontalKernel(p_.x, c, post_h_ ? col_last - col_first_ : p_.src_width);
    }
    if (p_.has_y) {
      v_ = MakeVerticalKernel(p_.y, static_cast<int32_t>(staged_bytes));
      PlanRing();
      ring_.resize(static_cast<size_t>(ring_rows_) * static_cast<size_t>(staged_bytes));
    }
    // Output bands hold at most kBandRows rows, and never more than the output has.
    const auto band_rows = static_cast<size_t>(std::min(kBandRows, p_.out_height));
    if (post_h_) mid_.resize(band_rows * static_cast<size_t>(staged_bytes));
    if (out_.dst == nullptr) staging_.resize(band_rows * static_cast<size_t>(out_row_bytes_));
  }

  void PushRows(const uint8_t* rows, ptrdiff_t stride_bytes, int32_t count) override {
    while (count > 0) {
      const int32_t n = std::min(count, kBandRows);
      PushBand(rows, stride_bytes, n);
      next_in_ += n;
      rows += n * stride_bytes;
      count -= n;
    }
  }

 private:
  // keep_from_[o]: the lowest source row any output >= o reads; the ring holds the largest
  // window that can be pending plus one band.
  void PlanRing() {
    const CoeffTable& y = p_.y;
    keep_from_.resize(static_cast<size_t>(y.out_size));
    int32_t low = y.first(y.out_size - 1);
    for (int32_t o = y.out_size - 1; o >= 0; --o) keep_from_[o] = low = std::min(low, y.first(o));
    int32_t window = 1;
    span_last_ = 0;
    for (int32_t o = 0; o < y.out_size; ++o) {
      window = std::max(window, y.first(o) + y.taps(o) - keep_from_[o]);
      span_last_ = std::max(span_last_, y.first(o) + y.taps(o));
    }
    span_first_ = keep_from_[0];
    // Never more rows than the span itself (a short, very wide image keeps a short ring).
    ring_rows_ = std::min(window + kBandRows, span_last_ - span_first_);
  }

  // Where output rows [o0, o0 + n) are written: the destination, or the band for `next`.
  uint8_t* OutRows(int32_t o0, ptrdiff_t* stride) {
    if (out_.dst != nullptr) {
      *stride = out_.dst_stride_bytes;
      return out_.dst + o0 * out_.dst_stride_bytes;
    }
    *stride = out_row_bytes_;
    return staging_.data();
  }

  void Deliver(const uint8_t* rows, ptrdiff_t stride, int32_t n) {
    if (out_.dst == nullptr) out_.next->PushRows(rows, stride, n);
  }

  // The first step on `n` source rows: the horizontal pass, or a copy of the kept columns.
  void Stage(const uint8_t* src, ptrdiff_t stride, int32_t n, uint8_t* dst, ptrdiff_t dst_stride) {
    if (stage_h_) return h_->Run(src, stride, n, dst, dst_stride);
    const ptrdiff_t offset = static_cast<ptrdiff_t>(col_first_) * p_.channels;
    for (int32_t r = 0; r < n; ++r) {
      std::memcpy(dst + r * dst_stride, src + r * stride + offset,
                  static_cast<size_t>(ring_stride_));
    }
  }

  void PushBand(const uint8_t* rows, ptrdiff_t stride, int32_t n) {
    if (next_out_ >= p_.out_height) return;
    const int32_t r0 = next_in_;
    if (!p_.has_y) {  // One output row per source row.
      ptrdiff_t out_stride;
      uint8_t* dst = OutRows(r0, &out_stride);
      if (p_.has_x) {
        h_->Run(rows, stride, n, dst, out_stride);
      } else {
        Stage(rows, stride, n, dst, out_stride);
      }
      Deliver(dst, out_stride, n);
      next_out_ += n;
      return;
    }
    const int32_t a = std::max(r0, span_first_);
    const int32_t b = std::min(r0 + n, span_last_);
    if (a >= b) return;
    if (have_last_ == have_first_) have_first_ = have_last_ = a;
    MakeRoom(b - a);
    Stage(rows + (a - r0) * stride, stride, b - a,
          ring_.data() + (have_last_ - have_first_) * ring_stride_, ring_stride_);
    have_last_ = b;
    EmitReady();
  }

  // Drops rows no pending output reads if `n` more rows would not fit.
  void MakeRoom(int32_t n) {
    if (have_last_ - have_first_ + n <= ring_rows_) return;
    const int32_t keep_from = std::min(have_last_, std::max(have_first_, keep_from_[next_out_]));
    std::memmove(ring_.data(), ring_.data() + (keep_from - have_first_) * ring_stride_,
                 static_cast<size_t>(have_last_ - keep_from) * static_cast<size_t>(ring_stride_));
    have_first_ = keep_from;
  }

  bool Ready(int32_t o) const { return p_.y.first(o) + p_.y.taps(o) <= have_last_; }

  void EmitReady() {
    while (next_out_ < p_.out_height && Ready(next_out_)) {
      int32_t m = 1;
      while (m < kBandRows && next_out_ + m < p_.out_height && Ready(next_out_ + m)) ++m;
      ptrdiff_t out_stride;
      uint8_t* dst = OutRows(next_out_, &out_stride);
      if (post_h_) {
        v_->Run(ring_.data(), ring_stride_, have_first_, next_out_, next_out_ + m, mid_.data(),
                ring_stride_);
        h_->Run(mid_.data(), ring_stride_, m, dst, out_stride);
      } else {
        v_->Run(ring_.data(), ring_stride_, have_first_, next_out_, next_out_ + m, dst, out_stride);
      }
      Deliver(dst, out_stride, m);
      next_out_ += m;
    }
  }

  StreamPlan p_;
  StreamOutput out_;
  bool stage_h_ = false, post_h_ = false;
  int32_t col_first_ = 0;
  ptrdiff_t out_row_bytes_ = 0, ring_stride_ = 0;
  std::unique_ptr<HorizontalKernel> h_;
  std::unique_ptr<VerticalKernel> v_;
  std::vector<int32_t> keep_from_;
  std::vector<uint8_t> ring_, mid_, staging_;
  int32_t span_first_ = 0, span_last_ = 0, ring_rows_ = 0;
  int32_t next_in_ = 0, next_out_ = 0;
  int32_t have_first_ = 0, have_last_ = 0;  // Source rows held in ring_.
};

}  // namespace

std::unique_ptr<RowSink> MakeResampleStream(StreamPlan plan, StreamOutput out) {
  return std::make_unique<ResampleStream>(std::move(plan), out);
}

}  // namespace docfeed::internal
