// docfeed preprocess: runs one image through a model preset (Donut) and writes a stage of it as
// .npy or .png. Mostly a parity and benchmarking aid: tests/python/test_donut_parity.py compares
// its output with transformers' DonutImageProcessor.
#include <charconv>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "args.h"
#include "base/file.h"
#include "codec/codec.h"
#include "commands.h"
#include "imaging/donut.h"
#include "imaging/jpeg_scaled.h"
#include "imaging/normalize.h"
#include "preset/preset.h"

namespace docfeed::tools {
namespace {

using internal::DType;
using internal::Image;

constexpr char kUsage[] =
    "usage: docfeed preprocess IMAGE --preset donut [--size HxW] [--pad center|random]\n"
    "       [--seed N] [--stage resized|padded|normalized] [--layout chw|hwc]\n"
    "       [--dtype float32|float16] [--align-long-axis] [--fast] [--unfused] [--decode-only]\n"
    "       [--repeat N] -o OUT.npy|OUT.png\n"
    "\n"
    "  --size HxW     output height x width (default 2560x1920, the processor's default). A\n"
    "                 legacy list size=[1200, 1553] in a processor config is width, height: "
    "1553x1200\n"
    "  --stage        resized: HWC uint8 after resize+thumbnail; padded: HWC uint8 (height, "
    "width,\n"
    "                 3); normalized (default): float pixel_values, CHW unless --layout hwc\n"
    "  --pad          center (default) or random (seeded by --seed, default 0)\n"
    "  --fast         DCT-scaled JPEG decode when the image is >= 2x the resize target (not\n"
    "                 pixel-identical to transformers)\n"
    "  --unfused      decode, resize, pad and normalize as separate whole-image steps (the\n"
    "                 pipeline before streaming; same output), timed per step\n"
    "  --decode-only  only decode; writes the decoded image, HWC uint8 (a timing baseline:\n"
    "                 JPEGs decode into a buffer reused across --repeat runs)\n"
    "  --repeat N     run N times and print the mean CPU time per stage to stderr\n"
    "  -o OUT         .npy keeps dtype and shape; .png for the uint8 stages\n";

enum class Stage { kDecoded, kResized, kPadded, kNormalized };

struct Options {
  std::string input, output;
  internal::DonutConfig config;
  internal::DonutDecodeMode mode = internal::DonutDecodeMode::kExact;
  Stage stage = Stage::kNormalized;
  bool random_pad = false;
  bool unfused = false;
  uint64_t seed = 0;
  internal::OutputLayout layout = internal::OutputLayout::kChw;
  DType dtype = DType::kFloat32;
  int repeat = 0;
};

// The result of one run: uint8 HWC pixels, or a typed array with its numpy shape.
struct Output {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> shape;
  const char* descr = "|u1";
};

// Whole-image steps (--unfused): decode, resize, pad, normalize. Default: decode_s holds the
// fused decode + resize, normalize_s the fused pad + normalize.
struct StageTimes {
  double decode_s = 0, resize_s = 0, pad_s = 0, normalize_s = 0;
};

// Buffers kept across --repeat runs, as a pipeline's buffer pool would keep them, so the timings
// measure the work rather than page faults on fresh allocations.
struct Workspace {
  internal::ScaledSource decoded;
  Image resized;
  Image padded;
  Output out;
};

Status ParseSize(const std::string& text, internal::DonutConfig& config) {
  const size_t x = text.find('x');
  if (x == std::string::npos) return InvalidArgumentError("--size must be HxW, got " + text);
  DOCFEED_ASSIGN_OR_RETURN(config.height, ParseInt("--size height", text.substr(0, x), 1, 65535));
  DOCFEED_ASSIGN_OR_RETURN(config.width, ParseInt("--size width", text.substr(x + 1), 1, 65535));
  return Status::Ok();
}

Result<uint64_t> ParseSeed(const std::string& text) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    return InvalidArgumentError("--seed must be an unsigned 64-bit integer, got \"" + text + "\"");
  }
  return v;
}

Status ParseEnums(const ParsedArgs& p, Options& o) {
  const std::string stage = p.Get("--stage", "normalized");
  const std::string pad = p.Get("--pad", "center");
  const std::string layout = p.Get("--layout", "chw");
  const std::string dtype = p.Get("--dtype", "float32");
  if (p.Get("--preset", "donut") != "donut") return InvalidArgumentError("--preset must be donut");
  if (stage != "resized" && stage != "padded" && stage != "normalized") {
    return InvalidArgumentError("--stage must be resized, padded or normalized");
  }
  if (pad != "center" && pad != "random") return InvalidArgumentError("--pad: center|random");
  if (layout != "chw" && layout != "hwc") return InvalidArgumentError("--layout: chw|hwc");
  if (dtype != "float32" && dtype != "float16") {
    return InvalidArgumentError("--dtype: float32|float16");
  }
  o.stage = stage == "resized"  ? Stage::kResized
            : stage == "padded" ? Stage::kPadded
                                : Stage::kNormalized;
  o.random_pad = pad == "random";
  o.layout = layout == "chw" ? internal::OutputLayout::kChw : internal::OutputLayout::kHwc;
  o.dtype = dtype == "float32" ? DType::kFloat32 : DType::kFloat16;
  return Status::Ok();
}

Result<Options> ParseOptions(const ParsedArgs& p) {
  Options o;
  if (p.positional.size() != 1) return InvalidArgumentError("expected one IMAGE");
  o.input = p.positional[0];
  o.output = p.Get("-o", "");
  if (o.output.empty()) return InvalidArgumentError("-o OUT is required");
  DOCFEED_RETURN_IF_ERROR(ParseSize(p.Get("--size", "2560x1920"), o.config));
  DOCFEED_RETURN_IF_ERROR(ParseEnums(p, o));
  DOCFEED_ASSIGN_OR_RETURN(o.seed, ParseSeed(p.Get("--seed", "0")));
  DOCFEED_ASSIGN_OR_RETURN(o.repeat, ParseInt("--repeat", p.Get("--repeat", "0"), 0, 1000000));
  o.config.align_long_axis = p.Has("--align-long-axis");
  if (p.Has("--fast")) o.mode = internal::DonutDecodeMode::kFast;
  o.unfused = p.Has("--unfused");
  if (p.Has("--decode-only")) o.stage = Stage::kDecoded;
  return o;
}

// CPU time of this thread: unlike wall time, it leaves out the time other processes hold the
// core, so numbers stay comparable on a shared machine.
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Stage timers: CPU seconds since `since` (a ThreadCpuSeconds() value).
double Seconds(double since) { return ThreadCpuSeconds() - since; }

// The resized stage as the processor holds it: RGB (gray is replicated).
Output RgbOutput(const Image& image) {
  Output out;
  out.shape = {image.height, image.width, 3};
  out.bytes.resize(static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3);
  const internal::PadOffsets none{};
  internal::MutableImageView view{out.bytes.data(), image.width, image.height, 3,
                                  static_cast<ptrdiff_t>(image.width) * 3};
  internal::DonutPad(internal::ViewOf(image), none, view).IgnoreError();  // Cannot fail here.
  return out;
}

// The unfused path draws the offsets as the preset's Finish does for sample 0 of epoch 0.
internal::PadOffsets Offsets(const Options& o, const Image& resized) {
  internal::PadRng rng = internal::PadRng::ForSample(o.seed, 0, 0);
  return o.random_pad ? internal::DrawPad(resized.height, resized.width, o.config, rng)
                      : internal::CenterPad(resized.height, resized.width, o.config);
}

void SetFloatShape(const Options& o, Output& out) {
  out.descr = o.dtype == DType::kFloat32 ? "<f4" : "<f2";
  out.shape = o.layout == internal::OutputLayout::kChw
                  ? std::vector<int64_t>{3, o.config.height, o.config.width}
                  : std::vector<int64_t>{o.config.height, o.config.width, 3};
}

Status PadThenNormalize(const Options& o, const Image& resized, Workspace& ws, StageTimes& t) {
  double start = ThreadCpuSeconds();
  const internal::PadOffsets offsets = Offsets(o, resized);
  Image& padded = ws.padded;
  padded.width = o.config.width;
  padded.height = o.config.height;
  padded.channels = 3;
  padded.pixels.resize(padded.stride_bytes() * static_cast<size_t>(padded.height));
  DOCFEED_RETURN_IF_ERROR(
      internal::DonutPad(internal::ViewOf(resized), offsets, internal::MutableViewOf(padded)));
  t.pad_s += Seconds(start);
  Output& out = ws.out;
  if (o.stage == Stage::kPadded) {
    out.shape = {padded.height, padded.width, 3};
    out.descr = "|u1";
    out.bytes = padded.pixels;
    return Status::Ok();
  }
  start = ThreadCpuSeconds();
  DOCFEED_ASSIGN_OR_RETURN(const internal::NormalizeTable table,
                           internal::MakeNormalizeTable(o.config));
  out.bytes.resize(padded.pixels.size() * internal::DTypeSize(o.dtype));
  DOCFEED_RETURN_IF_ERROR(
      internal::Normalize(internal::ViewOf(padded), table, o.layout, o.dtype, out.bytes.data()));
  t.normalize_s += Seconds(start);
  SetFloatShape(o, out);
  return Status::Ok();
}

// The pipeline before streaming: whole-image decode, resize, pad, normalize.
Status RunUnfused(const Options& o, std::span<const uint8_t> bytes, Workspace& ws, StageTimes& t) {
  double start = ThreadCpuSeconds();
  DOCFEED_ASSIGN_OR_RETURN(const internal::ScaledSource source,
                           internal::DecodeForDonut(bytes, o.config, o.mode));
  t.decode_s += Seconds(start);
  start = ThreadCpuSeconds();
  DOCFEED_ASSIGN_OR_RETURN(const Image resized, internal::DonutResizeScaled(source, o.config));
  t.resize_s += Seconds(start);
  if (o.stage == Stage::kResized) {
    ws.out = RgbOutput(resized);
    return Status::Ok();
  }
  return PadThenNormalize(o, resized, ws, t);
}

// The decode alone: JPEGs into the reused workspace buffer (libjpeg-turbo's own time), other
// formats through DecodeImage.
Status RunDecodeOnly(std::span<const uint8_t> bytes, Workspace& ws, StageTimes& t) {
  const double start = ThreadCpuSeconds();
  if (internal::SniffCodec(bytes) == internal::ImageCodec::kJpeg) {
    DOCFEED_RETURN_IF_ERROR(internal::DecodeJpegScaledInto(bytes, 1, {}, &ws.decoded));
  } else {
    DOCFEED_ASSIGN_OR_RETURN(ws.decoded.image, internal::DecodeImage(bytes));
  }
  t.decode_s += Seconds(start);
  const Image& image = ws.decoded.image;
  ws.out.shape = {image.height, image.width, image.channels};
  ws.out.descr = "|u1";
  ws.out.bytes = image.pixels;
  return Status::Ok();
}

// The preset's two parts, as the loader runs them: Prepare (decode + resize; EXIF orientation
// is not applied, as PIL.Image.open does not), then Finish (pad + normalize) into the output.
Status RunOnce(const Options& o, const internal::Preset& preset, std::span<const uint8_t> bytes,
               Workspace& ws, StageTimes& t) {
  if (o.stage == Stage::kDecoded) return RunDecodeOnly(bytes, ws, t);
  if (o.unfused) return RunUnfused(o, bytes, ws, t);
  double start = ThreadCpuSeconds();
  internal::PrepareRequest request;
  request.mode = o.mode == internal::DonutDecodeMode::kFast ? internal::PrepareMode::kFast
                                                            : internal::PrepareMode::kExact;
  DOCFEED_RETURN_IF_ERROR(preset.Prepare(bytes, request, &ws.resized));
  t.decode_s += Seconds(start);
  const Image& resized = ws.resized;
  if (o.stage == Stage::kResized) {
    ws.out = RgbOutput(resized);
    return Status::Ok();
  }
  start = ThreadCpuSeconds();
  Output& out = ws.out;
  const DType dtype = o.stage == Stage::kPadded ? DType::kUint8 : o.dtype;
  const internal::OutputLayout layout =
      o.stage == Stage::kPadded ? internal::OutputLayout::kHwc : o.layout;
  out.bytes.resize(preset.SampleBytes(dtype));
  DOCFEED_RETURN_IF_ERROR(
      preset.Finish(internal::ViewOf(resized), {o.seed, 0, 0}, dtype, layout, out.bytes.data())
          .status());
  if (o.stage == Stage::kPadded) {
    t.pad_s += Seconds(start);
    out.shape = {o.config.height, o.config.width, 3};
    out.descr = "|u1";
    return Status::Ok();
  }
  t.normalize_s += Seconds(start);
  SetFloatShape(o, out);
  return Status::Ok();
}

std::string NpyHeader(const Output& out) {
  std::string shape;
  for (int64_t d : out.shape) shape += std::to_string(d) + ", ";
  std::string dict = std::string("{'descr': '") + out.descr +
                     "', 'fortran_order': False, 'shape': (" + shape.substr(0, shape.size() - 2) +
                     "), }";
  // Magic (6) + version (2) + length (2) + dict + padding + '\n' is a multiple of 64.
  const size_t total = (10 + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - 10 - dict.size() - 1, ' ');
  dict += '\n';
  std::string header("\x93NUMPY\x01\x00", 8);
  header += static_cast<char>(dict.size() & 0xFF);
  header += static_cast<char>(dict.size() >> 8);
  return header + dict;
}

Status WriteOutput(const std::string& path, const Output& out) {
  if (path.ends_with(".npy")) {
    const std::string header = NpyHeader(out);
    std::vector<uint8_t> file(header.begin(), header.end());
    file.insert(file.end(), out.bytes.begin(), out.bytes.end());
    return internal::WriteFile(path, file);
  }
  if (!path.ends_with(".png")) return InvalidArgumentError("-o must end in .npy or .png");
  if (std::string(out.descr) != "|u1" || out.shape.size() != 3 || out.shape[2] != 3) {
    return InvalidArgumentError("a .png holds the uint8 stages only (resized, padded)");
  }
  const Image image{.width = static_cast<int32_t>(out.shape[1]),
                    .height = static_cast<int32_t>(out.shape[0]),
                    .channels = 3,
                    .pixels = out.bytes};
  DOCFEED_ASSIGN_OR_RETURN(const std::vector<uint8_t> png, internal::EncodePng(image));
  return internal::WriteFile(path, png);
}

void PrintTimes(const Options& o, const StageTimes& t, int n, double cpu_s) {
  std::fprintf(stderr, "cpu per image (mean of %d): %.3f ms\n", n, 1e3 * cpu_s / n);
  const double total = t.decode_s + t.resize_s + t.pad_s + t.normalize_s;
  if (o.stage == Stage::kDecoded) {
    std::fprintf(stderr,
                 "per image (mean of %d, CPU): decode %.3f ms, total %.3f ms (%.2f images/s)\n", n,
                 1e3 * t.decode_s / n, 1e3 * total / n, n / total);
  } else if (o.unfused) {
    std::fprintf(
        stderr,
        "per image (mean of %d, CPU): decode %.3f ms, resize %.3f ms, pad %.3f ms, normalize "
        "%.3f ms, total %.3f ms (%.2f images/s)\n",
        n, 1e3 * t.decode_s / n, 1e3 * t.resize_s / n, 1e3 * t.pad_s / n, 1e3 * t.normalize_s / n,
        1e3 * total / n, n / total);
  } else {
    std::fprintf(stderr,
                 "per image (mean of %d, CPU): decode+resize %.3f ms, pad+normalize %.3f ms, total "
                 "%.3f ms (%.2f images/s)\n",
                 n, 1e3 * t.decode_s / n, 1e3 * (t.pad_s + t.normalize_s) / n, 1e3 * total / n,
                 n / total);
  }
}

Status Run(const Options& o) {
  internal::PresetParams params;
  params.donut = o.config;
  params.pad = o.random_pad ? internal::PadMode::kRandom : internal::PadMode::kCenter;
  DOCFEED_ASSIGN_OR_RETURN(const std::unique_ptr<const internal::Preset> preset,
                           internal::MakePreset(params));
  DOCFEED_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, internal::ReadFile(o.input));
  StageTimes t;
  Workspace ws;
  if (Status s = RunOnce(o, *preset, bytes, ws, t); !s.ok()) return s.WithContext(o.input);
  if (o.repeat > 0) {
    t = StageTimes{};
    const double cpu_start = ThreadCpuSeconds();
    for (int i = 0; i < o.repeat; ++i) DOCFEED_RETURN_IF_ERROR(RunOnce(o, *preset, bytes, ws, t));
    PrintTimes(o, t, o.repeat, ThreadCpuSeconds() - cpu_start);
  }
  return WriteOutput(o.output, ws.out);
}

}  // namespace

int RunPreprocess(const Args& args) {
  Result<ParsedArgs> parsed =
      ParseArgs(args, {"--fast", "--unfused", "--decode-only", "--align-long-axis", "--help", "-h"},
                {"--preset", "--size", "--pad", "--seed", "--stage", "--layout", "--dtype",
                 "--repeat", "-o"});
  if (parsed.ok() && (parsed->Has("--help") || parsed->Has("-h"))) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  Result<Options> options = parsed.ok() ? ParseOptions(*parsed) : Result<Options>(parsed.status());
  if (!options.ok()) {
    std::fprintf(stderr, "docfeed preprocess: %s\n\n%s", options.status().ToString().c_str(),
                 kUsage);
    return 2;
  }
  if (Status s = Run(*options); !s.ok()) {
    std::fprintf(stderr, "docfeed preprocess: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace docfeed::tools
