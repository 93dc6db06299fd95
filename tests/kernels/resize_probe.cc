// resize_probe: runs docfeed's Resize()/Reduce() on a raw image file, for the pytest parity
// check against Pillow (test_resize_vs_pillow.py) and the Pillow timing comparison
// (bench/kernels/resize_vs_pillow.py).
//
// File format (input and output): int32 little-endian width, height, channels, then
// height * width * channels bytes, rows packed.
//
// Usage:
//   resize_probe IN OUT resize W H FILTER [--box X0 Y0 X1 Y1] [--gap G] [--repeat N]
//   resize_probe IN OUT reduce FX FY [--box X0 Y0 X1 Y1] [--repeat N]
// FILTER: nearest|box|bilinear|hamming|bicubic|lanczos. With --repeat N the operation runs N
// times and one JSON line {"min_ms": .., "median_ms": ..} is printed. DOCFEED_SIMD=scalar
// selects the scalar kernels. Exit status 0 on success, 2 on a docfeed error, 1 on misuse.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/resize.h"

namespace {

using docfeed::Status;
using docfeed::internal::Box;
using docfeed::internal::ImageView;
using docfeed::internal::MutableImageView;
using docfeed::internal::ResampleFilter;

struct Image {
  int32_t width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;
};

bool ReadImage(const char* path, Image* image) {
  std::ifstream in(path, std::ios::binary);
  int32_t header[3];
  if (!in.read(reinterpret_cast<char*>(header), sizeof(header))) return false;
  image->width = header[0];
  image->height = header[1];
  image->channels = header[2];
  image->pixels.resize(static_cast<size_t>(header[0]) * header[1] * header[2]);
  return static_cast<bool>(in.read(reinterpret_cast<char*>(image->pixels.data()),
                                   static_cast<std::streamsize>(image->pixels.size())));
}

bool WriteImage(const char* path, const Image& image) {
  std::ofstream out(path, std::ios::binary);
  const int32_t header[3] = {image.width, image.height, image.channels};
  out.write(reinterpret_cast<const char*>(header), sizeof(header));
  out.write(reinterpret_cast<const char*>(image.pixels.data()),
            static_cast<std::streamsize>(image.pixels.size()));
  return static_cast<bool>(out);
}

bool ParseFilter(const std::string& name, ResampleFilter* filter) {
  static const struct {
    const char* name;
    ResampleFilter filter;
  } kFilters[] = {{"nearest", ResampleFilter::kNearest},   {"box", ResampleFilter::kBox},
                  {"bilinear", ResampleFilter::kBilinear}, {"hamming", ResampleFilter::kHamming},
                  {"bicubic", ResampleFilter::kBicubic},   {"lanczos", ResampleFilter::kLanczos}};
  for (const auto& f : kFilters) {
    if (name == f.name) {
      *filter = f.filter;
      return true;
    }
  }
  return false;
}

struct Options {
  bool has_box = false;
  Box box;
  double gap = 0;
  int repeat = 0;
};

bool ParseOptions(int argc, char** argv, int first, Options* options) {
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--box" && i + 4 < argc) {
      options->has_box = true;
      options->box = Box{std::strtod(argv[i + 1], nullptr), std::strtod(argv[i + 2], nullptr),
                         std::strtod(argv[i + 3], nullptr), std::strtod(argv[i + 4], nullptr)};
      i += 4;
    } else if (arg == "--gap" && i + 1 < argc) {
      options->gap = std::strtod(argv[++i], nullptr);
    } else if (arg == "--repeat" && i + 1 < argc) {
      options->repeat = std::atoi(argv[++i]);
    } else {
      return false;
    }
  }
  return true;
}

int Usage() {
  std::fprintf(stderr,
               "usage: resize_probe IN OUT resize W H FILTER [--box X0 Y0 X1 Y1] [--gap G] "
               "[--repeat N]\n       resize_probe IN OUT reduce FX FY [--box X0 Y0 X1 Y1] "
               "[--repeat N]\n");
  return 1;
}

template <typename Fn>
Status RunTimed(int repeat, Fn fn) {
  if (repeat <= 0) return fn();
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    DOCFEED_RETURN_IF_ERROR(fn());
    const auto end = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("{\"min_ms\": %.4f, \"median_ms\": %.4f}\n", ms.front(), ms[ms.size() / 2]);
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) return Usage();
  Image in;
  if (!ReadImage(argv[1], &in)) {
    std::fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  const std::string op = argv[3];
  const ImageView src{in.pixels.data(), in.width, in.height, in.channels,
                      static_cast<ptrdiff_t>(in.width) * in.channels};
  Options options;
  Image out;
  out.channels = in.channels;
  Status status;
  if (op == "resize" && argc >= 7) {
    ResampleFilter filter;
    if (!ParseFilter(argv[6], &filter) || !ParseOptions(argc, argv, 7, &options)) return Usage();
    out.width = std::atoi(argv[4]);
    out.height = std::atoi(argv[5]);
    out.pixels.resize(static_cast<size_t>(std::max(out.width, 1)) * std::max(out.height, 1) *
                      out.channels);
    const MutableImageView dst{out.pixels.data(), out.width, out.height, out.channels,
                               static_cast<ptrdiff_t>(out.width) * out.channels};
    status = RunTimed(options.repeat, [&] {
      return docfeed::internal::Resize(src, dst, filter, options.has_box ? &options.box : nullptr,
                                       options.gap);
    });
  } else if (op == "reduce") {
    if (!ParseOptions(argc, argv, 6, &options)) return Usage();
    const int32_t fx = std::atoi(argv[4]);
    const int32_t fy = std::atoi(argv[5]);
    const Box b = options.has_box ? options.box : Box{0, 0, double(in.width), double(in.height)};
    out.width = fx > 0 ? (static_cast<int32_t>(b.x1 - b.x0) + fx - 1) / fx : 0;
    out.height = fy > 0 ? (static_cast<int32_t>(b.y1 - b.y0) + fy - 1) / fy : 0;
    out.pixels.resize(static_cast<size_t>(std::max(out.width, 1)) * std::max(out.height, 1) *
                      out.channels);
    const MutableImageView dst{out.pixels.data(), out.width, out.height, out.channels,
                               static_cast<ptrdiff_t>(out.width) * out.channels};
    status = RunTimed(options.repeat, [&] {
      return docfeed::internal::Reduce(src, fx, fy, options.has_box ? &options.box : nullptr, dst);
    });
  } else {
    return Usage();
  }
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 2;
  }
  if (!WriteImage(argv[2], out)) {
    std::fprintf(stderr, "cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}
