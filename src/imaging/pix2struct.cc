#include "imaging/pix2struct.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/simd_mode.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace docfeed::internal {
namespace {

constexpr int32_t kMaxPatches = 65536;
constexpr int32_t kMaxPatchSide = 256;

std::string Dims(int64_t height, int64_t width) {
  return std::to_string(width) + "x" + std::to_string(height);
}

// numpy's pairwise float32 summation of n values (FLOAT_pairwise_sum, which np.sum, np.mean
// and np.var use on a contiguous float32 array; np.add.reduce starts from 0): blocks of at most
// 128 values are leaves; larger runs split at half, rounded down to a multiple of 8, and the
// halves' sums are added. LeafPlan lists the leaves' sizes in order (they depend on n only, and
// follow each other from value 0); CombineLeafSums adds their sums back up the same tree.
struct LeafPlan {
  std::vector<uint8_t> counts;  // each leaf's size, 1..128
  int depth = -1;               // the leaves' depth when all are equally deep, else -1
};

// A run's leaves depend on its size only, and the halving makes few sizes (two or three a level),
// so each size's leaves are listed once and copied where it recurs: the quarter of a million
// leaves of an A4 page at 300 dpi cost a few copies, not a call each (a sixth of the statistics).
struct LeafRun {
  int64_t n;
  size_t first, count;
  int depth;
};

int AppendLeaves(int64_t n, std::vector<uint8_t>& counts, std::vector<LeafRun>& runs) {
  if (n <= 128) {
    counts.push_back(static_cast<uint8_t>(n));
    return 0;
  }
  for (const LeafRun& run : runs) {
    if (run.n != n) continue;
    const size_t at = counts.size();
    counts.resize(at + run.count);
    std::memcpy(counts.data() + at, counts.data() + run.first, run.count);
    return run.depth;
  }
  const size_t first = counts.size();
  int64_t half = n / 2;
  half -= half % 8;
  const int left = AppendLeaves(half, counts, runs);
  const int right = AppendLeaves(n - half, counts, runs);
  const int depth = left >= 0 && left == right ? left + 1 : -1;
  runs.push_back({n, first, counts.size() - first, depth});
  return depth;
}

void PlanLeaves(int64_t n, LeafPlan& plan) {
  thread_local std::vector<LeafRun> runs;
  runs.clear();
  plan.counts.clear();
  plan.depth = AppendLeaves(n, plan.counts, runs);
}

float PairwiseCombine(int64_t n, const float*& leaf_sums) {
  if (n <= 128) return *leaf_sums++;
  int64_t half = n / 2;
  half -= half % 8;
  const float first = PairwiseCombine(half, leaf_sums);
  const float second = PairwiseCombine(n - half, leaf_sums);
  return first + second;
}

// The tree's sum over the leaf sums (`sums`, overwritten). When all leaves are equally deep the
// tree is complete, each node's halves are neighbours on the level below, and the levels are
// summed pair by pair without the recursion's calls; otherwise the recursion.
float CombineLeafSums(int64_t n, const LeafPlan& plan, float* sums) {
  if (plan.depth >= 0) {
    size_t m = plan.counts.size();
    for (int level = 0; level < plan.depth; ++level) {
      m /= 2;
      for (size_t i = 0; i < m; ++i) sums[i] = sums[2 * i] + sums[2 * i + 1];
    }
    return sums[0];
  }
  const float* next = sums;
  return PairwiseCombine(n, next);
}

// numpy's leaf of at most 128 values: fewer than 8 summed in order from 0; otherwise eight
// running sums over the multiple-of-8 part, combined as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) +
// (r6 + r7)), then the rest added in order.
[[gnu::always_inline]] inline float LeafSum(const float* a, int64_t n) {
  if (n < 8) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += a[i];
    return sum;
  }
  float r[8];
  for (int k = 0; k < 8; ++k) r[k] = a[k];
  int64_t i = 8;
  for (; i < n - (n % 8); i += 8) {
    for (int k = 0; k < 8; ++k) r[k] += a[i + k];
  }
  float sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
  for (; i < n; ++i) sum += a[i];
  return sum;
}

// The page's rows without padding between them: `page`'s own bytes when they already are,
// else a copy in `storage`.
const uint8_t* Contiguous(const ImageView& page, std::vector<uint8_t>& storage) {
  const size_t row = static_cast<size_t>(page.width) * static_cast<size_t>(page.channels);
  if (page.stride_bytes == static_cast<ptrdiff_t>(row)) return page.data;
  storage.resize(row * static_cast<size_t>(page.height));
  for (int32_t y = 0; y < page.height; ++y) {
    std::memcpy(storage.data() + static_cast<size_t>(y) * row, page.data + y * page.stride_bytes,
                row);
  }
  return storage.data();
}

// Pix2StructImageProcessor.normalize of a uint8 page, as a table of the standardized value of
// each uint8 value v: (float32(v) - mean) / std in float32, with mean and std as numpy computes
// them over the n values of the HWC array `rgb`:
//   mean = float32(float64(pairwise sum) / n)              (np.mean: float32 sum, then /intp)
//   var  = float32(float64(pairwise sum of float32((x - mean)^2)) / n)   (np.var, ddof 0)
//   std  = sqrt(var) in float32; adjusted = max(std, 1.0 / math.sqrt(n)), Python's max, so a
//   float64 floor wins only when strictly larger, and is then cast to float32 by the division.
// numpy's float32 leaf (LeafSum) of the squared deviations square[p[i]], i < count, where
// square[v] = d * d with d = float32(v) - mean, each rounded to float32.
struct SquareLeafScalar {
  // The leaf's values summed (an exact integer: at most 128 values).
  static int32_t ByteSum(const uint8_t* p, int64_t count) {
    int32_t sum = 0;
    for (int64_t i = 0; i < count; ++i) sum += p[i];
    return sum;
  }

  float operator()(const uint8_t* p, int64_t count, const float* square, float /*mean*/) const {
    float values[128];
    for (int64_t i = 0; i < count; ++i) values[i] = square[p[i]];
    return LeafSum(values, count);
  }

  // The same over values begin .. begin + count - 1 of a gray page's HWC array (GrayLeaves).
  static float GraySquares(const uint8_t* g, int64_t /*pixels*/, int64_t begin, int64_t count,
                           const float* square, float /*mean*/) {
    float values[128];
    for (int64_t i = 0; i < count; ++i) values[i] = square[g[(begin + i) / 3]];
    return LeafSum(values, count);
  }
};

// All the leaves' sums in order (`counts`, the leaves from value 0 on) through the source's
// sums of one leaf (Leaves::Bytes and Leaves::Squares), for StandardizeTable.
template <typename Leaves>
struct OneLeafAtATime {
  [[gnu::always_inline]] void ByteSums(const uint8_t* counts, size_t leaves, float* sums) const {
    const auto& source = static_cast<const Leaves&>(*this);
    int64_t begin = 0;
    for (size_t l = 0; l < leaves; ++l) {
      sums[l] = static_cast<float>(source.Bytes(begin, counts[l]));
      begin += counts[l];
    }
  }
  [[gnu::always_inline]] void SquareSums(const uint8_t* counts, size_t leaves, const float* square,
                                         float mean, float* sums) const {
    const auto& source = static_cast<const Leaves&>(*this);
    int64_t begin = 0;
    for (size_t l = 0; l < leaves; ++l) {
      sums[l] = source.Squares(begin, counts[l], square, mean);
      begin += counts[l];
    }
  }
};

// The leaf sums of a gray page's HWC array without making it: value e of the array is g[e / 3]
// (each gray value thrice). Byte sums from the gray run under the leaf (its end pixels counted
// as often as they appear); squared deviations in the array's order, through the same leaf
// arithmetic (SquareLeaf::GraySquares).
template <typename SquareLeaf>
struct GrayLeaves : OneLeafAtATime<GrayLeaves<SquareLeaf>> {
  GrayLeaves(const uint8_t* gray, int64_t n_pixels) : g(gray), pixels(n_pixels) {}
  const uint8_t* g;
  int64_t pixels;
  [[gnu::always_inline]] int32_t Bytes(int64_t begin, int64_t count) const {
    const int64_t first = begin / 3, last = (begin + count - 1) / 3;
    if (first == last) return static_cast<int32_t>(count) * g[first];
    const int32_t head = static_cast<int32_t>(3 - begin % 3) * g[first];
    const int32_t tail = static_cast<int32_t>((begin + count - 1) % 3 + 1) * g[last];
    return head + tail + 3 * SquareLeaf::ByteSum(g + first + 1, last - first - 1);
  }
  [[gnu::always_inline]] float Squares(int64_t begin, int64_t count, const float* square,
                                       float mean) const {
    return SquareLeaf::GraySquares(g, pixels, begin, count, square, mean);
  }
};

// The standardization of one page: its mean and std as numpy computes them, and the standardized
// value of each uint8 value, table[v] = (float32(v) - mean) / std (two float roundings).
//
// A vector divide costs several times a multiply (FillRowsAvx2 divides every value of the page),
// so each value may instead be divided through the reciprocal with one correction step,
// q = d * inverse, q' = fma(fma(-q, std, d), inverse, q), which rounds as the division does for
// most divisors (Markstein, "IA-64 and Elementary Functions", 2000, ch. 8) but is not proven to
// for all. Only 256 dividends ever occur, so the step is tried on each of them against the true
// division when the table is made: `by_inverse` is set only when all 256 agree bit for bit.
struct Standardization {
  std::array<float, 256> table;
  float mean = 0.0f;
  float std = 1.0f;
  float inverse = 1.0f;     // float32(1 / std)
  bool by_inverse = false;  // the correction step gives table[v] for every v
};

// Whether the reciprocal step gives `s.table` for every byte value (Standardization).
bool InverseStepIsExact(const Standardization& s) {
  for (int v = 0; v < 256; ++v) {
    const float d = static_cast<float>(v) - s.mean;
    const float q = d * s.inverse;
    const float step = std::fma(std::fma(-q, s.std, d), s.inverse, q);
    if (std::bit_cast<uint32_t>(step) != std::bit_cast<uint32_t>(s.table[static_cast<size_t>(v)])) {
      return false;
    }
  }
  return true;
}

// The leaf sums of the HWC array itself (`p`, n values), for StandardizeTable.
template <typename SquareLeaf>
struct RgbLeaves : OneLeafAtATime<RgbLeaves<SquareLeaf>> {
  explicit RgbLeaves(const uint8_t* rgb) : p(rgb) {}
  const uint8_t* p;
  [[gnu::always_inline]] int32_t Bytes(int64_t begin, int64_t count) const {
    return SquareLeaf::ByteSum(p + begin, count);
  }
  [[gnu::always_inline]] float Squares(int64_t begin, int64_t count, const float* square,
                                       float mean) const {
    return SquareLeaf()(p + begin, count, square, mean);
  }
};

// Over the n values of the HWC array (`source`: all its leaves' byte sums and squared-deviation
// sums, RgbLeaves, GrayLeaves or, with AVX-512, RgbGroups and GrayGroups).
template <typename Leaves>
[[gnu::always_inline]] inline Standardization StandardizeTable(const Leaves& source, int64_t n) {
  // Per thread and kept, as the resize's scratch (Pix2StructPatches): a leaf per 128 values is
  // a megabyte of sums for an A4 scan at 300 dpi, which a fresh vector would page-fault in every
  // time.
  thread_local LeafPlan plan;
  thread_local std::vector<float> sums;
  PlanLeaves(n, plan);
  const size_t leaves = plan.counts.size();
  sums.resize(leaves);
  source.ByteSums(plan.counts.data(), leaves, sums.data());
  const float sum = CombineLeafSums(n, plan, sums.data());
  const auto mean = static_cast<float>(static_cast<double>(sum) / static_cast<double>(n));
  // (The mean's leaves above: every partial sum inside a leaf of uint8 values is an integer
  // below 2^24, so numpy's float32 leaf is the exact integer sum.)

  std::array<float, 256> square;
  for (int v = 0; v < 256; ++v) {
    const float d = static_cast<float>(v) - mean;
    square[static_cast<size_t>(v)] = d * d;
  }
  source.SquareSums(plan.counts.data(), leaves, square.data(), mean, sums.data());
  const float squares = CombineLeafSums(n, plan, sums.data());
  const auto var = static_cast<float>(static_cast<double>(squares) / static_cast<double>(n));
  float std_dev = std::sqrt(var);
  const double floor = 1.0 / std::sqrt(static_cast<double>(n));
  if (floor > static_cast<double>(std_dev)) std_dev = static_cast<float>(floor);

  Standardization s;
  s.mean = mean;
  s.std = std_dev;
  for (int v = 0; v < 256; ++v) {
    s.table[static_cast<size_t>(v)] = (static_cast<float>(v) - mean) / std_dev;
  }
  s.inverse = 1.0f / std_dev;
  s.by_inverse = InverseStepIsExact(s);
  return s;
}

// ATen's antialiased linear weights along one axis for float32 tensors (UpSampleKernel.cpp,
// HelperInterpLinear with _compute_indices_min_size_weights_aa; scalar_t = float), with each
// of its float / double promotions: the scale is float(in) / out in float; the centre, the
// inverse scale and the filter's argument go through double and are rounded to float where the
// C++ assigns them; the weights are summed and divided in float.
struct AaAxis {
  std::vector<int64_t> first;  // first source index of each output index
  std::vector<int64_t> count;  // source indices used
  std::vector<float> weights;  // [out][taps]
  int64_t taps = 0;
};

// How torch's compiled kernel rounds `output = t0 * w0; for j >= 1: output += tj * wj` over
// `count` terms (interpolate_aa_single_dim and its zero-strides twin, as built in the x86-64
// wheels of torch 2.15): the products of terms 1..Unfused(count) are computed four at a time
// (rounded), then added in order; the remaining terms are fused multiply-adds (one rounding).
// Measured term by term against torch (docs/pix2struct-preprocessing.md, "Exactness").
inline int64_t Unfused(int64_t count) { return 4 * ((count - 1) / 4); }

// One term: fused (std::fma) or rounded twice.
inline float Accumulate(bool fused, float sum, float t, float w) {
  return fused ? std::fma(t, w, sum) : sum + t * w;
}

float TriangleFilter(float x) {  // HelperInterpLinear::aa_filter<float>
  x = std::abs(x);
  if (x < 1.0) return static_cast<float>(1.0 - static_cast<double>(x));
  return 0.0f;
}

AaAxis AntialiasWeights(int64_t in, int64_t out) {
  AaAxis axis;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const float support = scale >= 1.0 ? static_cast<float>(1.0 * static_cast<double>(scale)) : 1.0f;
  axis.taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  const float invscale = scale >= 1.0 ? static_cast<float>(1.0 / static_cast<double>(scale)) : 1.0f;
  axis.first.resize(static_cast<size_t>(out));
  axis.count.resize(static_cast<size_t>(out));
  axis.weights.assign(static_cast<size_t>(out * axis.taps), 0.0f);
  for (int64_t i = 0; i < out; ++i) {
    const auto center =
        static_cast<float>(static_cast<double>(scale) * (static_cast<double>(i) + 0.5));
    const int64_t xmin =
        std::max(static_cast<int64_t>(static_cast<double>(center - support) + 0.5), int64_t{0});
    int64_t xsize =
        std::min(static_cast<int64_t>(static_cast<double>(center + support) + 0.5), in) - xmin;
    xsize = std::clamp(xsize, int64_t{0}, axis.taps);
    float* w = axis.weights.data() + i * axis.taps;
    float total = 0.0f;
    for (int64_t j = 0; j < xsize; ++j) {
      const float offset = static_cast<float>(j + xmin) - center;
      w[j] = TriangleFilter(
          static_cast<float>((static_cast<double>(offset) + 0.5) * static_cast<double>(invscale)));
      total += w[j];
    }
    if (total != 0.0f) {
      for (int64_t j = 0; j < xsize; ++j) w[j] /= total;
    }
    axis.first[static_cast<size_t>(i)] = xmin;
    axis.count[static_cast<size_t>(i)] = xsize;
  }
  return axis;
}

// The passes, written so that the compiler vectorizes them: the horizontal pass takes eight rows
// at once (each lane one row, the same weights), the vertical pass a whole output row. Every
// lane does the scalar arithmetic of its own output value, so the results do not depend on the
// vector width. Compiled twice (below): for AVX2 + FMA, and for the baseline.
constexpr int64_t kLanes = 8;

// Fills the channels' blocks of the rows y0 .. y0 + lanes - 1 (columns x0 and on; the rows past
// `lanes` are zero) as HorizontalPass lays them out, through the table: three from an HWC RGB
// page, or with `gray` the first from a contiguous gray page, one byte a pixel.
struct FillRowsScalar {
  [[gnu::always_inline]] void operator()(const uint8_t* rgb, int64_t in_w, int64_t y0,
                                         int64_t lanes, const Standardization& st, int64_t x0,
                                         bool gray, float* const blocks[3]) const {
    if (gray) {
      for (int64_t r = 0; r < kLanes; ++r) {
        float* t0 = blocks[0] + r;
        if (r < lanes) {
          const uint8_t* row = rgb + (y0 + r) * in_w;
          for (int64_t x = x0; x < in_w; ++x) t0[x * kLanes] = st.table[row[x]];
        } else {
          for (int64_t x = x0; x < in_w; ++x) t0[x * kLanes] = 0;
        }
      }
      return;
    }
    for (int64_t r = 0; r < kLanes; ++r) {
      float* t0 = blocks[0] + r;
      float* t1 = blocks[1] + r;
      float* t2 = blocks[2] + r;
      if (r < lanes) {
        const uint8_t* row = rgb + 3 * (y0 + r) * in_w;
        for (int64_t x = x0; x < in_w; ++x) {
          t0[x * kLanes] = st.table[row[3 * x]];
          t1[x * kLanes] = st.table[row[3 * x + 1]];
          t2[x * kLanes] = st.table[row[3 * x + 2]];
        }
      } else {
        for (int64_t x = x0; x < in_w; ++x) t0[x * kLanes] = t1[x * kLanes] = t2[x * kLanes] = 0;
      }
    }
  }
};

// The horizontal pass's arithmetic on one channel's block (`t`, laid out as FillRows fills it):
// output column x of row r (r < lanes) to dst[r * stride + x], one column after the other.
struct ColumnsScalar {
  ColumnsScalar(const AaAxis& /*ax*/, int64_t /*out_w*/) {}

  [[gnu::always_inline]] void operator()(const float* t, const AaAxis& ax, int64_t out_w,
                                         int64_t lanes, float* dst, int64_t stride) const {
    for (int64_t x = 0; x < out_w; ++x) {
      const float* w = ax.weights.data() + x * ax.taps;
      const float* src = t + ax.first[static_cast<size_t>(x)] * kLanes;
      const int64_t count = ax.count[static_cast<size_t>(x)];
      const int64_t unfused = Unfused(count);
      float acc[kLanes];
      for (int64_t r = 0; r < kLanes; ++r) acc[r] = src[r] * w[0];
      for (int64_t j = 1; j < count; ++j) {
        const float* v = src + j * kLanes;
        const float wj = w[j];
        if (j > unfused) {
          for (int64_t r = 0; r < kLanes; ++r) acc[r] = std::fma(v[r], wj, acc[r]);
        } else {
          for (int64_t r = 0; r < kLanes; ++r) acc[r] += v[r] * wj;
        }
      }
      for (int64_t r = 0; r < lanes; ++r) dst[r * stride + x] = acc[r];
    }
  }
};

// Row y of channel c of the horizontal pass's result goes to planes + (c * ring + y % ring) *
// out_w: with ring = in_h the whole planes, with a smaller multiple of kLanes (ResizeBody) a ring
// of the last rows. After each block of rows, done(rows made so far).
template <typename FillRows, typename Columns, typename Done>
[[gnu::always_inline]] inline void HorizontalPass(const uint8_t* rgb, int64_t in_h, int64_t in_w,
                                                  const Standardization& st, bool gray,
                                                  const AaAxis& ax, int64_t out_w, float* planes,
                                                  int64_t ring, Done&& done) {
  const int channels = gray ? 1 : 3;
  // Eight rows of each channel, standardized and transposed: column x of row y0 + r of channel c
  // at blocks[c][x * 8 + r]. One sweep over the eight rows fills the three channels' blocks.
  thread_local std::vector<float> storage;  // kept, as the other scratch
  storage.resize(static_cast<size_t>(3 * in_w * kLanes));
  float* const blocks[3] = {storage.data(), storage.data() + in_w * kLanes,
                            storage.data() + 2 * in_w * kLanes};
  Columns columns(ax, out_w);
  for (int64_t y0 = 0; y0 < in_h; y0 += kLanes) {
    const int64_t lanes = std::min(kLanes, in_h - y0);
    FillRows()(rgb, in_w, y0, lanes, st, 0, gray, blocks);
    for (int64_t c = 0; c < channels; ++c) {
      columns(blocks[c], ax, out_w, lanes, planes + (c * ring + y0 % ring) * out_w, out_w);
    }
    done(y0 + lanes);
  }
}

// One output row of the vertical pass: dst = sum of the `count` source rows `rows` times their
// weights, in order, the first Unfused(count) terms after the first rounded twice and the rest
// fused. Columns go kLanes at a time through loops of a constant count (which GCC vectorizes at
// -O2; it leaves loops of a variable count scalar there), then one by one.
struct VerticalRowScalar {
  [[gnu::always_inline]] void operator()(float* dst, const float* const* rows, const float* w,
                                         int64_t count, int64_t width) const {
    const int64_t unfused = Unfused(count);
    int64_t x = 0;
    for (; x + kLanes <= width; x += kLanes) {
      float acc[kLanes];
      for (int64_t k = 0; k < kLanes; ++k) acc[k] = rows[0][x + k] * w[0];
      for (int64_t j = 1; j < count; ++j) {
        const float* v = rows[j] + x;
        const float wj = w[j];
        if (j > unfused) {
          for (int64_t k = 0; k < kLanes; ++k) acc[k] = std::fma(v[k], wj, acc[k]);
        } else {
          for (int64_t k = 0; k < kLanes; ++k) acc[k] += v[k] * wj;
        }
      }
      for (int64_t k = 0; k < kLanes; ++k) dst[x + k] = acc[k];
    }
    for (; x < width; ++x) {
      float acc = rows[0][x] * w[0];
      for (int64_t j = 1; j < count; ++j) acc = Accumulate(j > unfused, acc, rows[j][x], w[j]);
      dst[x] = acc;
    }
  }
};

// The vertical pass, output row after output row as their source rows become available: the
// rows of the horizontal pass (or of the table) at planes + (c * ring + y % ring) * out_w. Each
// output row's channels go to sink.Row(y, c), then sink.Done(y).
template <typename VerticalRow, typename Sink>
class VerticalPass {
 public:
  VerticalPass(int64_t in_h, int64_t out_h, int channels, int64_t out_w, Sink& sink)
      : ax_(AntialiasWeights(in_h, out_h)),
        out_h_(out_h),
        channels_(channels),
        out_w_(out_w),
        sink_(sink),
        rows_(static_cast<size_t>(std::max<int64_t>(ax_.taps, 1))) {}

  // The ring rows, a multiple of kLanes, that cover any output row's sources from the block that
  // completes them on: an output row is made after the first block whose end passes its last
  // source row, when at most count + kLanes - 1 rows since its first have been made.
  int64_t RingRows() const { return (ax_.taps + 2 * kLanes - 1) / kLanes * kLanes; }

  // Makes the output rows whose source rows are all among the first `ready`.
  [[gnu::always_inline]] void Rows(const float* planes, int64_t ring, int64_t ready) {
    for (; next_ < out_h_; ++next_) {
      const auto y = static_cast<size_t>(next_);
      const int64_t first = ax_.first[y], count = ax_.count[y];
      if (first + std::max<int64_t>(count, 1) > ready) return;
      for (int64_t c = 0; c < channels_; ++c) {
        for (int64_t j = 0; j < std::max<int64_t>(count, 1); ++j) {
          rows_[static_cast<size_t>(j)] = planes + (c * ring + (first + j) % ring) * out_w_;
        }
        VerticalRow()(sink_.Row(next_, c), rows_.data(), ax_.weights.data() + next_ * ax_.taps,
                      count, out_w_);
      }
      sink_.Done(next_);
    }
  }

 private:
  AaAxis ax_;
  int64_t out_h_;
  int channels_;
  int64_t out_w_;
  Sink& sink_;
  std::vector<const float*> rows_;  // one output row's source rows
  int64_t next_ = 0;                // the next output row to make
};

// Patch rows: out[3 * x + c] = channel plane c's value x, for the n values of a run.
struct InterleaveScalar {
  void operator()(const float* r, const float* g, const float* b, int64_t n, float* out) const {
    for (int64_t x = 0; x < n; ++x) {
      out[3 * x] = r[x];
      out[3 * x + 1] = g[x];
      out[3 * x + 2] = b[x];
    }
  }
};

// Row r * cols + c of flattened_patches: [r + 1, c + 1, then (y, x, channel) of the patch], from
// the resized CHW planes (out_w wide, `plane` apart: 0 for a gray page's one plane standing for
// three); returns the end of the last row written.
template <typename Interleave>
float* PatchRows(const float* resized, int64_t out_w, int64_t plane, const Pix2StructGrid& grid,
                 int64_t ph, int64_t pw, float* o) {
  const Interleave interleave;
  for (int64_t r = 0; r < grid.rows; ++r) {
    for (int64_t col = 0; col < grid.cols; ++col) {
      *o++ = static_cast<float>(r + 1);
      *o++ = static_cast<float>(col + 1);
      for (int64_t y = 0; y < ph; ++y, o += 3 * pw) {
        const float* src = resized + (r * ph + y) * out_w + col * pw;
        interleave(src, src + plane, src + 2 * plane, pw, o);
      }
    }
  }
  return o;
}

// Row y of the resized image is row y % ph of the patches in patch row y / ph: where patch `col`
// of that row takes its 3 * pw values of it (`out`: flattened_patches). Its ids go in with its
// first row.
[[gnu::always_inline]] inline float* PatchRun(float* out, const Pix2StructGrid& grid, int64_t ph,
                                              int64_t pw, int64_t y, int64_t col) {
  const int64_t r = y / ph, in_patch = y % ph;
  float* o = out + (r * grid.cols + col) * (2 + 3 * ph * pw);
  if (in_patch == 0) {
    o[0] = static_cast<float>(r + 1);
    o[1] = static_cast<float>(col + 1);
  }
  return o + 2 + in_patch * 3 * pw;
}

// The end of the patch rows of `grid` in `out`.
inline float* PatchesEnd(float* out, const Pix2StructGrid& grid, int64_t ph, int64_t pw) {
  return out + int64_t{grid.rows} * grid.cols * (2 + 3 * ph * pw);
}

// The vertical pass's sink that writes each resized row straight into flattened_patches: its
// channels are made in a buffer of three rows (in L1) and interleaved into the patch rows they
// belong to (PatchRun), so the resized CHW planes (6 MB at 2048 patches) are never stored and
// read back.
template <typename Interleave>
class PatchSink {
 public:
  PatchSink(const Pix2StructGrid& grid, int64_t ph, int64_t pw, int channels, float* out)
      : grid_(grid), ph_(ph), pw_(pw), out_w_(grid.cols * pw), channels_(channels), out_(out) {
    thread_local std::vector<float> rows;  // kept, as the other scratch
    rows.resize(static_cast<size_t>(3 * out_w_));
    rows_ = rows.data();
  }

  float* Row(int64_t /*y*/, int64_t c) { return rows_ + c * out_w_; }

  void Done(int64_t y) {
    const Interleave interleave;
    const int64_t plane = channels_ == 3 ? out_w_ : 0;
    for (int64_t col = 0; col < grid_.cols; ++col) {
      const float* src = rows_ + col * pw_;
      interleave(src, src + plane, src + 2 * plane, pw_, PatchRun(out_, grid_, ph_, pw_, y, col));
    }
  }

  // The end of the last patch row.
  float* End() const { return PatchesEnd(out_, grid_, ph_, pw_); }

 private:
  Pix2StructGrid grid_;
  int64_t ph_, pw_, out_w_;
  int channels_;
  float* out_;
  float* rows_;
};

// ATen resizes the width first (the contiguous dimension), then the height, skipping a
// dimension whose size does not change; the patches are then cut from the CHW result. With
// `gray`, `rgb` is a contiguous gray page (one byte a pixel): its three channels are equal, so
// are their resized planes, and the first is computed and stands for all three. When the height
// changes, it is resized as soon as the width's rows it needs are made, which then need only a
// ring of the last rows (a few hundred KB, in cache) rather than whole planes (25 MB for an A4
// scan at 300 dpi, written out to memory and read back), and each resized row goes straight into
// the patches (PatchSink); the same arithmetic on the same values. Returns the end of the last
// patch row written to `out`.
template <typename FillRows, typename Columns, typename VerticalRow, typename Interleave>
[[gnu::always_inline]] inline float* ResizeBody(const uint8_t* rgb, int64_t in_h, int64_t in_w,
                                                const Standardization& st, bool gray,
                                                const Pix2StructGrid& grid, int64_t ph, int64_t pw,
                                                float* out) {
  const int channels = gray ? 1 : 3;
  const int64_t out_h = grid.rows * ph, out_w = grid.cols * pw;
  // Per-thread scratch, kept between pages: a loader worker then allocates (and page-faults)
  // only when a page needs more than any before it on that thread. It holds 3 x H x out_w floats
  // of the largest page whose height stays (a ring of rows otherwise).
  thread_local std::vector<float> wide;
  const auto table_planes = [&] {  // the width unchanged: the standardized page as CHW planes
    wide.resize(static_cast<size_t>(3 * in_h * out_w));
    for (int64_t c = 0; c < channels; ++c) {
      float* plane = wide.data() + c * in_h * out_w;
      const int64_t step = gray ? 1 : 3;
      for (int64_t i = 0; i < in_h * in_w; ++i) plane[i] = st.table[rgb[step * i + c]];
    }
  };
  if (out_h == in_h) {
    if (out_w == in_w) {
      table_planes();
    } else {
      wide.resize(static_cast<size_t>(3 * in_h * out_w));
      HorizontalPass<FillRows, Columns>(rgb, in_h, in_w, st, gray, AntialiasWeights(in_w, out_w),
                                        out_w, wide.data(), in_h, [](int64_t) {});
    }
    return PatchRows<Interleave>(wide.data(), out_w, gray ? 0 : in_h * out_w, grid, ph, pw, out);
  }
  PatchSink<Interleave> sink(grid, ph, pw, channels, out);
  VerticalPass<VerticalRow, PatchSink<Interleave>> vertical(in_h, out_h, channels, out_w, sink);
  if (out_w == in_w) {
    table_planes();
    vertical.Rows(wide.data(), in_h, in_h);
  } else {
    const int64_t ring = std::min(vertical.RingRows(), in_h);
    wide.resize(static_cast<size_t>(3 * ring * out_w));
    float* const planes = wide.data();
    HorizontalPass<FillRows, Columns>(rgb, in_h, in_w, st, gray, AntialiasWeights(in_w, out_w),
                                      out_w, planes, ring,
                                      [&](int64_t ready) { vertical.Rows(planes, ring, ready); });
  }
  return sink.End();
}

#if defined(__x86_64__) && defined(__GNUC__)
#define DOCFEED_PIX2STRUCT_AVX2 1
// FillRowsScalar with AVX2, for eight rows at a time: each row's channel c of eight pixels
// (24 bytes) picked out with two byte shuffles, standardized through the reciprocal step that
// gives the table's entries bit for bit (Standardization::by_inverse: the table's subtraction,
// then a multiply and two fused multiply-adds in place of the division), the 8 x 8 block of rows
// by columns transposed in registers, and stored as eight columns. The pixels of a row past the
// last whole eight, and blocks of fewer than eight rows, go through the table.
struct FillRowsAvx2 {
  // The 8 x 8 transpose: row i of `m` (columns 0..7) becomes column i.
  [[gnu::target("avx2,fma")]] static void Transpose8(__m256 m[8]) {
    const __m256 t0 = _mm256_unpacklo_ps(m[0], m[1]), t1 = _mm256_unpackhi_ps(m[0], m[1]);
    const __m256 t2 = _mm256_unpacklo_ps(m[2], m[3]), t3 = _mm256_unpackhi_ps(m[2], m[3]);
    const __m256 t4 = _mm256_unpacklo_ps(m[4], m[5]), t5 = _mm256_unpackhi_ps(m[4], m[5]);
    const __m256 t6 = _mm256_unpacklo_ps(m[6], m[7]), t7 = _mm256_unpackhi_ps(m[6], m[7]);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    m[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
    m[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    m[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
    m[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    m[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    m[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    m[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    m[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
  }

  // Byte k of the shuffles' result is channel c of pixel k: byte 3k + c of the 24, from the
  // first 16 (kLo) or the last 8 (kHi); -1 (0x80) gives zero.
  alignas(16) static constexpr int8_t kLo[3][16] = {
      {0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
      {1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
      {2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}};
  alignas(16) static constexpr int8_t kHi[3][16] = {
      {-1, -1, -1, -1, -1, -1, 2, 5, -1, -1, -1, -1, -1, -1, -1, -1},
      {-1, -1, -1, -1, -1, 0, 3, 6, -1, -1, -1, -1, -1, -1, -1, -1},
      {-1, -1, -1, -1, -1, 1, 4, 7, -1, -1, -1, -1, -1, -1, -1, -1}};

  [[gnu::target("avx2,fma")]] void operator()(const uint8_t* rgb, int64_t in_w, int64_t y0,
                                              int64_t lanes, const Standardization& st,
                                              int64_t /*x0*/, bool gray,
                                              float* const blocks[3]) const {
    // (A page whose reciprocal step is not exact, which no divisor tried so far gave, goes
    // through the table.)
    if (lanes < kLanes || !st.by_inverse) {
      return FillRowsScalar()(rgb, in_w, y0, lanes, st, 0, gray, blocks);
    }
    const __m256 mean = _mm256_set1_ps(st.mean), std_dev = _mm256_set1_ps(st.std);
    const __m256 inverse = _mm256_set1_ps(st.inverse);
    const int64_t whole = in_w - in_w % kLanes;
    for (int c = 0; c < (gray ? 1 : 3); ++c) {
      const __m128i lo_shuffle = _mm_load_si128(reinterpret_cast<const __m128i*>(kLo[c]));
      const __m128i hi_shuffle = _mm_load_si128(reinterpret_cast<const __m128i*>(kHi[c]));
      for (int64_t x = 0; x < whole; x += kLanes) {
        __m256 m[kLanes];
#pragma GCC unroll 8
        for (int64_t r = 0; r < kLanes; ++r) {
          __m128i v;
          if (gray) {  // eight bytes of the row
            v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(rgb + (y0 + r) * in_w + x));
          } else {
            const uint8_t* p = rgb + 3 * ((y0 + r) * in_w + x);
            const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
            const __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 16));
            v = _mm_or_si128(_mm_shuffle_epi8(lo, lo_shuffle), _mm_shuffle_epi8(hi, hi_shuffle));
          }
          const __m256 d = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)), mean);
          const __m256 q = _mm256_mul_ps(d, inverse);
          m[r] = _mm256_fmadd_ps(_mm256_fnmadd_ps(q, std_dev, d), inverse, q);
        }
        Transpose8(m);
#pragma GCC unroll 8
        for (int64_t k = 0; k < kLanes; ++k) _mm256_storeu_ps(blocks[c] + (x + k) * kLanes, m[k]);
      }
    }
    if (whole < in_w) FillRowsScalar()(rgb, in_w, y0, lanes, st, whole, gray, blocks);
  }
};

// ColumnsScalar with AVX2, several columns at a time. Each output value is one dependent chain of
// `count` multiply-adds on one vector (a column's eight rows): one column after the other, the
// FMA latency bounded the loop, not the FMA units, and the loop's exit, on a count that changes
// between neighbouring columns, was often mispredicted. Columns that share a count (hence the
// same unfused and fused terms) go kGroup (else four) at a time, their chains interleaved: each
// chain has its own terms in its own order, so the bits are the one-column loop's. The columns
// are visited sorted by count (the rest, at the page's edges or left over, one at a time), each
// into `cols_` laid out as the block (column x of row r at x * 8 + r); 8 x 8 tiles of that are
// then transposed into eight rows of `dst`, a vector store per row instead of a scalar store per
// value.
struct ColumnsAvx2 {
  static constexpr int64_t kGroup = 8;
  struct Group {
    int64_t size, count;
  };
  std::vector<Group> groups_;     // in the order visited
  std::vector<int64_t> columns_;  // the columns visited, group after group
  std::vector<int64_t> firsts_;   // their first source column's offset in the block
  std::vector<float> weights_;    // per group: tap j of its column k at [j * size + k]
  std::vector<float> cols_;       // one block's results, column x of row r at x * 8 + r

  ColumnsAvx2(const AaAxis& ax, int64_t out_w)
      : columns_(static_cast<size_t>(out_w)),
        firsts_(static_cast<size_t>(out_w)),
        cols_(static_cast<size_t>(out_w * kLanes)) {
    const auto count = [&](int64_t x) { return ax.count[static_cast<size_t>(x)]; };
    for (int64_t x = 0; x < out_w; ++x) columns_[static_cast<size_t>(x)] = x;
    std::stable_sort(columns_.begin(), columns_.end(),
                     [&](int64_t a, int64_t b) { return count(a) < count(b); });
    for (int64_t i = 0; i < out_w;) {
      const int64_t n = count(columns_[static_cast<size_t>(i)]);
      const auto shared = [&](int64_t size) {
        return i + size <= out_w && count(columns_[static_cast<size_t>(i + size - 1)]) == n;
      };
      const int64_t size = shared(kGroup) ? kGroup : shared(4) ? 4 : 1;
      groups_.push_back({size, n});
      for (int64_t j = 0; j < std::max<int64_t>(n, 1); ++j) {
        for (int64_t k = 0; k < size; ++k) {
          weights_.push_back(
              ax.weights[static_cast<size_t>(columns_[static_cast<size_t>(i + k)] * ax.taps + j)]);
        }
      }
      for (int64_t k = 0; k < size; ++k, ++i) {
        firsts_[static_cast<size_t>(i)] =
            ax.first[static_cast<size_t>(columns_[static_cast<size_t>(i)])] * kLanes;
      }
    }
  }

  // The chains of `size` columns sharing `count`: src of column k at t + first[k], its taps at
  // w[j * size + k]; results to cols_ at column[k] * 8.
  template <int64_t size>
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline void Chains(
      const float* t, const int64_t* first, const float* w, int64_t count, const int64_t* column,
      float* cols) {
    const int64_t unfused = Unfused(count);
    __m256 acc[size];
#pragma GCC unroll 8
    for (int64_t k = 0; k < size; ++k) {
      acc[k] = _mm256_mul_ps(_mm256_loadu_ps(t + first[k]), _mm256_broadcast_ss(w + k));
    }
    int64_t j = 1;
    for (; j <= unfused; ++j) {
      const float* v = t + j * kLanes;
      const float* wj = w + j * size;
#pragma GCC unroll 8
      for (int64_t k = 0; k < size; ++k) {
        acc[k] = _mm256_add_ps(
            acc[k], _mm256_mul_ps(_mm256_loadu_ps(v + first[k]), _mm256_broadcast_ss(wj + k)));
      }
    }
    for (; j < count; ++j) {
      const float* v = t + j * kLanes;
      const float* wj = w + j * size;
#pragma GCC unroll 8
      for (int64_t k = 0; k < size; ++k) {
        acc[k] =
            _mm256_fmadd_ps(_mm256_loadu_ps(v + first[k]), _mm256_broadcast_ss(wj + k), acc[k]);
      }
    }
#pragma GCC unroll 8
    for (int64_t k = 0; k < size; ++k) _mm256_storeu_ps(cols + column[k] * kLanes, acc[k]);
  }

  [[gnu::target("avx2,fma")]] void operator()(const float* t, const AaAxis& /*ax*/, int64_t out_w,
                                              int64_t lanes, float* dst, int64_t stride) {
    const int64_t* column = columns_.data();
    const int64_t* first = firsts_.data();
    const float* w = weights_.data();
    float* cols = cols_.data();
    for (const Group& g : groups_) {
      if (g.size == kGroup) {
        Chains<kGroup>(t, first, w, g.count, column, cols);
      } else if (g.size == 4) {
        Chains<4>(t, first, w, g.count, column, cols);
      } else {
        Chains<1>(t, first, w, g.count, column, cols);
      }
      column += g.size;
      first += g.size;
      w += g.size * std::max<int64_t>(g.count, 1);
    }
    int64_t x = 0;
    for (; x + kLanes <= out_w; x += kLanes) {
      // (Loaded one by one: a loop of loads into the array became 16-byte copies into it, which
      // then stalled the transpose's 32-byte loads.)
      const float* tile = cols + x * kLanes;
      __m256 m[kLanes] = {_mm256_loadu_ps(tile),      _mm256_loadu_ps(tile + 8),
                          _mm256_loadu_ps(tile + 16), _mm256_loadu_ps(tile + 24),
                          _mm256_loadu_ps(tile + 32), _mm256_loadu_ps(tile + 40),
                          _mm256_loadu_ps(tile + 48), _mm256_loadu_ps(tile + 56)};
      FillRowsAvx2::Transpose8(m);
      for (int64_t r = 0; r < lanes; ++r) _mm256_storeu_ps(dst + r * stride + x, m[r]);
    }
    for (; x < out_w; ++x) {
      for (int64_t r = 0; r < lanes; ++r) dst[r * stride + x] = cols[x * kLanes + r];
    }
  }
};

// VerticalRowScalar with AVX2: all of a row's columns share the taps, so four vectors of columns
// go at a time, four independent chains (as in ColumnsAvx2), then one vector, then one by one.
struct VerticalRowAvx2 {
  // Columns x .. x + 8 * chains - 1.
  template <int64_t chains>
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline void Block(
      float* dst, const float* const* rows, const float* w, int64_t count, int64_t x) {
    const int64_t unfused = Unfused(count);
    __m256 acc[chains];
    const __m256 w0 = _mm256_broadcast_ss(w);
#pragma GCC unroll 8
    for (int64_t k = 0; k < chains; ++k) {
      acc[k] = _mm256_mul_ps(_mm256_loadu_ps(rows[0] + x + k * kLanes), w0);
    }
    int64_t j = 1;
    for (; j <= unfused; ++j) {
      const float* v = rows[j] + x;
      const __m256 wj = _mm256_broadcast_ss(w + j);
#pragma GCC unroll 8
      for (int64_t k = 0; k < chains; ++k) {
        acc[k] = _mm256_add_ps(acc[k], _mm256_mul_ps(_mm256_loadu_ps(v + k * kLanes), wj));
      }
    }
    for (; j < count; ++j) {
      const float* v = rows[j] + x;
      const __m256 wj = _mm256_broadcast_ss(w + j);
#pragma GCC unroll 8
      for (int64_t k = 0; k < chains; ++k) {
        acc[k] = _mm256_fmadd_ps(_mm256_loadu_ps(v + k * kLanes), wj, acc[k]);
      }
    }
#pragma GCC unroll 8
    for (int64_t k = 0; k < chains; ++k) _mm256_storeu_ps(dst + x + k * kLanes, acc[k]);
  }

  [[gnu::target("avx2,fma")]] void operator()(float* dst, const float* const* rows, const float* w,
                                              int64_t count, int64_t width) const {
    int64_t x = 0;
    for (; x + 4 * kLanes <= width; x += 4 * kLanes) Block<4>(dst, rows, w, count, x);
    for (; x + kLanes <= width; x += kLanes) Block<1>(dst, rows, w, count, x);
    const int64_t unfused = Unfused(count);
    for (; x < width; ++x) {
      float acc = rows[0][x] * w[0];
      for (int64_t j = 1; j < count; ++j) acc = Accumulate(j > unfused, acc, rows[j][x], w[j]);
      dst[x] = acc;
    }
  }
};

// InterleaveScalar eight values at a time: each output vector of eight gathers its lanes from
// the three runs with one permute each and two blends. Copies only: the same bits.
struct InterleaveAvx2 {
  [[gnu::target("avx2,fma")]] void operator()(const float* r, const float* g, const float* b,
                                              int64_t n, float* out) const {
    // Output lane j of vector k is value (8k + j) / 3 of channel (8k + j) % 3.
    const __m256i pr0 = _mm256_setr_epi32(0, 0, 0, 1, 0, 0, 2, 0);
    const __m256i pg0 = _mm256_setr_epi32(0, 0, 0, 0, 1, 0, 0, 2);
    const __m256i pb0 = _mm256_setr_epi32(0, 0, 0, 0, 0, 1, 0, 0);
    const __m256i pr1 = _mm256_setr_epi32(0, 3, 0, 0, 4, 0, 0, 5);
    const __m256i pg1 = _mm256_setr_epi32(0, 0, 3, 0, 0, 4, 0, 0);
    const __m256i pb1 = _mm256_setr_epi32(2, 0, 0, 3, 0, 0, 4, 0);
    const __m256i pr2 = _mm256_setr_epi32(0, 0, 6, 0, 0, 7, 0, 0);
    const __m256i pg2 = _mm256_setr_epi32(5, 0, 0, 6, 0, 0, 7, 0);
    const __m256i pb2 = _mm256_setr_epi32(0, 5, 0, 0, 6, 0, 0, 7);
    int64_t x = 0;
    for (; x + 8 <= n; x += 8, out += 24) {
      const __m256 vr = _mm256_loadu_ps(r + x);
      const __m256 vg = _mm256_loadu_ps(g + x);
      const __m256 vb = _mm256_loadu_ps(b + x);
      // Blend masks: bit j set takes lane j from the second operand.
      const __m256 o0 =
          _mm256_blend_ps(_mm256_blend_ps(_mm256_permutevar8x32_ps(vr, pr0),
                                          _mm256_permutevar8x32_ps(vg, pg0), 0b10010010),
                          _mm256_permutevar8x32_ps(vb, pb0), 0b00100100);
      const __m256 o1 =
          _mm256_blend_ps(_mm256_blend_ps(_mm256_permutevar8x32_ps(vr, pr1),
                                          _mm256_permutevar8x32_ps(vg, pg1), 0b00100100),
                          _mm256_permutevar8x32_ps(vb, pb1), 0b01001001);
      const __m256 o2 =
          _mm256_blend_ps(_mm256_blend_ps(_mm256_permutevar8x32_ps(vr, pr2),
                                          _mm256_permutevar8x32_ps(vg, pg2), 0b01001001),
                          _mm256_permutevar8x32_ps(vb, pb2), 0b10010010);
      _mm256_storeu_ps(out, o0);
      _mm256_storeu_ps(out + 8, o1);
      _mm256_storeu_ps(out + 16, o2);
    }
    InterleaveScalar()(r + x, g + x, b + x, n - x, out);
  }
};

[[gnu::target("avx2,fma")]] float* ResizeAvx2(const uint8_t* rgb, int64_t in_h, int64_t in_w,
                                              const Standardization& st, bool gray,
                                              const Pix2StructGrid& grid, int64_t ph, int64_t pw,
                                              float* out) {
  return ResizeBody<FillRowsAvx2, ColumnsAvx2, VerticalRowAvx2, InterleaveAvx2>(
      rgb, in_h, in_w, st, gray, grid, ph, pw, out);
}

// SquareLeafScalar with AVX2: the eight running sums are the eight lanes of one vector; each
// chunk's squares are computed as the table's are (a float subtraction, then a float product:
// the same two roundings, and no fused multiply-add in this file), which costs less than
// gathering them from the table; the same additions in the same order.
struct SquareLeafAvx2 {
  // ByteSum 32 values at a time: _mm256_sad_epu8 against zero sums each 8 bytes into a 64-bit
  // lane (integers: any order gives the same sum).
  [[gnu::target("avx2,fma")]] static int32_t ByteSum(const uint8_t* p, int64_t count) {
    __m256i acc = _mm256_setzero_si256();
    int64_t i = 0;
    for (; i + 32 <= count; i += 32) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
      acc = _mm256_add_epi64(acc, _mm256_sad_epu8(v, _mm256_setzero_si256()));
    }
    alignas(32) int64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc);
    int64_t sum = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    for (; i < count; ++i) sum += p[i];
    return static_cast<int32_t>(sum);
  }

  // The leaf's eight running sums (the lanes of `r`) added as numpy does:
  // ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)).
  [[gnu::target("avx2,fma")]] static float Combine(__m256 r) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, r);
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
           ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  }

  [[gnu::target("avx2,fma")]] static __m256 Squares(const uint8_t* p, __m256 mean) {
    int64_t bytes = 0;
    std::memcpy(&bytes, p, 8);
    const __m256 d =
        _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(bytes))), mean);
    return _mm256_mul_ps(d, d);
  }

  [[gnu::target("avx2,fma")]] float operator()(const uint8_t* p, int64_t count, const float* square,
                                               float mean) const {
    if (count < 16) return SquareLeafScalar()(p, count, square, mean);
    // Lane k of chunk i: square[p[i + k]].
    const __m256 m = _mm256_set1_ps(mean);
    __m256 r = Squares(p, m);
    int64_t i = 8;
    for (; i < count - (count % 8); i += 8) r = _mm256_add_ps(r, Squares(p + i, m));
    float sum = Combine(r);
    for (; i < count; ++i) sum += square[p[i]];
    return sum;
  }

  // Values e .. e + 7 of a gray page's HWC array, g[(e + k) / 3]: the gray bytes from g[e / 3]
  // on, spread by a shuffle that depends on e % 3. Reads no gray byte past the last one used.
  [[gnu::target("avx2,fma")]] static __m256 GraySquares8(const uint8_t* g, int64_t pixels,
                                                         int64_t e, __m256 mean) {
    alignas(16) static constexpr int8_t kSpread[3][16] = {
        {0, 0, 0, 1, 1, 1, 2, 2, -1, -1, -1, -1, -1, -1, -1, -1},
        {0, 0, 1, 1, 1, 2, 2, 2, -1, -1, -1, -1, -1, -1, -1, -1},
        {0, 1, 1, 1, 2, 2, 2, 3, -1, -1, -1, -1, -1, -1, -1, -1}};
    const int64_t q = e / 3;
    int32_t bytes = 0;
    if (q + 4 <= pixels) {
      std::memcpy(&bytes, g + q, 4);
    } else {
      std::memcpy(&bytes, g + q, static_cast<size_t>(pixels - q));  // the page's last bytes
    }
    const __m128i spread = _mm_shuffle_epi8(
        _mm_cvtsi32_si128(bytes), _mm_load_si128(reinterpret_cast<const __m128i*>(kSpread[e % 3])));
    const __m256 d = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(spread)), mean);
    return _mm256_mul_ps(d, d);
  }

  // operator() over values begin .. begin + count - 1 of a gray page's HWC array (GrayLeaves).
  [[gnu::target("avx2,fma")]] static float GraySquares(const uint8_t* g, int64_t pixels,
                                                       int64_t begin, int64_t count,
                                                       const float* square, float mean) {
    if (count < 16) return SquareLeafScalar::GraySquares(g, pixels, begin, count, square, mean);
    const __m256 m = _mm256_set1_ps(mean);
    __m256 r = GraySquares8(g, pixels, begin, m);
    int64_t i = 8;
    for (; i < count - (count % 8); i += 8)
      r = _mm256_add_ps(r, GraySquares8(g, pixels, begin + i, m));
    float sum = Combine(r);
    for (; i < count; ++i) sum += square[g[(begin + i) / 3]];
    return sum;
  }
};

[[gnu::target("avx2,fma")]] Standardization StandardizeAvx2(const uint8_t* rgb, int64_t n) {
  return StandardizeTable(RgbLeaves<SquareLeafAvx2>{rgb}, n);
}

[[gnu::target("avx2,fma")]] Standardization StandardizeGrayAvx2(const uint8_t* gray,
                                                                int64_t pixels) {
  return StandardizeTable(GrayLeaves<SquareLeafAvx2>{gray, pixels}, 3 * pixels);
}

// The statistics' leaves with AVX-512 (BW for the byte loads and sums, VL for the 128-bit
// masked forms, VBMI for the gray page's byte permute), picked at run time as the AVX2 passes.
#define DOCFEED_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma"
// GCC 12's headers start some AVX-512 intrinsics from _mm512_undefined_*, which its
// -Wmaybe-uninitialized takes for a read of an uninitialized value (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// SquareLeafAvx2 over all the leaves: each leaf's byte sum from two masked 64-byte loads
// (masked-off bytes are not read, so no leaf reads past its end) without a branch on its size.
struct SquareLeafAvx512 {
  [[gnu::target(DOCFEED_AVX512_TARGET)]] static void ByteSums(const uint8_t* p,
                                                              const uint8_t* counts, size_t leaves,
                                                              float* sums) {
    const __m512i zero = _mm512_setzero_si512();
    for (size_t l = 0; l < leaves; ++l) {
      const unsigned c = counts[l];  // 1..128
      const __mmask64 low = c >= 64 ? ~__mmask64{0} : (__mmask64{1} << c) - 1;
      const __mmask64 high = c > 64 ? ~__mmask64{0} >> (128 - c) : 0;
      const __m512i s = _mm512_add_epi64(
          _mm512_sad_epu8(_mm512_maskz_loadu_epi8(low, p), zero),
          _mm512_sad_epu8(_mm512_maskz_loadu_epi8(high, p + (c > 64 ? 64 : 0)), zero));
      sums[l] = static_cast<float>(_mm512_reduce_add_epi64(s));
      p += c;
    }
  }

  // The squared-deviation sums of the leaves over p, one by one as SquareLeafAvx2: the float
  // work (widen, convert, subtract, multiply, add: five operations a chunk) bounds it, and
  // neither 16-lane vectors of two leaves nor eight leaves' chains interleaved went faster.
  [[gnu::target(DOCFEED_AVX512_TARGET)]] static void SquareSums(const uint8_t* p,
                                                                const uint8_t* counts,
                                                                size_t leaves, const float* square,
                                                                float mean, float* sums) {
    for (size_t l = 0; l < leaves; ++l) {
      sums[l] = SquareLeafAvx2()(p, counts[l], square, mean);
      p += counts[l];
    }
  }
};

// The HWC array's leaves (SquareLeafAvx512), for StandardizeTable.
struct RgbGroups {
  const uint8_t* p;
  [[gnu::target(DOCFEED_AVX512_TARGET)]] void ByteSums(const uint8_t* counts, size_t leaves,
                                                       float* sums) const {
    SquareLeafAvx512::ByteSums(p, counts, leaves, sums);
  }
  [[gnu::target(DOCFEED_AVX512_TARGET)]] void SquareSums(const uint8_t* counts, size_t leaves,
                                                         const float* square, float mean,
                                                         float* sums) const {
    SquareLeafAvx512::SquareSums(p, counts, leaves, square, mean, sums);
  }
};

// A gray page's leaves (value e of its HWC array is g[e / 3]): the array is made a few thousand
// values at a time in a buffer that stays in L1, and its leaves summed there as RgbGroups does.
struct GrayGroups {
  const uint8_t* g;
  int64_t pixels;

  static constexpr int64_t kChunk = 8192;  // values made at a time (whole leaves)

  // Values b .. b + count - 1 of the array into out (and up to 16 bytes past them): 48 at a time,
  // picked from the 17 gray bytes they come from by one byte permute, whose pattern depends on
  // b % 3 only; the last few one by one.
  [[gnu::target(DOCFEED_AVX512_TARGET)]] void Expand(int64_t b, int64_t count, uint8_t* out) const {
    alignas(64) static constexpr auto kSpread = [] {
      std::array<std::array<uint8_t, 64>, 3> spread{};
      for (int phase = 0; phase < 3; ++phase) {
        for (int j = 0; j < 64; ++j) spread[phase][j] = static_cast<uint8_t>((phase + j) / 3);
      }
      return spread;
    }();
    const __m512i spread = _mm512_load_si512(kSpread[static_cast<size_t>(b % 3)].data());
    int64_t i = 0, q = b / 3;
    for (; i + 48 <= count && q + 17 <= pixels; i += 48, q += 16) {
      const __m512i bytes = _mm512_maskz_loadu_epi8(0x1FFFF, g + q);
      _mm512_storeu_si512(out + i, _mm512_permutexvar_epi8(spread, bytes));
    }
    for (; i < count; ++i) out[i] = g[(b + i) / 3];
  }

  // Calls sum(buffer, counts, leaves, first sum) on runs of whole leaves.
  template <typename Sum>
  [[gnu::target(DOCFEED_AVX512_TARGET)]] void Chunks(const uint8_t* counts, size_t leaves,
                                                     float* sums, Sum sum) const {
    alignas(64) uint8_t buffer[kChunk + 64];  // Expand writes up to 16 bytes past
    int64_t b = 0;
    size_t l = 0;
    while (l < leaves) {
      size_t k = l;
      int64_t count = 0;
      while (k < leaves && count + counts[k] <= kChunk) count += counts[k++];
      Expand(b, count, buffer);
      sum(buffer, counts + l, k - l, sums + l);
      b += count;
      l = k;
    }
  }

  [[gnu::target(DOCFEED_AVX512_TARGET)]] void ByteSums(const uint8_t* counts, size_t leaves,
                                                       float* sums) const {
    Chunks(counts, leaves, sums, [](const uint8_t* p, const uint8_t* c, size_t k, float* s) {
      SquareLeafAvx512::ByteSums(p, c, k, s);
    });
  }
  [[gnu::target(DOCFEED_AVX512_TARGET)]] void SquareSums(const uint8_t* counts, size_t leaves,
                                                         const float* square, float mean,
                                                         float* sums) const {
    Chunks(counts, leaves, sums, [=](const uint8_t* p, const uint8_t* c, size_t k, float* s) {
      SquareLeafAvx512::SquareSums(p, c, k, square, mean, s);
    });
  }
};

[[gnu::target(DOCFEED_AVX512_TARGET)]] Standardization StandardizeAvx512(const uint8_t* rgb,
                                                                         int64_t n) {
  return StandardizeTable(RgbGroups{rgb}, n);
}

[[gnu::target(DOCFEED_AVX512_TARGET)]] Standardization StandardizeGrayAvx512(const uint8_t* gray,
                                                                             int64_t pixels) {
  return StandardizeTable(GrayGroups{gray, pixels}, 3 * pixels);
}

// The resize of a page that is enlarged or mildly reduced, with AVX-512, row by row in the
// page's own HWC order. Enlarging, each output column has two or three terms, and the AVX2 passes
// spent more on moving values (the standardized rows transposed into blocks, the columns
// transposed back, the planes interleaved into the patches) than on the arithmetic; here nothing
// is transposed or interleaved. Each row is standardized into a row of floats in HWC order (value
// (x, c) at k * x + c, k = 3, or 1 for a gray page); output value (x, c) of the horizontal pass,
// at k * x + c of its row, is the sum over j < count[x] of source value k * (first[x] + j) + c
// times weight j of column x. Sixteen neighbouring output values (a group) take their terms j
// from one window of 32 source values (two loads), each lane picking its own by a permute: lane
// l's is value index[l] of the window that starts at base + k * j, the same index for every j.
// Each lane does the scalar path's arithmetic on its own terms: the first a rounded product, the
// others fused (Unfused(count) is 0 for count <= 4); a lane with fewer terms than its neighbours
// is left out of their later multiply-adds by a mask rather than given a zero weight (fma(t, 0,
// -0) is +0, not -0). Plan therefore accepts a page only when every column has 1 to 4 terms and
// every group's first terms lie within 32 values (its terms j then do too, k * j further on),
// which holds up to a reduction by about 1.7; other pages go through the AVX2 passes. The
// vertical pass is VerticalRowAvx2's arithmetic on the HWC rows (all the values of a row share
// its taps), and a patch's row is then 3 * pw contiguous values of a resized row.
class HwcColumnsAvx512 {
 public:
  static constexpr int64_t kGroup = 16;   // output values a group
  static constexpr int64_t kWindow = 32;  // source values its terms are picked from

  // Plans the pass over rows of `channels` (1 or 3) values a pixel; false when the page is not
  // covered (above).
  bool Plan(const AaAxis& ax, int64_t out_w, int channels) {
    groups_.clear();
    index_.clear();
    weights_.clear();
    channels_ = channels;
    for (int64_t x = 0; x < out_w; ++x) {
      const int64_t count = ax.count[static_cast<size_t>(x)];
      if (count < 1 || count > 4) return false;
    }
    const int64_t k = channels, values = k * out_w;
    for (int64_t g0 = 0; g0 < values; g0 += kGroup) {
      const int64_t lanes = std::min(kGroup, values - g0);
      const auto column = [&](int64_t l) { return static_cast<size_t>((g0 + l) / k); };
      const auto source = [&](int64_t l, int64_t j) {  // lane l's term j in the source row
        return k * (ax.first[column(l)] + j) + (g0 + l) % k;
      };
      int64_t low = source(0, 0), high = 0, taps = 1;
      for (int64_t l = 0; l < lanes; ++l) {
        low = std::min(low, source(l, 0));
        high = std::max(high, source(l, 0));
        taps = std::max(taps, ax.count[column(l)]);
      }
      if (high - low >= kWindow) return false;
      Group g{low, static_cast<int32_t>(taps), {}};
      for (int64_t l = 0; l < kGroup; ++l) {
        index_.push_back(l < lanes ? static_cast<int32_t>(source(l, 0) - low) : 0);
      }
      for (int64_t j = 0; j < taps; ++j) {
        for (int64_t l = 0; l < kGroup; ++l) {
          const bool term = l < lanes && j < ax.count[column(l)];
          weights_.push_back(
              term ? ax.weights[column(l) * static_cast<size_t>(ax.taps) + static_cast<size_t>(j)]
                   : 0.0f);
          if (term) g.terms[j] = static_cast<uint16_t>(g.terms[j] | (1u << l));
        }
      }
      groups_.push_back(g);
    }
    return true;
  }

  // The output rows dst[0 .. rows - 1] of the source rows src[r] (standardized HWC rows with
  // kWindow values of slack after their end, which only lanes left out read), group by group:
  // a group's indices and weights are loaded once for the rows.
  [[gnu::target(DOCFEED_AVX512_TARGET)]] void operator()(const float* const* src, int64_t rows,
                                                         float* const* dst) const {
    // (Members read into locals: the stores through dst could alias them for all the compiler
    // knows, and reloading them per row from a thread_local object cost a call's worth.)
    const int32_t* index = index_.data();
    const float* w = weights_.data();
    const int64_t k = channels_;
    int64_t at = 0;
    for (const Group& g : groups_) {
      switch (g.taps) {
        case 1:
          Rows<1>(g, index, w, k, src, rows, at, dst);
          break;
        case 2:
          Rows<2>(g, index, w, k, src, rows, at, dst);
          break;
        case 3:
          Rows<3>(g, index, w, k, src, rows, at, dst);
          break;
        default:
          Rows<4>(g, index, w, k, src, rows, at, dst);
          break;
      }
      index += kGroup;
      w += kGroup * g.taps;
      at += kGroup;
    }
  }

 private:
  struct Group {
    int64_t base;       // the first window's first value in the source row
    int32_t taps;       // the most terms of its lanes, 1..4
    uint16_t terms[4];  // [j]: the lanes with a term j ([0]: those inside the row)
  };

  template <int taps>
  [[gnu::target(DOCFEED_AVX512_TARGET), gnu::always_inline]] static inline void Rows(
      const Group& g, const int32_t* index, const float* w, int64_t k, const float* const* src,
      int64_t rows, int64_t at, float* const* dst) {
    const int64_t base = g.base;
    __mmask16 terms[taps];
#pragma GCC unroll 4
    for (int j = 0; j < taps; ++j) terms[j] = g.terms[j];
    const __m512i idx = _mm512_loadu_si512(index);
    __m512 wt[taps];
#pragma GCC unroll 4
    for (int j = 0; j < taps; ++j) wt[j] = _mm512_loadu_ps(w + j * kGroup);
    for (int64_t r = 0; r < rows; ++r) {
      const float* s = src[r] + base;
      __m512 acc = _mm512_mul_ps(
          _mm512_permutex2var_ps(_mm512_loadu_ps(s), idx, _mm512_loadu_ps(s + 16)), wt[0]);
#pragma GCC unroll 4
      for (int j = 1; j < taps; ++j) {
        const float* t = s + j * k;  // the window of the terms j
        acc = _mm512_mask3_fmadd_ps(
            _mm512_permutex2var_ps(_mm512_loadu_ps(t), idx, _mm512_loadu_ps(t + 16)), wt[j], acc,
            terms[j]);
      }
      _mm512_mask_storeu_ps(dst[r] + at, terms[0], acc);
    }
  }

  std::vector<Group> groups_;
  std::vector<int32_t> index_;  // per group, lane l: its first term's place in the window
  std::vector<float> weights_;  // per group, term j of lane l at [j * kGroup + l]
  int channels_ = 3;
};

// n bytes of a row into floats, standardized as FillRowsAvx2 does (the reciprocal step when it
// gives the table's values, else the table).
[[gnu::target(DOCFEED_AVX512_TARGET)]] void StandardizeRowAvx512(const uint8_t* p, int64_t n,
                                                                 const Standardization& st,
                                                                 float* out) {
  if (!st.by_inverse) {
    for (int64_t i = 0; i < n; ++i) out[i] = st.table[p[i]];
    return;
  }
  const __m512 mean = _mm512_set1_ps(st.mean), std_dev = _mm512_set1_ps(st.std);
  const __m512 inverse = _mm512_set1_ps(st.inverse);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m =
        n - i >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 d = _mm512_sub_ps(
        _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, p + i))), mean);
    const __m512 q = _mm512_mul_ps(d, inverse);
    _mm512_mask_storeu_ps(out + i, m, _mm512_fmadd_ps(_mm512_fnmadd_ps(q, std_dev, d), inverse, q));
  }
}

// The byte permutes' indices of FillRowsAvx512 (_mm512_permutex2var_epi8: index j < 64 picks
// byte j of the first operand, 64 + j byte j of the second). A pair of RGB rows (16 pixels, 48
// bytes each, byte 3k + c channel c of pixel k; row 2p first, 2p + 1 second): from channel
// `first` on, channel c of pixel k of the pair's row s at byte 32 (c - first) + 16s + k, so
// channels 0 and 1 fill one vector and channel 2 half of another.
constexpr std::array<uint8_t, 64> PairIndex(int first) {
  std::array<uint8_t, 64> index{};
  for (int j = 0; j < 64; ++j) {
    const int c = first + j / 32, s = j % 32 / 16, k = j % 16;
    index[static_cast<size_t>(j)] = static_cast<uint8_t>(c < 3 ? 64 * s + 3 * k + c : 0);
  }
  return index;
}

// One channel's four rows from two pairs (rows 0, 1 in the first, 2, 3 in the second), the
// channel's 32 bytes at `offset` in each: pixel k of row r at byte 4k + r.
constexpr std::array<uint8_t, 64> QuadIndex(int offset) {
  std::array<uint8_t, 64> index{};
  for (int j = 0; j < 64; ++j) {
    const int k = j / 4, r = j % 4;
    index[static_cast<size_t>(j)] = static_cast<uint8_t>(64 * (r / 2) + offset + 16 * (r % 2) + k);
  }
  return index;
}

// Columns 2i and 2i + 1 of eight rows from their four-row vectors (rows 0..3 first, 4..7
// second), laid out as the block: row r of column 2i + h in the low byte of 32-bit lane 8h + r.
// Pixel k of row r sits at byte 4k + r of an RGB four-row vector (QuadIndex), at 16r + k of a
// gray one (four rows' 16-byte loads side by side).
constexpr std::array<uint8_t, 64> ColumnPairIndex(int i, bool gray) {
  std::array<uint8_t, 64> index{};
  for (int lane = 0; lane < 16; ++lane) {
    const int k = 2 * i + lane / 8, r = lane % 8;
    index[static_cast<size_t>(4 * lane)] =
        static_cast<uint8_t>(64 * (r / 4) + (gray ? 16 * (r % 4) + k : 4 * k + r % 4));
  }
  return index;
}

// FillRowsAvx2 with AVX-512, for sixteen pixels of the eight rows at a time. The transpose is
// done on the bytes, 64 values a vector rather than 8 floats, by VBMI's two-source byte permutes
// (any bytes of two vectors in any order, one micro-op): each RGB row's 48 bytes in one load
// (masked: a page's last row may end 16 bytes after them), the rows paired (PairIndex), the
// pairs into a vector per channel of four rows (QuadIndex), and each two columns' eight rows
// straight from a channel's two four-row vectors into the low bytes of sixteen 32-bit lanes, the
// rest zeroed (ColumnPairIndex), which then take FillRowsAvx2's conversion and reciprocal step:
// the same arithmetic on the same values. A gray page's four-row vectors are four rows' 16-byte
// loads side by side. 38 permutes for the 384 values of sixteen RGB pixels, where FillRowsAvx2
// takes two shuffles, an or and a widening a row and channel and a 24-shuffle transpose for each
// 64: about half a micro-op a value in all against two, which on the machine it was measured on
// fills a 300 dpi page about as fast as the page streams in from memory. The pixels of a row past
// the last whole sixteen, and blocks of fewer than eight rows, go through the table.
struct FillRowsAvx512 {
  using Index = std::array<uint8_t, 64>;
  alignas(64) static constexpr Index kPairs[2] = {PairIndex(0), PairIndex(2)};
  alignas(64) static constexpr Index kQuads[2] = {QuadIndex(0), QuadIndex(32)};
  alignas(64) static constexpr Index kColumnPairs[2][8] = {
      {ColumnPairIndex(0, false), ColumnPairIndex(1, false), ColumnPairIndex(2, false),
       ColumnPairIndex(3, false), ColumnPairIndex(4, false), ColumnPairIndex(5, false),
       ColumnPairIndex(6, false), ColumnPairIndex(7, false)},
      {ColumnPairIndex(0, true), ColumnPairIndex(1, true), ColumnPairIndex(2, true),
       ColumnPairIndex(3, true), ColumnPairIndex(4, true), ColumnPairIndex(5, true),
       ColumnPairIndex(6, true), ColumnPairIndex(7, true)}};
  static constexpr __mmask64 kLowBytes = 0x1111111111111111;  // byte 0 of each 32-bit lane

  [[gnu::target(DOCFEED_AVX512_TARGET)]] static __m512i Load(const Index& index) {
    return _mm512_load_si512(index.data());
  }

  // The sixteen columns from x of a channel, from its four-row vectors (top, bottom),
  // standardized into `block`.
  [[gnu::target(DOCFEED_AVX512_TARGET), gnu::always_inline]] static inline void Columns(
      const __m512i column_pairs[8], __m512 mean, __m512 std_dev, __m512 inverse, __m512i top,
      __m512i bottom, float* block) {
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      const __m512i v = _mm512_maskz_permutex2var_epi8(kLowBytes, top, column_pairs[i], bottom);
      const __m512 d = _mm512_sub_ps(_mm512_cvtepi32_ps(v), mean);
      const __m512 q = _mm512_mul_ps(d, inverse);
      _mm512_storeu_ps(block + 2 * i * kLanes,
                       _mm512_fmadd_ps(_mm512_fnmadd_ps(q, std_dev, d), inverse, q));
    }
  }

  [[gnu::target(DOCFEED_AVX512_TARGET)]] void operator()(const uint8_t* rgb, int64_t in_w,
                                                         int64_t y0, int64_t lanes,
                                                         const Standardization& st, int64_t /*x0*/,
                                                         bool gray, float* const blocks[3]) const {
    if (lanes < kLanes || !st.by_inverse) {
      return FillRowsScalar()(rgb, in_w, y0, lanes, st, 0, gray, blocks);
    }
    const __m512 mean = _mm512_set1_ps(st.mean), std_dev = _mm512_set1_ps(st.std);
    const __m512 inverse = _mm512_set1_ps(st.inverse);
    __m512i column_pairs[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) column_pairs[i] = Load(kColumnPairs[gray][i]);
    int64_t x = 0;
    if (gray) {
      for (; x + 16 <= in_w; x += 16) {
        __m512i half[2];
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const uint8_t* p = rgb + (y0 + 4 * h) * in_w + x;
          const auto row = [p, in_w](int64_t r) {
            return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + r * in_w));
          };
          half[h] = _mm512_inserti32x4(
              _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(row(0)), row(1), 1),
                                 row(2), 2),
              row(3), 3);
        }
        Columns(column_pairs, mean, std_dev, inverse, half[0], half[1], blocks[0] + x * kLanes);
      }
    } else {
      const __m512i pairs_01 = Load(kPairs[0]), pairs_2 = Load(kPairs[1]);
      const __m512i quads_at0 = Load(kQuads[0]), quads_at32 = Load(kQuads[1]);
      for (; x + 16 <= in_w; x += 16) {
        __m512i lo[4], hi[4];  // channels 0 and 1, channel 2 of rows 2p, 2p + 1
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) {
          const uint8_t* a = rgb + 3 * ((y0 + 2 * p) * in_w + x);
          const __m512i first = _mm512_maskz_loadu_epi8(0xFFFFFFFFFFFF, a);
          const __m512i second = _mm512_maskz_loadu_epi8(0xFFFFFFFFFFFF, a + 3 * in_w);
          lo[p] = _mm512_permutex2var_epi8(first, pairs_01, second);
          hi[p] = _mm512_permutex2var_epi8(first, pairs_2, second);
        }
        Columns(column_pairs, mean, std_dev, inverse,
                _mm512_permutex2var_epi8(lo[0], quads_at0, lo[1]),
                _mm512_permutex2var_epi8(lo[2], quads_at0, lo[3]), blocks[0] + x * kLanes);
        Columns(column_pairs, mean, std_dev, inverse,
                _mm512_permutex2var_epi8(lo[0], quads_at32, lo[1]),
                _mm512_permutex2var_epi8(lo[2], quads_at32, lo[3]), blocks[1] + x * kLanes);
        Columns(column_pairs, mean, std_dev, inverse,
                _mm512_permutex2var_epi8(hi[0], quads_at0, hi[1]),
                _mm512_permutex2var_epi8(hi[2], quads_at0, hi[3]), blocks[2] + x * kLanes);
      }
    }
    if (x < in_w) FillRowsScalar()(rgb, in_w, y0, lanes, st, x, gray, blocks);
  }
};

// ResizeAvx2 with FillRowsAvx512, for the pages the HWC path leaves (reduced by more than about
// 1.7, or one side kept).
[[gnu::target(DOCFEED_AVX512_TARGET)]] float* ResizeAvx512Fill(const uint8_t* rgb, int64_t in_h,
                                                               int64_t in_w,
                                                               const Standardization& st, bool gray,
                                                               const Pix2StructGrid& grid,
                                                               int64_t ph, int64_t pw, float* out) {
  return ResizeBody<FillRowsAvx512, ColumnsAvx2, VerticalRowAvx2, InterleaveAvx2>(
      rgb, in_h, in_w, st, gray, grid, ph, pw, out);
}

// VerticalRowAvx2 with 16 lanes, for the HWC rows: the same chains per value, the row's last
// values through masked loads and stores.
struct VerticalRowAvx512 {
  // Values x .. x + 16 * chains - 1 (with `tail`, the lanes of the one vector to load and store).
  template <int64_t chains>
  [[gnu::target(DOCFEED_AVX512_TARGET), gnu::always_inline]] static inline void Block(
      float* dst, const float* const* rows, const float* w, int64_t count, int64_t x,
      __mmask16 tail = 0xFFFF) {
    const int64_t unfused = Unfused(count);
    __m512 acc[chains];
#pragma GCC unroll 4
    for (int64_t k = 0; k < chains; ++k) {
      acc[k] =
          _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, rows[0] + x + k * 16), _mm512_set1_ps(w[0]));
    }
    int64_t j = 1;
    for (; j <= unfused; ++j) {
      const float* v = rows[j] + x;
      const __m512 wj = _mm512_set1_ps(w[j]);
#pragma GCC unroll 4
      for (int64_t k = 0; k < chains; ++k) {
        acc[k] = _mm512_add_ps(acc[k], _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, v + k * 16), wj));
      }
    }
    for (; j < count; ++j) {
      const float* v = rows[j] + x;
      const __m512 wj = _mm512_set1_ps(w[j]);
#pragma GCC unroll 4
      for (int64_t k = 0; k < chains; ++k) {
        acc[k] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, v + k * 16), wj, acc[k]);
      }
    }
#pragma GCC unroll 4
    for (int64_t k = 0; k < chains; ++k) _mm512_mask_storeu_ps(dst + x + k * 16, tail, acc[k]);
  }

  [[gnu::target(DOCFEED_AVX512_TARGET)]] void operator()(float* dst, const float* const* rows,
                                                         const float* w, int64_t count,
                                                         int64_t width) const {
    int64_t x = 0;
    for (; x + 64 <= width; x += 64) Block<4>(dst, rows, w, count, x);
    for (; x + 16 <= width; x += 16) Block<1>(dst, rows, w, count, x);
    if (x < width) {
      Block<1>(dst, rows, w, count, x, static_cast<__mmask16>((1u << (width - x)) - 1));
    }
  }
};

// The vertical pass's sink for HWC rows: row y % ph of the patches in patch row y / ph takes
// 3 * pw contiguous values of the resized row (RGB: copied as they are; gray: each of pw values
// thrice, InterleaveAvx2 of the one row).
class HwcPatchSink {
 public:
  HwcPatchSink(const Pix2StructGrid& grid, int64_t ph, int64_t pw, int channels, float* out)
      : grid_(grid), ph_(ph), pw_(pw), channels_(channels), out_(out) {
    thread_local std::vector<float> row;  // kept, as the other scratch
    row.resize(static_cast<size_t>(channels * grid.cols * pw));
    row_ = row.data();
  }

  float* Row(int64_t /*y*/, int64_t /*c*/) { return row_; }

  [[gnu::target(DOCFEED_AVX512_TARGET)]] void Done(int64_t y) {
    const int64_t n = 3 * pw_;
    for (int64_t col = 0; col < grid_.cols; ++col) {
      float* dst = PatchRun(out_, grid_, ph_, pw_, y, col);
      if (channels_ == 1) {
        const float* src = row_ + col * pw_;
        InterleaveAvx2()(src, src, src, pw_, dst);
        continue;
      }
      const float* src = row_ + col * n;
      int64_t i = 0;
      for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, _mm512_loadu_ps(src + i));
      if (i < n) {
        const auto m = static_cast<__mmask16>((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(dst + i, m, _mm512_maskz_loadu_ps(m, src + i));
      }
    }
  }

  float* End() const { return PatchesEnd(out_, grid_, ph_, pw_); }

 private:
  Pix2StructGrid grid_;
  int64_t ph_, pw_;
  int channels_;
  float* out_;
  float* row_;
};

// ResizeBody's result for a page whose width and height both change and that `columns` covers
// (planned for its width): eight rows standardized, their horizontal pass into a ring of HWC
// rows, then the output rows they complete (VerticalPass, one "channel" of k * out_w values).
[[gnu::target(DOCFEED_AVX512_TARGET)]] float* ResizeHwcAvx512(const uint8_t* pixels, int64_t in_h,
                                                              int64_t in_w,
                                                              const Standardization& st, bool gray,
                                                              const HwcColumnsAvx512& columns,
                                                              const Pix2StructGrid& grid,
                                                              int64_t ph, int64_t pw, float* out) {
  const int channels = gray ? 1 : 3;
  const int64_t out_h = grid.rows * ph, values = channels * grid.cols * pw;
  const int64_t in_values = channels * in_w;
  HwcPatchSink sink(grid, ph, pw, channels, out);
  VerticalPass<VerticalRowAvx512, HwcPatchSink> vertical(in_h, out_h, 1, values, sink);
  const int64_t ring = std::min(vertical.RingRows(), in_h);
  // Kept per thread, as the other scratch; each source row with the window's slack after it.
  thread_local std::vector<float> ring_rows, source;
  ring_rows.resize(static_cast<size_t>(ring * values));
  const int64_t stride = in_values + HwcColumnsAvx512::kWindow;
  source.resize(static_cast<size_t>(kLanes * stride));
  const float* src[kLanes];
  float* dst[kLanes];
  for (int64_t y0 = 0; y0 < in_h; y0 += kLanes) {
    const int64_t rows = std::min(kLanes, in_h - y0);
    for (int64_t r = 0; r < rows; ++r) {
      float* row = source.data() + r * stride;
      StandardizeRowAvx512(pixels + (y0 + r) * in_values, in_values, st, row);
      src[r] = row;
      dst[r] = ring_rows.data() + (y0 + r) % ring * values;
    }
    columns(src, rows, dst);
    vertical.Rows(ring_rows.data(), ring, y0 + rows);
  }
  return sink.End();
}
#pragma GCC diagnostic pop
#undef DOCFEED_AVX512_TARGET

// Whether the HWC path covers the page (planning `columns` for it): both sides change (ATen
// skips an axis that does not, and a skipped axis is not a pass of weight 1) and Plan accepts
// the width's columns.
bool PlanHwc(int64_t in_h, int64_t in_w, bool gray, const Pix2StructGrid& grid, int64_t ph,
             int64_t pw, HwcColumnsAvx512& columns) {
  const int64_t out_h = grid.rows * ph, out_w = grid.cols * pw;
  return out_h != in_h && out_w != in_w &&
         columns.Plan(AntialiasWeights(in_w, out_w), out_w, gray ? 1 : 3);
}

bool UseAvx2() { return CpuHasAvx2Fma() && CurrentSimdMode() != SimdMode::kScalar; }

bool UseAvx512() { return CpuHasAvx512Vbmi() && CurrentSimdMode() != SimdMode::kScalar; }
#endif

// The resized page's patch rows into `out`; returns the end of the last one.
float* ResizeToPatches(const uint8_t* rgb, int64_t in_h, int64_t in_w, const Standardization& st,
                       bool gray, const Pix2StructGrid& grid, int64_t ph, int64_t pw, float* out) {
#ifdef DOCFEED_PIX2STRUCT_AVX2
  if (UseAvx512()) {
    thread_local HwcColumnsAvx512 columns;  // kept, as the other scratch
    if (PlanHwc(in_h, in_w, gray, grid, ph, pw, columns)) {
      return ResizeHwcAvx512(rgb, in_h, in_w, st, gray, columns, grid, ph, pw, out);
    }
    return ResizeAvx512Fill(rgb, in_h, in_w, st, gray, grid, ph, pw, out);
  }
  if (UseAvx2()) return ResizeAvx2(rgb, in_h, in_w, st, gray, grid, ph, pw, out);
#endif
  return ResizeBody<FillRowsScalar, ColumnsScalar, VerticalRowScalar, InterleaveScalar>(
      rgb, in_h, in_w, st, gray, grid, ph, pw, out);
}

// With `gray`, `pixels` is a contiguous gray page of n / 3 values, standardized as the HWC array
// of its values thrice.
Standardization Standardize(const uint8_t* pixels, int64_t n, bool gray) {
#ifdef DOCFEED_PIX2STRUCT_AVX2
  if (UseAvx512()) {
    return gray ? StandardizeGrayAvx512(pixels, n / 3) : StandardizeAvx512(pixels, n);
  }
  if (UseAvx2()) return gray ? StandardizeGrayAvx2(pixels, n / 3) : StandardizeAvx2(pixels, n);
#endif
  if (gray) return StandardizeTable(GrayLeaves<SquareLeafScalar>{pixels, n / 3}, n);
  return StandardizeTable(RgbLeaves<SquareLeafScalar>{pixels}, n);
}

}  // namespace

bool Pix2StructStatisticsForTesting(const uint8_t* pixels, int64_t n, bool gray, int path,
                                    float* mean, float* std_dev, float* table) {
  Standardization s;
  if (path == 0) {
    s = gray ? StandardizeTable(GrayLeaves<SquareLeafScalar>{pixels, n / 3}, n)
             : StandardizeTable(RgbLeaves<SquareLeafScalar>{pixels}, n);
#ifdef DOCFEED_PIX2STRUCT_AVX2
  } else if (path == 1 && CpuHasAvx2Fma()) {
    s = gray ? StandardizeGrayAvx2(pixels, n / 3) : StandardizeAvx2(pixels, n);
  } else if (path == 2 && CpuHasAvx512Vbmi()) {
    s = gray ? StandardizeGrayAvx512(pixels, n / 3) : StandardizeAvx512(pixels, n);
#endif
  } else {
    return false;
  }
  *mean = s.mean;
  *std_dev = s.std;
  std::memcpy(table, s.table.data(), sizeof(s.table));
  return true;
}

bool Pix2StructHwcPathForTesting(int64_t height, int64_t width, bool gray,
                                 const Pix2StructConfig& config) {
#ifdef DOCFEED_PIX2STRUCT_AVX2
  Result<Pix2StructGrid> grid = ComputePix2StructGrid(height, width, config);
  HwcColumnsAvx512 columns;
  return grid.ok() &&
         PlanHwc(height, width, gray, *grid, config.patch_height, config.patch_width, columns);
#else
  return false;
#endif
}

Status ValidatePix2StructConfig(const Pix2StructConfig& config) {
  if (config.max_patches < 1 || config.max_patches > kMaxPatches) {
    return InvalidArgumentError("pix2struct: max_patches must be in 1.." +
                                std::to_string(kMaxPatches) + ", got " +
                                std::to_string(config.max_patches));
  }
  if (config.patch_height < 1 || config.patch_height > kMaxPatchSide || config.patch_width < 1 ||
      config.patch_width > kMaxPatchSide) {
    return InvalidArgumentError("pix2struct: patch_size height and width must be in 1.." +
                                std::to_string(kMaxPatchSide) + ", got " +
                                std::to_string(config.patch_height) + " x " +
                                std::to_string(config.patch_width));
  }
  if (config.hf_version != 4 && config.hf_version != 5) {
    return InvalidArgumentError("pix2struct: hf_version must be 4 or 5, got " +
                                std::to_string(config.hf_version));
  }
  return Status::Ok();
}

int64_t Pix2StructRowValues(const Pix2StructConfig& config) {
  return 2 + 3 * int64_t{config.patch_height} * config.patch_width;
}

Result<Pix2StructGrid> ComputePix2StructGrid(int64_t height, int64_t width,
                                             const Pix2StructConfig& config) {
  if (height < 1 || width < 1 || height > (int64_t{1} << 30) || width > (int64_t{1} << 30)) {
    return InvalidArgumentError("pix2struct: page size " + Dims(height, width) +
                                " is empty or too large");
  }
  const double ph = config.patch_height;
  const double pw = config.patch_width;
  const double max_patches = config.max_patches;
  // max_patches * (ph / height) * (pw / width), left to right; 4.x takes math.sqrt, 5.x ** 0.5.
  const double area =
      max_patches * (ph / static_cast<double>(height)) * (pw / static_cast<double>(width));
  const double scale = config.hf_version == 4 ? std::sqrt(area) : std::pow(area, 0.5);
  const auto feasible = [&](double side, double patch) {
    const double n = std::floor(scale * side / patch);
    return static_cast<int32_t>(std::max(std::min(n, max_patches), 1.0));
  };
  Pix2StructGrid grid{feasible(static_cast<double>(height), ph),
                      feasible(static_cast<double>(width), pw)};
  if (int64_t{grid.rows} * grid.cols > config.max_patches) {  // floors make this impossible
    return InvalidArgumentError("pix2struct: page " + Dims(height, width) + " gives " +
                                std::to_string(grid.rows) + " x " + std::to_string(grid.cols) +
                                " patches, more than max_patches");
  }
  return grid;
}

Status Pix2StructPatches(const ImageView& page, const Pix2StructConfig& config, float* out) {
  if (page.data == nullptr || (page.channels != 1 && page.channels != 3) ||
      page.stride_bytes < static_cast<ptrdiff_t>(page.width) * page.channels) {
    return InvalidArgumentError("pix2struct: the page must have 1 or 3 channels");
  }
  DOCFEED_ASSIGN_OR_RETURN(const Pix2StructGrid grid,
                           ComputePix2StructGrid(page.height, page.width, config));
  const int64_t in_h = page.height, in_w = page.width;
  const int64_t ph = config.patch_height, pw = config.patch_width;

  // An RGB page as the processor's contiguous HWC array; a gray page as contiguous gray bytes,
  // which stand for that array (each value thrice) without being expanded into it.
  const bool gray = page.channels == 1;
  std::vector<uint8_t> storage;  // only for a page with padded rows: not kept
  const uint8_t* pixels = Contiguous(page, storage);
  const Standardization standardized = Standardize(pixels, 3 * in_h * in_w, gray);

  // The patches' rows, then zero rows.
  float* o = ResizeToPatches(pixels, in_h, in_w, standardized, gray, grid, ph, pw, out);
  const int64_t row_values = Pix2StructRowValues(config);
  const int64_t used = int64_t{grid.rows} * grid.cols;
  std::fill(o, o + (config.max_patches - used) * row_values, 0.0f);
  return Status::Ok();
}

}  // namespace docfeed::internal
