#include "migrate/recover.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "imaging/donut.h"

namespace docfeed::internal::migrate {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The estimate of v for a value: the table is affine in v up to float rounding (far below half a
// step), so rounding (x * 255 std + 255 mean) lands on v for every grid value. NaN gives 0.
int Estimate(double x, double scale, double offset) {
  const double t = x * scale + offset;
  if (t >= 255.0) return 255;
  if (t > 0.0) return static_cast<int>(t + 0.5);
  return 0;
}

}  // namespace

std::string_view FloatTypeName(FloatType type) {
  switch (type) {
    case FloatType::kFloat16:
      return "float16";
    case FloatType::kFloat32:
      return "float32";
    case FloatType::kFloat64:
      return "float64";
  }
  return "?";
}

size_t FloatTypeBytes(FloatType type) {
  switch (type) {
    case FloatType::kFloat16:
      return 2;
    case FloatType::kFloat32:
      return 4;
    case FloatType::kFloat64:
      return 8;
  }
  return 0;
}

std::vector<NormalizeCandidate> DefaultCandidates() {
  return {{"imagenet_standard", {0.5, 0.5, 0.5}, {0.5, 0.5, 0.5}, DonutBackend::kPil},
          {"imagenet_default", {0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}, DonutBackend::kPil}};
}

std::vector<NormalizeCandidate> WithBothArithmetics(std::vector<NormalizeCandidate> candidates) {
  const size_t n = candidates.size();
  for (size_t i = 0; i < n; ++i) {
    candidates[i].backend = DonutBackend::kPil;
    NormalizeCandidate torch = candidates[i];
    torch.backend = DonutBackend::kTorchvision;
    candidates.push_back(std::move(torch));
  }
  return candidates;
}

std::string CandidateLabel(const NormalizeCandidate& candidate) {
  return candidate.backend == DonutBackend::kTorchvision ? candidate.name + " (torchvision)"
                                                         : candidate.name;
}

void RecoveryStats::Merge(const RecoveryStats& other, int64_t base) {
  values += other.values;
  off_grid += other.off_grid;
  max_deviation = std::max(max_deviation, other.max_deviation);
  if (first_off_grid < 0 && other.first_off_grid >= 0) {
    first_off_grid = base + other.first_off_grid;
    first_off_grid_value = other.first_off_grid_value;
    first_off_grid_nearest = other.first_off_grid_nearest;
  }
}

float HalfToFloat(uint16_t bits) {
  const int sign = (bits >> 15) & 1;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  float value;
  if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    value = mantissa == 0 ? std::numeric_limits<float>::infinity()
                          : std::numeric_limits<float>::quiet_NaN();
  } else {
    value = std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
  }
  return sign ? -value : value;
}

Result<GridInverter> GridInverter::Create(const NormalizeCandidate& candidate) {
  DonutConfig config;
  config.mean = candidate.mean;
  config.std = candidate.std;
  // Only the normalization table is used here; torchvision's arithmetic exists in 5.x only.
  config.backend = candidate.backend;
  config.hf_version = candidate.backend == DonutBackend::kTorchvision ? 5 : 4;
  Result<NormalizeTable> table = MakeNormalizeTable(config);
  if (!table.ok()) return table.status().WithContext("normalization " + candidate.name);
  GridInverter inverter;
  inverter.candidate_ = candidate;
  inverter.table_ = *table;
  inverter.half_inverse_.assign(3 * 65536, int16_t{-1});
  for (int c = 0; c < 3; ++c) {
    inverter.scale_[c] = 255.0 * static_cast<double>(static_cast<float>(candidate.std[c]));
    inverter.offset_[c] = 255.0 * static_cast<double>(static_cast<float>(candidate.mean[c]));
    for (int v = 255; v >= 0; --v) {  // on a float16 collision the smallest v wins
      const uint16_t bits = table->f16[c][v];
      inverter.half_inverse_[static_cast<size_t>(c) * 65536 + bits] = static_cast<int16_t>(v);
      if ((bits & 0x7fff) == 0) {  // +0 and -0 are the same value
        inverter.half_inverse_[static_cast<size_t>(c) * 65536 + (bits ^ 0x8000)] =
            static_cast<int16_t>(v);
      }
    }
  }
  return inverter;
}

double GridInverter::GridValue(int channel, FloatType type, int v) const {
  if (type == FloatType::kFloat16) return HalfToFloat(table_.f16[channel][v]);
  return table_.f32[channel][v];
}

template <typename Load>
RecoveryStats GridInverter::RecoverWith(int channel, const Load& load, FloatType type, size_t count,
                                        uint8_t* out, size_t out_step) const {
  RecoveryStats stats;
  stats.values = count;
  const double scale = scale_[channel];
  const double offset = offset_[channel];
  for (size_t i = 0; i < count; ++i) {
    const double x = load(i);
    int v = Estimate(x, scale, offset);
    if (x != GridValue(channel, type, v)) {
      // Off the grid (or, in theory, an estimate one step away): take the nearest entry.
      double best = kInfinity;
      int best_v = v;
      for (int u = std::max(0, v - 1); u <= std::min(255, v + 1); ++u) {
        const double d = std::fabs(x - GridValue(channel, type, u));
        if (d < best) best = d, best_v = u;
      }
      v = best_v;
      if (best != 0) {
        if (!(best <= std::numeric_limits<double>::max())) best = kInfinity;  // NaN, inf
        ++stats.off_grid;
        stats.max_deviation = std::max(stats.max_deviation, best);
        if (stats.first_off_grid < 0) {
          stats.first_off_grid = static_cast<int64_t>(i);
          stats.first_off_grid_value = x;
          stats.first_off_grid_nearest = v;
        }
      }
    }
    out[i * out_step] = static_cast<uint8_t>(v);
  }
  return stats;
}

// The hot path (a 1553 x 1200 page is 5.6 M values): per block, an estimate pass, then a check
// pass without data-dependent branches; only a block with a mismatch takes the exact slow path,
// which also produces the statistics.
RecoveryStats GridInverter::RecoverFloat32(int channel, const uint8_t* values, size_t count,
                                           uint8_t* out, size_t out_step) const {
  constexpr size_t kBlock = 4096;
  const float* grid = table_.f32[channel].data();
  const auto scale = static_cast<float>(scale_[channel]);
  const auto offset = static_cast<float>(offset_[channel]);
  float x[kBlock];
  int32_t v[kBlock];
  RecoveryStats stats;
  stats.values = count;
  for (size_t base = 0; base < count; base += kBlock) {
    const size_t n = std::min(kBlock, count - base);
    std::memcpy(x, values + 4 * base, 4 * n);
    std::fill(x + n, x + kBlock, 0.0f);
    // Clamped so the conversion is always in range (NaN -> 0); a wrong estimate only sends the
    // block to the slow path. (gcc 12 -O2 keeps these loops scalar: ~1.5 ns a value; a Highway
    // version with a gather would be the next step if this ever limits a multi-core run.)
    for (size_t i = 0; i < kBlock; ++i) {
      float t = x[i] * scale + offset;  // within 0.01 of v for grid values
      t = t > 0.0f ? t : 0.0f;
      t = t < 255.0f ? t : 255.0f;
      v[i] = static_cast<int32_t>(t + 0.5f);
    }
    uint32_t mismatches = 0;
    for (size_t i = 0; i < n; ++i) mismatches |= grid[v[i]] != x[i] ? 1u : 0u;
    if (mismatches != 0) {
      uint8_t fixed[kBlock];
      RecoveryStats block = RecoverWith(
          channel, [&x](size_t i) { return static_cast<double>(x[i]); }, FloatType::kFloat32, n,
          fixed, 1);
      block.values = 0;
      stats.Merge(block, static_cast<int64_t>(base));
      for (size_t i = 0; i < n; ++i) v[i] = fixed[i];
    }
    for (size_t i = 0; i < n; ++i) out[(base + i) * out_step] = static_cast<uint8_t>(v[i]);
  }
  return stats;
}

RecoveryStats GridInverter::Recover(int channel, FloatType type, const uint8_t* values,
                                    size_t count, uint8_t* out, size_t out_step) const {
  switch (type) {
    case FloatType::kFloat16: {
      // Exact lookup by bit pattern; the slow path only for bits that are no table entry.
      const int16_t* inverse = half_inverse_.data() + static_cast<size_t>(channel) * 65536;
      RecoveryStats stats;
      stats.values = count;
      for (size_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, values + 2 * i, 2);
        const int v = inverse[bits];
        if (v >= 0) {
          out[i * out_step] = static_cast<uint8_t>(v);
          continue;
        }
        RecoveryStats one = RecoverWith(
            channel, [&](size_t) { return static_cast<double>(HalfToFloat(bits)); }, type, 1,
            out + i * out_step, out_step);
        one.values = 0;
        stats.Merge(one, static_cast<int64_t>(i));
      }
      return stats;
    }
    case FloatType::kFloat32:
      return RecoverFloat32(channel, values, count, out, out_step);
    case FloatType::kFloat64:
      return RecoverWith(
          channel,
          [values](size_t i) {
            double x;
            std::memcpy(&x, values + 8 * i, 8);
            return x;
          },
          type, count, out, out_step);
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// Padding

namespace {

bool AllZero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

bool PixelIsZero(const uint8_t* p, int channels) {
  return AllZero(p, static_cast<size_t>(channels));
}

// Pads of one axis for content [first, first + size) in `extent`: the smallest centred k.
void CentreAxis(int32_t first, int32_t size, int32_t extent, int32_t* start, int32_t* length) {
  const int32_t a = first;                  // padding before the content
  const int32_t c = extent - first - size;  // padding after it
  const int32_t k = std::min(2 * a + 1, 2 * c);
  *start = k / 2;
  *length = extent - k;
}

}  // namespace

Box TightContentBox(const uint8_t* pixels, int32_t height, int32_t width, int channels) {
  const size_t row_bytes = static_cast<size_t>(width) * static_cast<size_t>(channels);
  auto row = [&](int32_t y) { return pixels + static_cast<size_t>(y) * row_bytes; };
  int32_t top = 0;
  while (top < height && AllZero(row(top), row_bytes)) ++top;
  if (top == height) return {};
  int32_t bottom = height;  // exclusive
  while (AllZero(row(bottom - 1), row_bytes)) --bottom;
  // Columns: each row only needs scanning up to the bounds found so far.
  int32_t left = width;
  int32_t right = 0;  // exclusive
  for (int32_t y = top; y < bottom; ++y) {
    const uint8_t* r = row(y);
    for (int32_t x = 0; x < left; ++x) {
      if (!PixelIsZero(r + static_cast<size_t>(x) * static_cast<size_t>(channels), channels)) {
        left = x;
        break;
      }
    }
    for (int32_t x = width - 1; x >= right; --x) {
      if (!PixelIsZero(r + static_cast<size_t>(x) * static_cast<size_t>(channels), channels)) {
        right = x + 1;
        break;
      }
    }
  }
  return {top, left, bottom - top, right - left};
}

Box CentredBox(const Box& tight, int32_t height, int32_t width) {
  if (tight.height <= 0 || tight.width <= 0) return {0, 0, height, width};
  Box box;
  CentreAxis(tight.top, tight.height, height, &box.top, &box.height);
  CentreAxis(tight.left, tight.width, width, &box.left, &box.width);
  return box;
}

bool IsCentred(const Box& box, int32_t height, int32_t width) {
  return box.top == (height - box.height) / 2 && box.left == (width - box.width) / 2;
}

}  // namespace docfeed::internal::migrate
