// donut_stages_bench: white-box CPU timings of the Donut steps that `docfeed preprocess` runs
// fused (docs/imaging.md, bench/imaging/donut_bench.py).
//
//   --mode unfused      decode, resize + thumbnail, pad and normalize as separate whole-image
//                       steps (the pipeline before streaming), timed per step; its resized page
//                       is checked against the streamed DecodeAndResizeForDonut (same bytes)
//   --mode decode-only  the decode alone: JPEGs into a buffer reused across runs
//                       (libjpeg-turbo's own time, no allocation), other formats through
//                       DecodeImage, the previous run's image freed (timed) first, as a
//                       Pillow loop frees each image before the next Image.open().load()
//
// usage: donut_stages_bench IMAGE --mode unfused|decode-only [--size HxW] [--fast]
//                           [--pad center|random] [--seed N] [--repeat N]
// Prints to stderr "cpu per image (mean of N): X ms" (the line donut_bench.py reads), then the
// per-step split. Options as `docfeed preprocess`: normalized float32 CHW output, centred pad.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <span>
#include <string>
#include <vector>

#include "base/file.h"
#include "codec/codec.h"
#include "imaging/donut.h"
#include "imaging/jpeg_scaled.h"
#include "imaging/normalize.h"

namespace docfeed::internal {
namespace {

struct Options {
  std::string input;
  std::string mode;
  DonutConfig config;
  DonutDecodeMode decode = DonutDecodeMode::kExact;
  bool random_pad = false;
  uint64_t seed = 0;
  int repeat = 5;
};

// CPU seconds of each step, summed over the runs.
struct StepTimes {
  double decode_s = 0, resize_s = 0, pad_s = 0, normalize_s = 0;
  double total() const { return decode_s + resize_s + pad_s + normalize_s; }
};

// Buffers reused across runs, as a loader worker reuses its own.
struct Workspace {
  ScaledSource decoded;
  Image padded;
  std::vector<uint8_t> normalized;
};

// The thread's CPU clock: on a shared machine it leaves out the time other processes hold the
// core.
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

Status ParseArgs(int argc, char** argv, Options& o) {
  if (argc < 2) return InvalidArgumentError("expected IMAGE");
  o.input = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--fast") {
      o.decode = DonutDecodeMode::kFast;
      continue;
    }
    if (i + 1 >= argc) return InvalidArgumentError(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--mode") {
      o.mode = value;
    } else if (flag == "--size") {
      if (std::sscanf(value.c_str(), "%dx%d", &o.config.height, &o.config.width) != 2) {
        return InvalidArgumentError("--size must be HxW, got " + value);
      }
    } else if (flag == "--pad") {
      o.random_pad = value == "random";
    } else if (flag == "--seed") {
      o.seed = std::strtoull(value.c_str(), nullptr, 10);
    } else if (flag == "--repeat") {
      o.repeat = std::max(1, std::atoi(value.c_str()));
    } else {
      return InvalidArgumentError("unknown option " + flag);
    }
  }
  if (o.mode != "unfused" && o.mode != "decode-only") {
    return InvalidArgumentError("--mode must be unfused or decode-only");
  }
  return ValidateDonutConfig(o.config);
}

Status PadAndNormalize(const Options& o, const Image& resized, const NormalizeTable& table,
                       Workspace& ws, StepTimes& t) {
  double start = ThreadCpuSeconds();
  PadRng rng = PadRng::ForSample(o.seed, 0, 0);  // as the preset's Finish for sample 0, epoch 0
  const PadOffsets offsets = o.random_pad ? DrawPad(resized.height, resized.width, o.config, rng)
                                          : CenterPad(resized.height, resized.width, o.config);
  Image& padded = ws.padded;
  padded.width = o.config.width;
  padded.height = o.config.height;
  padded.channels = 3;
  padded.pixels.resize(padded.stride_bytes() * static_cast<size_t>(padded.height));
  DOCFEED_RETURN_IF_ERROR(DonutPad(ViewOf(resized), offsets, MutableViewOf(padded)));
  t.pad_s += ThreadCpuSeconds() - start;
  start = ThreadCpuSeconds();
  ws.normalized.resize(padded.pixels.size() * DTypeSize(DType::kFloat32));
  DOCFEED_RETURN_IF_ERROR(
      Normalize(ViewOf(padded), table, OutputLayout::kChw, DType::kFloat32, ws.normalized.data()));
  t.normalize_s += ThreadCpuSeconds() - start;
  return Status::Ok();
}

// One unfused run; `resized` receives the resized page.
Status RunUnfused(const Options& o, std::span<const uint8_t> bytes, const NormalizeTable& table,
                  Workspace& ws, StepTimes& t, Image* resized) {
  double start = ThreadCpuSeconds();
  DOCFEED_ASSIGN_OR_RETURN(const ScaledSource source, DecodeForDonut(bytes, o.config, o.decode));
  t.decode_s += ThreadCpuSeconds() - start;
  start = ThreadCpuSeconds();
  DOCFEED_ASSIGN_OR_RETURN(*resized, DonutResizeScaled(source, o.config));
  t.resize_s += ThreadCpuSeconds() - start;
  return PadAndNormalize(o, *resized, table, ws, t);
}

Status RunDecodeOnly(std::span<const uint8_t> bytes, Workspace& ws, StepTimes& t) {
  const double start = ThreadCpuSeconds();
  if (SniffCodec(bytes) == ImageCodec::kJpeg) {
    DOCFEED_RETURN_IF_ERROR(DecodeJpegScaledInto(bytes, 1, {}, &ws.decoded));
  } else {
    // Not freed first, the previous image would hold its memory while the next is allocated,
    // and every run would start from pages fresh from the kernel.
    ws.decoded.image = Image{};
    DOCFEED_ASSIGN_OR_RETURN(ws.decoded.image, DecodeImage(bytes));
  }
  t.decode_s += ThreadCpuSeconds() - start;
  return Status::Ok();
}

// The unfused steps must give the streamed path's bytes (jpeg_scaled.h).
Status CheckAgainstStreamed(const Options& o, std::span<const uint8_t> bytes,
                            const Image& resized) {
  Image streamed;
  DOCFEED_RETURN_IF_ERROR(DecodeAndResizeForDonut(bytes, o.config, o.decode, &streamed));
  if (streamed.width != resized.width || streamed.height != resized.height ||
      streamed.channels != resized.channels || streamed.pixels != resized.pixels) {
    return InternalError("the unfused resized page differs from DecodeAndResizeForDonut's");
  }
  return Status::Ok();
}

void Print(const Options& o, const StepTimes& t, double cpu_s) {
  const int n = o.repeat;
  std::fprintf(stderr, "cpu per image (mean of %d): %.3f ms\n", n, 1e3 * cpu_s / n);
  if (o.mode == "decode-only") {
    std::fprintf(stderr, "per image (mean of %d, CPU): decode %.3f ms (%.2f images/s)\n", n,
                 1e3 * t.decode_s / n, n / t.total());
    return;
  }
  std::fprintf(stderr,
               "per image (mean of %d, CPU): decode %.3f ms, resize %.3f ms, pad %.3f ms, "
               "normalize %.3f ms, total %.3f ms (%.2f images/s)\n",
               n, 1e3 * t.decode_s / n, 1e3 * t.resize_s / n, 1e3 * t.pad_s / n,
               1e3 * t.normalize_s / n, 1e3 * t.total() / n, n / t.total());
}

Status Run(const Options& o) {
  DOCFEED_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, ReadFile(o.input));
  DOCFEED_ASSIGN_OR_RETURN(const NormalizeTable table, MakeNormalizeTable(o.config));
  Workspace ws;
  Image resized;
  const bool unfused = o.mode == "unfused";
  auto once = [&](StepTimes& t) {
    return unfused ? RunUnfused(o, bytes, table, ws, t, &resized) : RunDecodeOnly(bytes, ws, t);
  };
  StepTimes warm;
  DOCFEED_RETURN_IF_ERROR(once(warm));  // untimed: buffers sized, pages faulted in
  if (unfused) DOCFEED_RETURN_IF_ERROR(CheckAgainstStreamed(o, bytes, resized));
  StepTimes t;
  const double start = ThreadCpuSeconds();
  for (int i = 0; i < o.repeat; ++i) DOCFEED_RETURN_IF_ERROR(once(t));
  Print(o, t, ThreadCpuSeconds() - start);
  return Status::Ok();
}

int Main(int argc, char** argv) {
  Options o;
  if (Status s = ParseArgs(argc, argv, o); !s.ok()) {
    std::fprintf(stderr,
                 "donut_stages_bench: %s\nusage: donut_stages_bench IMAGE --mode "
                 "unfused|decode-only [--size HxW] [--fast] [--pad center|random] [--seed N] "
                 "[--repeat N]\n",
                 s.ToString().c_str());
    return 2;
  }
  if (Status s = Run(o); !s.ok()) {
    std::fprintf(stderr, "donut_stages_bench: %s: %s\n", o.input.c_str(), s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace docfeed::internal

int main(int argc, char** argv) { return docfeed::internal::Main(argc, argv); }
