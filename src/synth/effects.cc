#include "synth/effects.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "synth/rng.h"

namespace docfeed::internal {
namespace {

// The byte loops below run in fixed blocks of kBlock with restrict pointers: gcc -O2's
// "very cheap" vectorizer only vectorizes loops whose trip count is a known multiple of the
// vector width and that need no alias checks.
constexpr size_t kBlock = 32;

// dst[i] = (a[i] + 2 b[i] + c[i] + 2) / 4 for i < n.
void Smooth3(const uint8_t* __restrict a, const uint8_t* __restrict b, const uint8_t* __restrict c,
             uint8_t* __restrict dst, size_t n) {
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t k = 0; k < kBlock; ++k) {
      dst[i + k] = static_cast<uint8_t>((a[i + k] + 2 * b[i + k] + c[i + k] + 2) >> 2);
    }
  }
  for (; i < n; ++i) dst[i] = static_cast<uint8_t>((a[i] + 2 * b[i] + c[i] + 2) >> 2);
}

// p[i] = clamp(p[i] * f[i] / 256 + n[i]) for i < count.
void Modulate(uint8_t* __restrict p, const uint16_t* __restrict f, const int16_t* __restrict n,
              size_t count) {
  auto one = [](uint8_t v, uint16_t fv, int16_t nv) {
    const int x = ((v * fv) >> 8) + nv;
    return static_cast<uint8_t>(x < 0 ? 0 : x > 255 ? 255 : x);
  };
  size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    for (size_t k = 0; k < kBlock; ++k) p[i + k] = one(p[i + k], f[i + k], n[i + k]);
  }
  for (; i < count; ++i) p[i] = one(p[i], f[i], n[i]);
}

// One pass of the [1 2 1] / 4 kernel along rows, then along columns (edges replicate). Flat
// loops over bytes so the compiler vectorizes them.
void Blur121(Image& image) {
  const int h = image.height, c = image.channels;
  const size_t stride = image.stride_bytes();
  const size_t cs = static_cast<size_t>(c);
  std::vector<uint8_t> row(stride);
  for (int y = 0; y < h; ++y) {
    uint8_t* p = image.pixels.data() + static_cast<size_t>(y) * stride;
    std::memcpy(row.data(), p, stride);
    if (stride <= 2 * cs) continue;  // one- or two-pixel rows stay as they are
    const uint8_t* r = row.data();
    Smooth3(r, r + cs, r + 2 * cs, p + cs, stride - 2 * cs);
    for (size_t k = 0; k < cs; ++k) {
      p[k] = static_cast<uint8_t>((3 * r[k] + r[k + cs] + 2) >> 2);
      const size_t e = stride - cs + k;
      p[e] = static_cast<uint8_t>((3 * r[e] + r[e - cs] + 2) >> 2);
    }
  }
  std::vector<uint8_t> prev(image.pixels.begin(),
                            image.pixels.begin() + static_cast<ptrdiff_t>(stride));
  std::vector<uint8_t> cur(stride);
  for (int y = 0; y < h; ++y) {
    uint8_t* p = image.pixels.data() + static_cast<size_t>(y) * stride;
    std::memcpy(cur.data(), p, stride);
    const uint8_t* next = y + 1 < h ? p + stride : cur.data();
    Smooth3(prev.data(), cur.data(), next, p, stride);
    std::swap(prev, cur);
  }
}

// Bilinear value noise: a grid of random brightness factors in [1 - a, 1 + a], in 8.8 fixed
// point.
class Texture {
 public:
  Texture(int width, int height, int cell, double amplitude, Rng& rng)
      : width_(width), cell_(cell), gw_(width / cell + 2), gh_(height / cell + 2) {
    grid_.resize(static_cast<size_t>(gw_) * static_cast<size_t>(gh_));
    for (float& g : grid_) g = static_cast<float>(256.0 * (1.0 + amplitude * (2 * rng.Unit() - 1)));
  }
  // The factors of row y, one per pixel, each repeated `channels` times.
  void Row(int y, int channels, std::vector<uint16_t>& out) const {
    const int gy = y / cell_;
    const float fy = static_cast<float>(y % cell_) / static_cast<float>(cell_);
    size_t i = 0;
    for (int gx = 0; gx * cell_ < width_; ++gx) {
      const float a = At(gx, gy) + (At(gx, gy + 1) - At(gx, gy)) * fy;
      const float b = At(gx + 1, gy) + (At(gx + 1, gy + 1) - At(gx + 1, gy)) * fy;
      const float step = (b - a) / static_cast<float>(cell_);
      const int n = std::min(cell_, width_ - gx * cell_);
      for (int k = 0; k < n; ++k) {
        const auto f = static_cast<uint16_t>(a + step * static_cast<float>(k) + 0.5f);
        for (int ch = 0; ch < channels; ++ch) out[i++] = f;
      }
    }
  }

 private:
  float At(int gx, int gy) const { return grid_[static_cast<size_t>(gy * gw_ + gx)]; }
  int width_, cell_, gw_, gh_;
  std::vector<float> grid_;
};

// Noise values for kNoisePixels pixels (each repeated per channel). Rows read it at random
// offsets: as random-looking as fresh noise for a scan, at the cost of a copy.
constexpr size_t kNoisePixels = size_t{1} << 16;

std::vector<int16_t> NoiseTable(int amplitude, int channels, Rng& rng) {
  // Triangular in [-a, a]: the sum of two uniform bytes.
  int16_t lut[511];
  for (int s = 0; s < 511; ++s) lut[s] = static_cast<int16_t>(((s - 255) * amplitude) / 255);
  std::vector<int16_t> table(kNoisePixels * static_cast<size_t>(channels));
  size_t i = 0;
  for (size_t x = 0; x < kNoisePixels; x += 4) {
    const uint64_t bits = rng.Next();
    for (int k = 0; k < 4; ++k) {
      const auto b0 = static_cast<int>((bits >> (16 * k)) & 0xFF);
      const auto b1 = static_cast<int>((bits >> (16 * k + 8)) & 0xFF);
      for (int ch = 0; ch < channels; ++ch) table[i++] = lut[b0 + b1];
    }
  }
  return table;
}

void TextureAndNoise(Image& image, const ScanEffects& e, Rng& rng) {
  const int c = image.channels;
  const size_t stride = image.stride_bytes();
  Texture texture(image.width, image.height, std::max(e.texture_cell_px, 4), e.texture_amplitude,
                  rng);
  const std::vector<int16_t> noise = NoiseTable(e.noise_amplitude, c, rng);
  const auto max_offset = static_cast<int64_t>(kNoisePixels) - image.width;
  std::vector<uint16_t> factor(stride);
  for (int y = 0; y < image.height; ++y) {
    // The texture varies over tens of pixels: recomputing it every 4th row is invisible.
    if (y % 4 == 0) texture.Row(y, c, factor);
    const auto offset = static_cast<size_t>(max_offset > 0 ? rng.Int(0, max_offset) : 0);
    uint8_t* p = image.pixels.data() + static_cast<size_t>(y) * stride;
    if (static_cast<size_t>(image.width) <= kNoisePixels) {
      Modulate(p, factor.data(), noise.data() + offset * static_cast<size_t>(c), stride);
    }
  }
}

Image ToGray(const Image& rgb) {
  Image gray;
  gray.width = rgb.width;
  gray.height = rgb.height;
  gray.channels = 1;
  const size_t n = static_cast<size_t>(rgb.width) * static_cast<size_t>(rgb.height);
  gray.pixels.resize(n);
  for (size_t i = 0; i < n; ++i) {
    // ITU-R BT.601 luma in fixed point (the weights Pillow's convert("L") uses).
    const uint32_t v = 19595u * rgb.pixels[3 * i] + 38470u * rgb.pixels[3 * i + 1] +
                       7471u * rgb.pixels[3 * i + 2] + 0x8000u;
    gray.pixels[i] = static_cast<uint8_t>(v >> 16);
  }
  return gray;
}

}  // namespace

Image ApplyScanEffects(Image image, const ScanEffects& effects, uint64_t noise_seed) {
  DOCFEED_CHECK(image.channels == 3);
  DOCFEED_CHECK(image.pixels.size() == image.stride_bytes() * static_cast<size_t>(image.height));
  Rng rng(noise_seed);
  // Gray first: the noise is luminance-only, so this equals converting at the end, for a third
  // of the work.
  if (effects.grayscale) image = ToGray(image);
  for (int i = 0; i < effects.blur_passes; ++i) Blur121(image);
  if (effects.noise_amplitude > 0 || effects.texture_amplitude > 0) {
    TextureAndNoise(image, effects, rng);
  }
  return image;
}

}  // namespace docfeed::internal
