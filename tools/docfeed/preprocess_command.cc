// docfeed preprocess: runs one image through a model preset (Donut, Qwen2-VL, Nougat, Idefics3,
// Pix2Struct) and writes a stage of it as .npy or .png. Mostly a parity and benchmarking aid:
// tests/python/ test_donut_parity.py, test_hf_qwen_vl_parity.py, test_hf_nougat_parity.py and
// test_hf_idefics3_parity.py and test_hf_pix2struct_parity.py compare its output with the
// transformers processors.
#include <charconv>
#include <cstdio>
#include <ctime>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "docfeed/env.h"
#include "docfeed/image.h"
#include "docfeed/preprocess.h"

namespace docfeed::tools {
namespace {

constexpr char kUsage[] =
    "usage: docfeed preprocess IMAGE --preset donut [--size HxW] [--pad center|random]\n"
    "       [--seed N] [--stage resized|padded|normalized] [--layout chw|hwc]\n"
    "       [--dtype float32|float16] [--align-long-axis] [--fast] [--repeat N]\n"
    "       [--hf-version 4|5] [--backend pil|torchvision] -o OUT.npy|OUT.png\n"
    "       docfeed preprocess IMAGE --preset qwen2-vl|qwen2.5-vl [--min-pixels N]\n"
    "       [--max-pixels N] [--patch-size N] [--temporal-patch-size N] [--merge-size N]\n"
    "       [--stage resized|normalized] [--dtype float32|float16] [--hf-version 4|5]\n"
    "       [--backend pil|torchvision]\n"
    "       [--repeat N] -o OUT.npy|OUT.png\n"
    "       docfeed preprocess IMAGE --preset nougat [--size HxW] [--pad center|random]\n"
    "       [--seed N] [--stage resized|padded|normalized] [--layout chw|hwc]\n"
    "       [--dtype float32|float16] [--align-long-axis] [--hf-version 4|5] [--repeat N]\n"
    "       -o OUT.npy|OUT.png\n"
    "       docfeed preprocess IMAGE --preset idefics3 [--longest-edge N]\n"
    "       [--max-image-size N] [--no-image-splitting] [--stage resized|normalized]\n"
    "       [--dtype float32|float16] [--hf-version 4|5] [--repeat N] -o OUT.npy|OUT.png\n"
    "       docfeed preprocess IMAGE --preset pix2struct [--max-patches N]\n"
    "       [--patch-size N|HxW] [--stage resized|normalized] [--hf-version 4|5] [--repeat N]\n"
    "       -o OUT.npy|OUT.png\n"
    "\n"
    "  --size HxW     output height x width (default: the processor's, 2560x1920 for donut,\n"
    "                 896x672 for nougat). A legacy list size=[1200, 1553] in a processor\n"
    "                 config is width, height: 1553x1200\n"
    "  --stage        resized: HWC uint8 after resize+thumbnail; padded: HWC uint8 (height, "
    "width,\n"
    "                 3); normalized (default): float pixel_values, CHW unless --layout hwc\n"
    "  --pad          center (default) or random (seeded by --seed, default 0)\n"
    "  --fast         DCT-scaled JPEG decode when the image is >= 2x the resize target (not\n"
    "                 pixel-identical to transformers)\n"
    "  --repeat N     run N times and print the mean CPU time of the preset's Prepare\n"
    "                 (decode+resize) and Finish (pad+normalize) to stderr\n"
    "  -o OUT         .npy keeps dtype and shape; .png for the uint8 stages\n"
    "  qwen2-vl / qwen2.5-vl (Qwen2VLImageProcessor; defaults: the public checkpoints'\n"
    "                 min_pixels 3136, max_pixels 12845056, patch 14, temporal 2, merge 2):\n"
    "                 resized is the smart_resize'd page (HWC uint8), normalized the\n"
    "                 flattened patches (patches x 3*temporal*patch^2, pixel_values' rows)\n"
    "  nougat (NougatImageProcessor; facebook/nougat-base's settings): crop_margin, then\n"
    "                 Donut's steps with a BICUBIC thumbnail in both generations and\n"
    "                 ImageNet mean/std; resized is the stage after the thumbnail\n"
    "  idefics3 (Idefics3ImageProcessor; SmolDocling-256M-preview's longest_edge 2048,\n"
    "                 max_image_size 512): normalized is pixel_values of the page (tiles x 3 x\n"
    "                 S x S: rows x cols crops, then the global image); resized is the prepared\n"
    "                 page (the grid with the global image in a band below it)\n"
    "  pix2struct (Pix2StructImageProcessor; google/pix2struct-base's max_patches 2048,\n"
    "                 patch 16x16): normalized is flattened_patches (max_patches x 2 + 3*ph*pw\n"
    "                 float32); resized is the decoded RGB page (the preset resizes floats)\n"
    "\n" DOCFEED_GENERATION_HELP;

enum class Stage { kResized, kPadded, kNormalized };

struct Options {
  std::string input, output;
  std::string preset = "donut";
  DonutConfig config;  // donut; its height and width are every fixed-size preset's output size
  QwenVLConfig qwen_vl;
  NougatConfig nougat;
  Idefics3Config idefics3;
  Pix2StructConfig pix2struct;
  PrepareMode mode = PrepareMode::kExact;
  Stage stage = Stage::kNormalized;
  bool random_pad = false;
  uint64_t seed = 0;
  OutputLayout layout = OutputLayout::kChw;
  DType dtype = DType::kFloat32;
  int repeat = 0;
  Env* env = nullptr;  // reads IMAGE, writes OUT
};

// The result of one run: uint8 HWC pixels, or a typed array with its numpy shape.
// Allocates on 64-byte boundaries, as the loader's batch slots are (pipeline/buffer_pool.cc):
// Finish's writers stream whole cache lines from there, and from malloc's 16-byte alignment
// each output row would start and end with scalar pixels the loader never runs (2-3 % of an
// Idefics3 page measured).
template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <typename U>
  explicit CacheLineAllocator(const CacheLineAllocator<U>& /*other*/) {}
  T* allocate(size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64}));
  }
  void deallocate(T* p, size_t /*n*/) { ::operator delete (p, std::align_val_t{64}); }
  template <typename U>
  bool operator==(const CacheLineAllocator<U>& /*other*/) const {
    return true;
  }
};

struct Output {
  std::vector<uint8_t, CacheLineAllocator<uint8_t>> bytes;
  std::vector<int64_t> shape;
  const char* descr = "|u1";
};

// CPU seconds of the preset's two parts: Prepare (the fused decode + resize) and Finish (the
// fused pad + normalize; pad alone for the padded stage).
struct StageTimes {
  double prepare_s = 0, finish_s = 0;
};

// Buffers kept across --repeat runs, as a pipeline's buffer pool would keep them, so the timings
// measure the work rather than page faults on fresh allocations.
struct Workspace {
  Image resized;
  Output out;
};

Status ParseSize(const std::string& text, DonutConfig& config) {
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
  o.preset = p.Get("--preset", "donut");
  if (o.preset != "donut" && o.preset != "qwen2-vl" && o.preset != "qwen2.5-vl" &&
      o.preset != "nougat" && o.preset != "idefics3" && o.preset != "pix2struct") {
    return InvalidArgumentError(
        "--preset must be donut, qwen2-vl, qwen2.5-vl, nougat, idefics3 or pix2struct");
  }
  if (o.preset != "donut" && o.preset != "nougat" && stage == "padded") {
    return InvalidArgumentError("--stage padded is Donut's and Nougat's; " + o.preset +
                                " has resized and normalized");
  }
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
  o.layout = layout == "chw" ? OutputLayout::kChw : OutputLayout::kHwc;
  o.dtype = dtype == "float32" ? DType::kFloat32 : DType::kFloat16;
  return Status::Ok();
}

// --max-patches and --patch-size N (square) or HxW, Pix2StructImageProcessor's max_patches and
// patch_size; float32 output only, as the processor's.
Status ParsePix2Struct(const ParsedArgs& p, const Generation& generation, Options& o) {
  Pix2StructConfig& c = o.pix2struct;
  if (p.Has("--fast") || generation.backend != "pil") {
    return InvalidArgumentError(
        "--fast and --backend torchvision are Donut's; pix2struct reproduces the PIL processors");
  }
  if (o.dtype != DType::kFloat32) {
    return InvalidArgumentError("pix2struct writes float32 flattened_patches (--dtype float32)");
  }
  c.hf_version = generation.hf_version;
  DOCFEED_ASSIGN_OR_RETURN(c.max_patches,
                           ParseInt("--max-patches", p.Get("--max-patches", "2048"), 1, 65536));
  const std::string patch = p.Get("--patch-size", "16");
  const size_t x = patch.find('x');
  DOCFEED_ASSIGN_OR_RETURN(c.patch_height,
                           ParseInt("--patch-size height", patch.substr(0, x), 1, 256));
  c.patch_width = c.patch_height;
  if (x != std::string::npos) {
    DOCFEED_ASSIGN_OR_RETURN(c.patch_width,
                             ParseInt("--patch-size width", patch.substr(x + 1), 1, 256));
  }
  return Status::Ok();
}

Result<Options> ParseOptions(const ParsedArgs& p) {
  Options o;
  if (p.positional.size() != 1) return InvalidArgumentError("expected one IMAGE");
  o.input = p.positional[0];
  o.output = p.Get("-o", "");
  if (o.output.empty()) return InvalidArgumentError("-o OUT is required");
  DOCFEED_RETURN_IF_ERROR(ParseEnums(p, o));
  const bool nougat = o.preset == "nougat";
  DOCFEED_RETURN_IF_ERROR(ParseSize(p.Get("--size", nougat ? "896x672" : "2560x1920"), o.config));
  DOCFEED_ASSIGN_OR_RETURN(o.seed, ParseSeed(p.Get("--seed", "0")));
  DOCFEED_ASSIGN_OR_RETURN(o.repeat, ParseInt("--repeat", p.Get("--repeat", "0"), 0, 1000000));
  o.config.align_long_axis = p.Has("--align-long-axis");
  DOCFEED_ASSIGN_OR_RETURN(const Generation generation, ParseGeneration(p));
  o.config.hf_version = generation.hf_version;
  DOCFEED_ASSIGN_OR_RETURN(o.config.backend, ParseDonutBackend(generation.backend));
  if (p.Has("--fast")) o.mode = PrepareMode::kFast;
  if (nougat && (p.Has("--fast") || generation.backend != "pil")) {
    return InvalidArgumentError(
        "--fast and --backend torchvision are Donut's; nougat reproduces the PIL processors");
  }
  o.nougat.height = o.config.height;
  o.nougat.width = o.config.width;
  o.nougat.align_long_axis = o.config.align_long_axis;
  o.nougat.hf_version = generation.hf_version;
  QwenVLConfig& q = o.qwen_vl;
  q.hf_version = generation.hf_version;
  q.backend = o.config.backend;
  constexpr int64_t kMaxArea = int64_t{1} << 40;
  DOCFEED_ASSIGN_OR_RETURN(q.min_pixels,
                           ParseInt64("--min-pixels", p.Get("--min-pixels", "3136"), 1, kMaxArea));
  DOCFEED_ASSIGN_OR_RETURN(
      q.max_pixels, ParseInt64("--max-pixels", p.Get("--max-pixels", "12845056"), 1, kMaxArea));
  if (o.preset == "pix2struct") {
    DOCFEED_RETURN_IF_ERROR(ParsePix2Struct(p, generation, o));
  } else {
    DOCFEED_ASSIGN_OR_RETURN(q.patch_size,
                             ParseInt("--patch-size", p.Get("--patch-size", "14"), 1, 1024));
  }
  DOCFEED_ASSIGN_OR_RETURN(
      q.temporal_patch_size,
      ParseInt("--temporal-patch-size", p.Get("--temporal-patch-size", "2"), 1, 1024));
  DOCFEED_ASSIGN_OR_RETURN(q.merge_size,
                           ParseInt("--merge-size", p.Get("--merge-size", "2"), 1, 1024));
  Idefics3Config& idefics3 = o.idefics3;
  if (o.preset == "idefics3" && (p.Has("--fast") || generation.backend != "pil")) {
    return InvalidArgumentError(
        "--fast and --backend torchvision are Donut's; idefics3 reproduces the PIL processors");
  }
  idefics3.hf_version = generation.hf_version;
  idefics3.do_image_splitting = !p.Has("--no-image-splitting");
  DOCFEED_ASSIGN_OR_RETURN(idefics3.longest_edge,
                           ParseInt("--longest-edge", p.Get("--longest-edge", "2048"), 1, 8192));
  DOCFEED_ASSIGN_OR_RETURN(idefics3.max_image_size,
                           ParseInt("--max-image-size", p.Get("--max-image-size", "512"), 1, 8192));
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

// The resized stage as the processor holds it: RGB (a gray page's value in all three channels).
Result<Output> RgbOutput(const Image& image) {
  if (image.channels != 1 && image.channels != 3) {
    return InternalError("the preset prepared a page with " + std::to_string(image.channels) +
                         " channels");
  }
  Output out;
  out.shape = {image.height, image.width, 3};
  const size_t pixels = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
  out.bytes.resize(pixels * 3);
  for (size_t i = 0; i < pixels; ++i) {
    for (size_t c = 0; c < 3; ++c) {
      out.bytes[3 * i + c] = image.pixels[image.channels == 1 ? i : 3 * i + c];
    }
  }
  return out;
}

void SetFloatShape(const Options& o, Output& out) {
  out.descr = o.dtype == DType::kFloat32 ? "<f4" : "<f2";
  out.shape = o.layout == OutputLayout::kChw
                  ? std::vector<int64_t>{3, o.config.height, o.config.width}
                  : std::vector<int64_t>{o.config.height, o.config.width, 3};
}

// The preset's two parts, as the loader runs them: Prepare (decode + resize; EXIF orientation
// only where PIL.Image.open applies it itself: a TIFF's Orientation tag), then Finish (pad +
// normalize) into the output, with the padding offsets drawn for sample 0 of epoch 0.
Status RunOnce(const Options& o, const Preset& preset, std::span<const uint8_t> bytes,
               Workspace& ws, StageTimes& t) {
  PrepareOptions prepare;
  prepare.orientation = OrientationAppliedOnOpen(bytes);
  double start = ThreadCpuSeconds();
  prepare.mode = o.mode;
  DOCFEED_RETURN_IF_ERROR(preset.Prepare(bytes, prepare, &ws.resized));
  t.prepare_s += Seconds(start);
  const Image& resized = ws.resized;
  if (o.stage == Stage::kResized) {
    DOCFEED_ASSIGN_OR_RETURN(ws.out, RgbOutput(resized));
    return Status::Ok();
  }
  start = ThreadCpuSeconds();
  Output& out = ws.out;
  const DType dtype = o.stage == Stage::kPadded ? DType::kUint8 : o.dtype;
  const OutputLayout layout = o.stage == Stage::kPadded ? OutputLayout::kHwc : o.layout;
  out.bytes.resize(preset.variable_size()
                       ? preset.OutputBytes({0, 0, resized.height, resized.width}, dtype)
                       : preset.SampleBytes(dtype));
  DOCFEED_ASSIGN_OR_RETURN(const Placement placed,
                           preset.Finish(resized, {o.seed, 0, 0}, dtype, layout, out.bytes.data()));
  t.finish_s += Seconds(start);
  if (preset.variable_size()) {  // rows of patches, or of tiles
    out.descr = o.dtype == DType::kFloat32 ? "<f4" : "<f2";
    const int64_t row = preset.output_shape().width;
    const int64_t rows =
        static_cast<int64_t>(preset.OutputBytes(placed, dtype) / DTypeSize(dtype)) / row;
    out.shape = {rows, row};
    if (o.preset == "idefics3") {  // tiles x 3 x S x S, as pixel_values[0]
      const int64_t s = o.idefics3.max_image_size;
      out.shape = {rows, 3, s, s};
    }
    return Status::Ok();
  }
  if (o.preset == "pix2struct") {  // flattened_patches[0]
    out.descr = "<f4";
    out.shape = {preset.output_shape().height, preset.output_shape().width};
    return Status::Ok();
  }
  if (o.stage == Stage::kPadded) {
    out.shape = {o.config.height, o.config.width, 3};
    out.descr = "|u1";
    return Status::Ok();
  }
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

// Writes OUT as the placement of pack does, in small: the bytes go to OUT.partial, which is made
// durable and then renamed over OUT. At every instant OUT is absent, the old file or the whole new
// one, whatever write fails or where the process dies. A failed write removes OUT.partial (best
// effort: a crash can leave it, never a half-written OUT).
Status WriteAtomically(Env* env, const std::string& path, std::span<const uint8_t> bytes) {
  const std::string partial = path + ".partial";
  Status s = [&]() -> Status {
    DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env->NewWritableFile(partial));
    DOCFEED_RETURN_IF_ERROR(file->Append(bytes));
    DOCFEED_RETURN_IF_ERROR(file->Sync());
    DOCFEED_RETURN_IF_ERROR(file->Close());
    return env->Rename(partial, path);
  }();
  if (!s.ok()) {
    env->RemoveFile(partial).IgnoreError();
    return s.WithContext("writing " + path);
  }
  return s;
}

Status WriteOutput(Env* env, const std::string& path, const Output& out) {
  if (path.ends_with(".npy")) {
    const std::string header = NpyHeader(out);
    std::vector<uint8_t> file(header.begin(), header.end());
    file.insert(file.end(), out.bytes.begin(), out.bytes.end());
    return WriteAtomically(env, path, file);
  }
  if (!path.ends_with(".png")) return InvalidArgumentError("-o must end in .npy or .png");
  if (std::string(out.descr) != "|u1" || out.shape.size() != 3 || out.shape[2] != 3) {
    return InvalidArgumentError("a .png holds the uint8 stages only (resized, padded)");
  }
  const Image image{.width = static_cast<int32_t>(out.shape[1]),
                    .height = static_cast<int32_t>(out.shape[0]),
                    .channels = 3,
                    .pixels = {out.bytes.begin(), out.bytes.end()}};
  DOCFEED_ASSIGN_OR_RETURN(const std::vector<uint8_t> png, EncodePng(image));
  return WriteAtomically(env, path, png);
}

void PrintTimes(const StageTimes& t, int n, double cpu_s) {
  std::fprintf(stderr, "cpu per image (mean of %d): %.3f ms\n", n, 1e3 * cpu_s / n);
  const double total = t.prepare_s + t.finish_s;
  std::fprintf(stderr,
               "per image (mean of %d, CPU): decode+resize %.3f ms, pad+normalize %.3f ms, total "
               "%.3f ms (%.2f images/s)\n",
               n, 1e3 * t.prepare_s / n, 1e3 * t.finish_s / n, 1e3 * total / n, n / total);
}

Status Run(const Options& o) {
  PresetOptions preset_options;
  preset_options.name = o.preset;
  preset_options.donut = o.config;
  preset_options.qwen_vl = o.qwen_vl;
  preset_options.nougat = o.nougat;
  preset_options.idefics3 = o.idefics3;
  preset_options.pix2struct = o.pix2struct;
  preset_options.pad = o.random_pad ? PadMode::kRandom : PadMode::kCenter;
  DOCFEED_ASSIGN_OR_RETURN(const Preset preset, Preset::Create(preset_options));
  Env* env = o.env != nullptr ? o.env : Env::Default();
  DOCFEED_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, env->ReadFile(o.input));
  StageTimes t;
  Workspace ws;
  if (Status s = RunOnce(o, preset, bytes, ws, t); !s.ok()) return s.WithContext(o.input);
  if (o.repeat > 0) {
    t = StageTimes{};
    const double cpu_start = ThreadCpuSeconds();
    for (int i = 0; i < o.repeat; ++i) DOCFEED_RETURN_IF_ERROR(RunOnce(o, preset, bytes, ws, t));
    PrintTimes(t, o.repeat, ThreadCpuSeconds() - cpu_start);
  }
  return WriteOutput(env, o.output, ws.out);
}

}  // namespace

int RunPreprocess(const Args& args, Env* env) {
  Result<ParsedArgs> parsed =
      ParseArgs(args, {"--fast", "--align-long-axis", "--no-image-splitting", "--help", "-h"},
                {"--preset", "--size", "--pad", "--seed", "--stage", "--layout", "--dtype",
                 "--repeat", "-o", "--hf-version", "--backend", "--min-pixels", "--max-pixels",
                 "--patch-size", "--temporal-patch-size", "--merge-size", "--longest-edge",
                 "--max-image-size", "--max-patches"});
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
  options->env = env;
  if (Status s = Run(*options); !s.ok()) {
    std::fprintf(stderr, "docfeed preprocess: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace docfeed::tools
