// Table-driven rescale/normalize for the Donut preset (normalize.h).
#include "imaging/normalize.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include "imaging/normalize_chw.h"
#include "kernels/simd_mode.h"

namespace docfeed::internal {
namespace {

// Rounds `value` right-shifted by `shift` (1..31) to nearest, ties to even.
uint32_t ShiftRoundEven(uint32_t value, int shift) {
  const uint32_t q = value >> shift;
  const uint32_t rem = value & ((uint32_t{1} << shift) - 1);
  const uint32_t half = uint32_t{1} << (shift - 1);
  return (rem > half || (rem == half && (q & 1) != 0)) ? q + 1 : q;
}

// The torchvision backend's entry (transformers 5 TorchvisionBackend.rescale_and_normalize):
// with both steps the rescale is folded into float32 tensors mean / rescale_factor and
// std / rescale_factor (torch.tensor(mean) * (1.0 / rescale_factor): a float32 product with the
// Python float rounded to float32), then tvF.normalize computes (float32(v) - mean') / std' in
// float32. Rescale alone is float32(v) * float32(rescale_factor).
float TorchTableValue(int v, int channel, const DonutConfig& config) {
  const auto x = static_cast<float>(v);
  if (config.do_normalize) {
    auto mean = static_cast<float>(config.mean[channel]);
    auto std = static_cast<float>(config.std[channel]);
    if (config.do_rescale) {
      const auto inverse = static_cast<float>(1.0 / config.rescale_factor);
      mean = mean * inverse;
      std = std * inverse;
    }
    const float centered = x - mean;
    return centered / std;
  }
  if (config.do_rescale) return x * static_cast<float>(config.rescale_factor);
  return x;
}

// The table entry exactly as numpy computes it (see normalize.h). Every operation is one IEEE
// rounding in the named type: float32 arithmetic on x86-64 (SSE) has no excess precision.
float TableValue(int v, int channel, const DonutConfig& config) {
  if (config.backend == DonutBackend::kTorchvision) return TorchTableValue(v, channel, config);
  float x = static_cast<float>(v);
  if (config.do_rescale) {
    x = static_cast<float>(static_cast<double>(v) * config.rescale_factor);
  }
  if (config.do_normalize) {
    const auto mean = static_cast<float>(config.mean[channel]);
    const auto std = static_cast<float>(config.std[channel]);
    const float centered = x - mean;
    x = centered / std;
  }
  return x;
}

template <typename T>
struct ChannelTables {
  const T* c[3];
};

const std::array<uint8_t, 256>& IdentityTable() {
  static const std::array<uint8_t, 256> table = [] {
    std::array<uint8_t, 256> t{};
    for (int i = 0; i < 256; ++i) t[i] = static_cast<uint8_t>(i);
    return t;
  }();
  return table;
}

// CHW: one plane per channel; each reads its channel (or the single gray channel).
template <typename T, int kSrcChannels>
void WriteChw(const ImageView& image, ChannelTables<T> tables, T* out) {
  const size_t plane = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
  for (int c = 0; c < 3; ++c) {
    const T* table = tables.c[c];
    const int src_c = kSrcChannels == 3 ? c : 0;
    T* dst = out + plane * static_cast<size_t>(c);
    for (int32_t y = 0; y < image.height; ++y) {
      const uint8_t* src = image.data + y * image.stride_bytes + src_c;
      for (int32_t x = 0; x < image.width; ++x) dst[x] = table[src[x * kSrcChannels]];
      dst += image.width;
    }
  }
}

template <typename T, int kSrcChannels>
void WriteHwc(const ImageView& image, ChannelTables<T> tables, T* out) {
  for (int32_t y = 0; y < image.height; ++y) {
    const uint8_t* src = image.data + y * image.stride_bytes;
    for (int32_t x = 0; x < image.width; ++x, out += 3) {
      const uint8_t* px = src + x * kSrcChannels;
      out[0] = tables.c[0][px[0]];
      out[1] = tables.c[1][px[kSrcChannels == 3 ? 1 : 0]];
      out[2] = tables.c[2][px[kSrcChannels == 3 ? 2 : 0]];
    }
  }
}

template <typename T>
void Write(const ImageView& image, ChannelTables<T> tables, OutputLayout layout, void* out) {
  T* dst = static_cast<T*>(out);
  const bool gray = image.channels == 1;
  if (layout == OutputLayout::kChw) {
    gray ? WriteChw<T, 1>(image, tables, dst) : WriteChw<T, 3>(image, tables, dst);
  } else {
    gray ? WriteHwc<T, 1>(image, tables, dst) : WriteHwc<T, 3>(image, tables, dst);
  }
}

template <typename T, size_t N>
ChannelTables<T> TablesOf(const std::array<std::array<T, N>, 3>& t) {
  return ChannelTables<T>{{t[0].data(), t[1].data(), t[2].data()}};
}

// NormalizePadded's loops: a canvas of height x width, `image` at (top, left).
struct Canvas {
  int32_t height, width, top, left;
};

template <typename T, int kSrcChannels>
void WritePaddedChw(const ImageView& image, const Canvas& k, ChannelTables<T> tables, T* out) {
  const size_t plane = static_cast<size_t>(k.width) * static_cast<size_t>(k.height);
  const auto w = static_cast<size_t>(k.width);
  for (int c = 0; c < 3; ++c) {
    const T* table = tables.c[c];
    const T pad = table[0];
    const int src_c = kSrcChannels == 3 ? c : 0;
    T* dst = out + plane * static_cast<size_t>(c);
    for (int32_t y = 0; y < k.height; ++y, dst += w) {
      const int32_t sy = y - k.top;
      if (sy < 0 || sy >= image.height) {
        std::fill_n(dst, w, pad);
        continue;
      }
      std::fill_n(dst, k.left, pad);
      const uint8_t* src = image.data + sy * image.stride_bytes + src_c;
      T* body = dst + k.left;
      for (int32_t x = 0; x < image.width; ++x) body[x] = table[src[x * kSrcChannels]];
      std::fill(body + image.width, dst + w, pad);
    }
  }
}

template <typename T, int kSrcChannels>
void WritePaddedHwc(const ImageView& image, const Canvas& k, ChannelTables<T> tables, T* out) {
  const T pad[3] = {tables.c[0][0], tables.c[1][0], tables.c[2][0]};
  auto fill = [&pad](T* dst, int32_t pixels) {
    for (int32_t x = 0; x < pixels; ++x, dst += 3)
      dst[0] = pad[0], dst[1] = pad[1], dst[2] = pad[2];
  };
  for (int32_t y = 0; y < k.height; ++y) {
    T* dst = out + static_cast<size_t>(y) * static_cast<size_t>(k.width) * 3;
    const int32_t sy = y - k.top;
    if (sy < 0 || sy >= image.height) {
      fill(dst, k.width);
      continue;
    }
    fill(dst, k.left);
    const uint8_t* src = image.data + sy * image.stride_bytes;
    T* body = dst + static_cast<size_t>(k.left) * 3;
    for (int32_t x = 0; x < image.width; ++x, body += 3) {
      const uint8_t* px = src + x * kSrcChannels;
      body[0] = tables.c[0][px[0]];
      body[1] = tables.c[1][px[kSrcChannels == 3 ? 1 : 0]];
      body[2] = tables.c[2][px[kSrcChannels == 3 ? 2 : 0]];
    }
    fill(body, k.width - k.left - image.width);
  }
}

template <typename T>
void WritePadded(const ImageView& image, const Canvas& k, ChannelTables<T> tables,
                 OutputLayout layout, void* out) {
  T* dst = static_cast<T*>(out);
  const bool gray = image.channels == 1;
  if (layout == OutputLayout::kChw) {
    gray ? WritePaddedChw<T, 1>(image, k, tables, dst)
         : WritePaddedChw<T, 3>(image, k, tables, dst);
  } else {
    gray ? WritePaddedHwc<T, 1>(image, k, tables, dst)
         : WritePaddedHwc<T, 3>(image, k, tables, dst);
  }
}

// CHW float32: bands of 16 canvas rows are padded in a small RGB buffer (zeros stay in place;
// only the image bytes are copied per row, gray replicated) and written by the SIMD table writer as
// whole rows. Writing the pad separately with ordinary stores next to the writer's streaming
// stores into the same cache lines measured slower than the unfused pad + normalize.
void WritePaddedChwFloat32Simd(const ImageView& image, const Canvas& k, const NormalizeTable& t,
                               float* out) {
  constexpr int32_t kBand = 16;
  const auto row_bytes = static_cast<size_t>(k.width) * 3;
  std::vector<uint8_t> band(row_bytes * kBand, 0);
  const size_t plane = static_cast<size_t>(k.width) * static_cast<size_t>(k.height);
  const float* const tables[3] = {t.f32[0].data(), t.f32[1].data(), t.f32[2].data()};
  const auto body = static_cast<size_t>(k.left) * 3;
  for (int32_t y0 = 0; y0 < k.height; y0 += kBand) {
    const int32_t rows = std::min(kBand, k.height - y0);
    for (int32_t r = 0; r < rows; ++r) {
      uint8_t* dst = band.data() + static_cast<size_t>(r) * row_bytes + body;
      const int32_t sy = y0 + r - k.top;
      if (sy >= 0 && sy < image.height && image.channels == 3) {
        std::memcpy(dst, image.data + sy * image.stride_bytes,
                    static_cast<size_t>(image.width) * 3);
      } else if (sy >= 0 && sy < image.height) {  // Gray, replicated to RGB.
        const uint8_t* src = image.data + sy * image.stride_bytes;
        for (int32_t x = 0; x < image.width; ++x)
          dst[3 * x] = dst[3 * x + 1] = dst[3 * x + 2] = src[x];
      } else {
        std::memset(dst, 0, static_cast<size_t>(image.width) * 3);
      }
    }
    const ImageView view{band.data(), k.width, rows, 3, static_cast<ptrdiff_t>(row_bytes)};
    NormalizeChwFloat32Strided(view, tables, out + static_cast<size_t>(y0) * k.width, plane,
                               static_cast<size_t>(k.width));
  }
}

}  // namespace

Status NormalizePadded(const ImageView& resized, PadOffsets offsets, int32_t height, int32_t width,
                       const NormalizeTable& table, OutputLayout layout, DType dtype, void* out) {
  if (resized.data == nullptr || out == nullptr || resized.width < 1 || resized.height < 1 ||
      (resized.channels != 1 && resized.channels != 3) ||
      resized.stride_bytes < static_cast<ptrdiff_t>(resized.width) * resized.channels ||
      height < 1 || width < 1) {
    return InvalidArgumentError(
        "normalize padded: needs a non-empty 1- or 3-channel image (got " +
        std::to_string(resized.width) + "x" + std::to_string(resized.height) + ", " +
        std::to_string(resized.channels) + " channels), a non-empty canvas and an output");
  }
  if (offsets.top < 0 || offsets.left < 0 || int64_t{offsets.top} + resized.height > height ||
      int64_t{offsets.left} + resized.width > width) {
    return InvalidArgumentError("normalize padded: a " + std::to_string(resized.width) + "x" +
                                std::to_string(resized.height) + " image at (left " +
                                std::to_string(offsets.left) + ", top " +
                                std::to_string(offsets.top) + ") does not fit in " +
                                std::to_string(width) + "x" + std::to_string(height));
  }
  const Canvas k{height, width, offsets.top, offsets.left};
  switch (dtype) {
    case DType::kUint8: {
      const uint8_t* id = IdentityTable().data();
      WritePadded<uint8_t>(resized, k, ChannelTables<uint8_t>{{id, id, id}}, layout, out);
      break;
    }
    case DType::kFloat32:
      if (layout == OutputLayout::kChw && CurrentSimdMode() == SimdMode::kAuto) {
        WritePaddedChwFloat32Simd(resized, k, table, static_cast<float*>(out));
        break;
      }
      WritePadded<float>(resized, k, TablesOf(table.f32), layout, out);
      break;
    case DType::kFloat16:
      WritePadded<uint16_t>(resized, k, TablesOf(table.f16), layout, out);
      break;
    case DType::kBfloat16:
      WritePadded<uint16_t>(resized, k, TablesOf(table.bf16), layout, out);
      break;
  }
  return Status::Ok();
}

uint16_t FloatToHalf(float value) {
  const auto bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);   // NaN, quiet.
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520: infinity.
  if (abs >= 0x38800000u) {  // >= 2^-14: normal; rebias the exponent from 127 to 15.
    return static_cast<uint16_t>(sign | ShiftRoundEven(abs - (112u << 23), 13));
  }
  if (abs < 0x33000000u) return sign;  // <= 2^-25 rounds to (signed) zero.
  // Subnormal half: units of 2^-24. abs has a normal float exponent here (>= 2^-25).
  const uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
  const int shift = 126 - static_cast<int>(abs >> 23);
  return static_cast<uint16_t>(sign | ShiftRoundEven(mantissa, shift));
}

uint16_t FloatToBfloat16(float value) {
  const auto bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

Result<NormalizeTable> MakeNormalizeTable(const DonutConfig& config) {
  DOCFEED_RETURN_IF_ERROR(ValidateDonutConfig(config));
  NormalizeTable table{};
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      const float x = TableValue(v, c, config);
      table.f32[c][v] = x;
      table.f16[c][v] = FloatToHalf(x);
      table.bf16[c][v] = FloatToBfloat16(x);
    }
  }
  return table;
}

Status Normalize(const ImageView& image, const NormalizeTable& table, OutputLayout layout,
                 DType dtype, void* out) {
  if (image.data == nullptr || out == nullptr || image.width < 1 || image.height < 1 ||
      (image.channels != 1 && image.channels != 3) ||
      image.stride_bytes < static_cast<ptrdiff_t>(image.width) * image.channels) {
    return InvalidArgumentError("normalize: needs a non-empty 1- or 3-channel image (got " +
                                std::to_string(image.width) + "x" + std::to_string(image.height) +
                                ", " + std::to_string(image.channels) + " channels) and an output");
  }
  switch (dtype) {
    case DType::kUint8: {
      const uint8_t* id = IdentityTable().data();
      Write<uint8_t>(image, ChannelTables<uint8_t>{{id, id, id}}, layout, out);
      break;
    }
    case DType::kFloat32:
      if (layout == OutputLayout::kChw && image.channels == 3 &&
          CurrentSimdMode() == SimdMode::kAuto) {
        const float* const tables[3] = {table.f32[0].data(), table.f32[1].data(),
                                        table.f32[2].data()};
        NormalizeChwFloat32(image, tables, static_cast<float*>(out));
        break;
      }
      Write<float>(image, TablesOf(table.f32), layout, out);
      break;
    case DType::kFloat16:
      Write<uint16_t>(image, TablesOf(table.f16), layout, out);
      break;
    case DType::kBfloat16:
      Write<uint16_t>(image, TablesOf(table.bf16), layout, out);
      break;
  }
  return Status::Ok();
}

}  // namespace docfeed::internal

namespace docfeed {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kUint8:
      return 1;
    case DType::kFloat32:
      return 4;
    case DType::kFloat16:
    case DType::kBfloat16:
      return 2;
  }
  return 0;
}

}  // namespace docfeed
