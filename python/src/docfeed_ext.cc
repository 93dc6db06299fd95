// docfeed._docfeed: the nanobind extension behind the `docfeed` Python package.
//
// It exposes the public C++ API (include/docfeed/: loader.h, dataset.h, pack.h, preprocess.h) with
// as little policy as possible; the Python layer (python/docfeed/loader.py) adds torch.distributed
// defaults, the GPU path and the iterable protocol. Contracts:
//   * Every blocking call (Create, Next, StartEpoch, Restore) releases the GIL.
//   * A Batch's arrays are DLPack views of the pool buffer, never copies. The Python Batch object
//     and each view (through a capsule, ViewOwner) share the C++ Batch, so the buffer returns to
//     the pool only when the Batch object and every tensor made from it are gone (or after an
//     explicit release(), which the Python layer calls only when it knows no view escaped).
//   * The optional buffer allocator (pinned memory for CUDA) is a Python callable
//     allocate(nbytes) -> object with .data_ptr(); the object is kept alive until the pool frees
//     the buffer. Its hooks take the GIL themselves because the pool may be freed on any thread.
//   * Errors become docfeed.errors exceptions chosen by StatusCode alone (Raise; never by
//     message text), each also a built-in (ValueError, FileNotFoundError, OSError,
//     RuntimeError, ...), with docfeed's message (which names the file / sample / parameter).
//   * Loader options are typed keyword-only arguments; MakeOptions is the one place that turns
//     them into LoaderOptions and checks integer ranges.
// nanobind's headers trip docfeed's -Wshadow; they are third-party code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wpedantic"
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#pragma GCC diagnostic pop

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "docfeed/dataset.h"
#include "docfeed/image.h"
#include "docfeed/loader.h"
#include "docfeed/merge.h"
#include "docfeed/pack.h"
#include "docfeed/preprocess.h"
#include "docfeed/remote.h"
#include "docfeed/status.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace docfeed {
namespace {

// ---- Errors: one place maps a StatusCode to its docfeed.errors class, by code only ----

// Each StatusCode with the name docfeed.errors.BY_CODE keys its class by (the enumerator without
// the k), and last "Closed" (no StatusCode) for a loader or batch used after close()/release().
struct ErrorKind {
  StatusCode code;
  const char* name;
};
constexpr ErrorKind kErrorKinds[] = {
    {StatusCode::kInvalidArgument, "InvalidArgument"},
    {StatusCode::kNotFound, "NotFound"},
    {StatusCode::kCorruption, "Corruption"},
    {StatusCode::kIOError, "IOError"},
    {StatusCode::kUnsupported, "Unsupported"},
    {StatusCode::kResourceExhausted, "ResourceExhausted"},
    {StatusCode::kCancelled, "Cancelled"},
    {StatusCode::kInternal, "Internal"},
    {StatusCode::kAlreadyExists, "AlreadyExists"},
    {StatusCode::kFailedPrecondition, "FailedPrecondition"},
    {StatusCode::kOk, "Closed"},
};
constexpr size_t kNumErrorKinds = sizeof(kErrorKinds) / sizeof(kErrorKinds[0]);
constexpr size_t kClosedKind = kNumErrorKinds - 1;
constexpr size_t kInternalKind = 7;
static_assert(kErrorKinds[kInternalKind].code == StatusCode::kInternal);
// The classes, looked up once at import (LoadErrorTypes); references held for the process.
PyObject* g_error_types[kNumErrorKinds] = {};

size_t ErrorIndex(StatusCode code) {
  for (size_t i = 0; i < kClosedKind; ++i) {
    if (kErrorKinds[i].code == code) return i;
  }
  return kInternalKind;  // kOk is never raised: treated as a bug
}

void LoadErrorTypes() {
  nb::object by_code = nb::module_::import_("docfeed.errors").attr("BY_CODE");
  for (size_t i = 0; i < kNumErrorKinds; ++i) {
    g_error_types[i] = nb::object(by_code[kErrorKinds[i].name]).release().ptr();
  }
}

// Raises the class of kErrorKinds[index] with `message`; its `.code` is that kind's name.
[[noreturn]] void RaiseCode(size_t index, const std::string& message) {
  nb::handle type(g_error_types[index]);
  nb::object error = type(message);
  error.attr("code") = kErrorKinds[index].name;
  PyErr_SetObject(type.ptr(), error.ptr());
  throw nb::python_error();
}

[[noreturn]] void Raise(const Status& status) {
  const StatusCode code = status.code();
  // InvalidArgument and NotFound keep docfeed's bare message (they were ValueError and
  // FileNotFoundError before the hierarchy); the others keep "Code name: message".
  const bool bare = code == StatusCode::kInvalidArgument || code == StatusCode::kNotFound;
  RaiseCode(ErrorIndex(code), bare ? std::string(status.message()) : status.ToString());
}

[[noreturn]] void RaiseInvalid(const std::string& message) {
  Raise(Status(StatusCode::kInvalidArgument, message));
}

[[noreturn]] void RaiseClosed(const std::string& message) { RaiseCode(kClosedKind, message); }

// A Python int as T, or InvalidArgumentError naming `name` and the range [lo, hi]. Rejects bool
// (an int subclass) and every non-int, so nothing is truncated or wrapped silently.
template <typename T>
T ToInt(const char* name, nb::handle value, T lo = std::numeric_limits<T>::min(),
        T hi = std::numeric_limits<T>::max()) {
  static_assert(std::is_integral_v<T> && sizeof(T) <= sizeof(long long));
  bool in_range = false;
  T out = 0;
  if (PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr())) {
    int overflow = 0;
    const long long s = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow == 0 && !(s == -1 && PyErr_Occurred())) {
      if constexpr (std::is_signed_v<T>) {
        in_range = s >= static_cast<long long>(lo) && s <= static_cast<long long>(hi);
      } else {
        in_range = s >= 0 && static_cast<unsigned long long>(s) >= lo &&
                   static_cast<unsigned long long>(s) <= hi;
      }
      out = static_cast<T>(s);
    } else if (overflow > 0) {
      if constexpr (std::is_unsigned_v<T>) {
        const unsigned long long u = PyLong_AsUnsignedLongLong(value.ptr());
        if (!PyErr_Occurred()) {
          in_range = u >= lo && u <= hi;
          out = static_cast<T>(u);
        }
      }
    }
    PyErr_Clear();
  }
  if (in_range) return out;
  const std::string got = nb::cast<std::string>(nb::repr(value));
  RaiseInvalid(std::string(name) + " must be an integer in " + std::to_string(lo) + ".." +
               std::to_string(hi) + ", not " + got);
}

DType ParseDType(const std::string& name) {
  if (name == "uint8") return DType::kUint8;
  if (name == "float32") return DType::kFloat32;
  if (name == "float16") return DType::kFloat16;
  if (name == "bfloat16") return DType::kBfloat16;
  RaiseInvalid("dtype must be uint8, float32, float16 or bfloat16, not " + name);
}

nb::dlpack::dtype ToDlpack(DType dtype) {
  switch (dtype) {
    case DType::kUint8:
      return nb::dtype<uint8_t>();
    case DType::kFloat32:
      return nb::dtype<float>();
    case DType::kFloat16:
      return nb::dlpack::dtype{static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case DType::kBfloat16:
      return nb::dlpack::dtype{static_cast<uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1};
  }
  return nb::dtype<uint8_t>();
}

// Keeps the Python objects that back pinned pool buffers alive, keyed by address. Owned by the
// allocator's std::functions (so by the pool); every touch of a Python object holds the GIL.
class PyAllocator {
 public:
  explicit PyAllocator(nb::object allocate) : allocate_(allocate.release().ptr()) {}
  ~PyAllocator() {
    // The pool (and so this) may die on a worker or consumer thread, or at interpreter exit.
    if (!Py_IsInitialized()) return;  // leak rather than touch a finalized interpreter
    nb::gil_scoped_acquire gil;
    for (auto& entry : live_) Py_DECREF(entry.second);
    Py_XDECREF(allocate_);
  }
  void* Allocate(size_t bytes) {
    if (!Py_IsInitialized()) return nullptr;
    nb::gil_scoped_acquire gil;
    try {
      nb::object owner = nb::handle(allocate_)(bytes);
      auto address = nb::cast<uintptr_t>(owner.attr("data_ptr")());
      if (address == 0 || address % 64 != 0) return nullptr;
      void* data = reinterpret_cast<void*>(address);
      live_[data] = owner.release().ptr();
      return data;
    } catch (nb::python_error& e) {
      e.discard_as_unraisable("docfeed buffer allocator");
      return nullptr;
    }
  }
  void Release(void* data) {
    if (!Py_IsInitialized()) return;
    nb::gil_scoped_acquire gil;
    auto it = live_.find(data);
    if (it == live_.end()) return;
    Py_DECREF(it->second);
    live_.erase(it);
  }

 private:
  PyObject* allocate_;
  std::map<void*, PyObject*> live_;
};

// The Python-side batch: shares the C++ Batch (moved out of Next()) with the views made from it.
struct PyBatch {
  std::shared_ptr<Batch> batch;
  DType dtype = DType::kFloat32;
  OutputLayout layout = OutputLayout::kChw;
  int32_t height = 0, width = 0;
  // A variable-size preset (Qwen2-VL) or one of rows (Pix2Struct): pixels are rows of `row`
  // values, as many as the batch's pages have together.
  bool variable = false;
  size_t row = 0;

  void RequireValid() const {
    if (!batch->valid()) RaiseClosed("this docfeed batch was released");
  }
};

// What keeps a view's memory alive: a plain capsule sharing the C++ Batch, not the Python
// Batch object. A view that outlives the interpreter's cleanup (held by a daemon thread's frame,
// or any object Python never frees) then keeps only the C++ batch, which needs nothing at exit,
// instead of a nanobind instance that nanobind reports as leaked. The capsule is freed with the
// GIL held; dropping the Batch takes the scheduler's lock briefly (never held while waiting for
// the GIL) and may free the pool (whose allocator hook takes the GIL itself).
nb::capsule ViewOwner(const PyBatch& b) {
  return nb::capsule(new std::shared_ptr<Batch>(b.batch),
                     [](void* p) noexcept { delete static_cast<std::shared_ptr<Batch>*>(p); });
}

template <typename T>
nb::object View(const PyBatch& b, const T* data, std::initializer_list<size_t> shape) {
  // A read-only flag would make torch warn on every batch; the views are writable like any
  // DataLoader output, and writing only affects this batch.
  nb::ndarray<nb::pytorch> array(const_cast<T*>(data), shape.size(), shape.begin(), ViewOwner(b),
                                 nullptr, nb::dtype<T>());
  return nb::cast(array, nb::rv_policy::reference);
}

nb::object Pixels(const PyBatch& b) {
  b.RequireValid();
  if (b.variable) {
    const size_t rows = b.batch->pixel_bytes() / (b.row * DTypeSize(b.dtype));
    size_t shape[2] = {rows, b.row};
    nb::ndarray<nb::pytorch> array(b.batch->pixels(), 2, shape, ViewOwner(b), nullptr,
                                   ToDlpack(b.dtype));
    return nb::cast(array, nb::rv_policy::reference);
  }
  const size_t n = b.batch->size();
  const size_t h = static_cast<size_t>(b.height), w = static_cast<size_t>(b.width);
  size_t shape[4] = {n, 3, h, w};
  if (b.layout == OutputLayout::kHwc) {
    shape[1] = h;
    shape[2] = w;
    shape[3] = 3;
  }
  nb::ndarray<nb::pytorch> array(b.batch->pixels(), 4, shape, ViewOwner(b), nullptr,
                                 ToDlpack(b.dtype));
  return nb::cast(array, nb::rv_policy::reference);
}

// The one place that turns the binding's typed keyword arguments into LoaderOptions. Integers
// are range-checked here (ToInt: an InvalidArgumentError naming the parameter and its range);
// the combinations (rank < world_size, a preprocessed dataset's size, ...) are Loader::Create's.
LoaderOptions MakeOptions(
    const std::string& path, nb::handle height, nb::handle width, bool align_long_axis,
    nb::handle hf_version, const std::string& backend, nb::handle batch_size, bool shuffle,
    nb::handle seed, const std::string& pad, const std::string& dtype, const std::string& layout,
    nb::handle rank, nb::handle world_size, const std::string& remainder, nb::handle num_threads,
    nb::handle prefetch, nb::handle max_held, const std::string& label_column,
    nb::handle label_length, const std::string& on_error, nb::handle max_bad_samples,
    const std::optional<std::array<double, 3>>& image_mean,
    const std::optional<std::array<double, 3>>& image_std, nb::handle allocator,
    const std::string& preset, nb::handle min_pixels, nb::handle max_pixels, nb::handle patch_size,
    nb::handle temporal_patch_size, nb::handle merge_size, nb::handle longest_edge,
    nb::handle max_image_size, bool do_image_splitting, nb::handle max_patches,
    nb::handle patch_height, nb::handle patch_width, const std::string& range_prefetch,
    nb::handle prefetch_bytes, nb::handle prefetch_requests) {
  constexpr int kIntMax = std::numeric_limits<int>::max();
  LoaderOptions opt;
  opt.path = path;
  opt.preset.name = preset;
  QwenVLConfig& qwen = opt.preset.qwen_vl;
  qwen.min_pixels = ToInt<int64_t>("min_pixels", min_pixels, 1);
  qwen.max_pixels = ToInt<int64_t>("max_pixels", max_pixels, 1);
  qwen.patch_size = ToInt<int32_t>("patch_size", patch_size, 1, 1024);
  qwen.temporal_patch_size = ToInt<int32_t>("temporal_patch_size", temporal_patch_size, 1, 1024);
  qwen.merge_size = ToInt<int32_t>("merge_size", merge_size, 1, 1024);
  qwen.hf_version = ToInt<int32_t>("hf_version", hf_version, 4, 5);
  opt.preset.donut.height = ToInt<int32_t>("height", height, 1, 65535);
  opt.preset.donut.width = ToInt<int32_t>("width", width, 1, 65535);
  opt.preset.donut.align_long_axis = align_long_axis;
  opt.preset.donut.hf_version = ToInt<int32_t>("hf_version", hf_version, 4, 5);
  Result<DonutBackend> parsed_backend = ParseDonutBackend(backend);
  if (!parsed_backend.ok()) Raise(parsed_backend.status());
  opt.preset.donut.backend = parsed_backend.value();
  qwen.backend = parsed_backend.value();
  if (opt.preset.donut.backend == DonutBackend::kTorchvision && opt.preset.donut.hf_version != 5) {
    RaiseInvalid(
        "backend=\"torchvision\" needs hf_version=5 (transformers 4's fast processor is "
        "not reproduced)");
  }
  // Nougat's output size, alignment and generation are the same arguments as Donut's.
  NougatConfig& nougat = opt.preset.nougat;
  nougat.height = opt.preset.donut.height;
  nougat.width = opt.preset.donut.width;
  nougat.align_long_axis = align_long_axis;
  nougat.hf_version = opt.preset.donut.hf_version;
  if (preset == "nougat" && opt.preset.donut.backend != DonutBackend::kPil) {
    RaiseInvalid(
        "backend=\"torchvision\" is Donut's; the nougat preset reproduces the PIL processors "
        "(NougatImageProcessor of 4.x, NougatImageProcessorPil of 5.x)");
  }
  // Idefics3's generation is the same argument as Donut's; its sizes are its own.
  Idefics3Config& idefics3 = opt.preset.idefics3;
  idefics3.longest_edge = ToInt<int32_t>("longest_edge", longest_edge, 1, 8192);
  idefics3.max_image_size = ToInt<int32_t>("max_image_size", max_image_size, 1, 8192);
  idefics3.do_image_splitting = do_image_splitting;
  idefics3.hf_version = opt.preset.donut.hf_version;
  if (preset == "idefics3" && opt.preset.donut.backend != DonutBackend::kPil) {
    RaiseInvalid(
        "backend=\"torchvision\" is Donut's; the idefics3 preset reproduces the PIL processors "
        "(Idefics3ImageProcessor of 4.x, Idefics3ImageProcessorPil of 5.x)");
  }
  // Pix2Struct: its own patch budget and patch size; its generation is Donut's argument.
  Pix2StructConfig& pix2struct = opt.preset.pix2struct;
  pix2struct.max_patches = ToInt<int32_t>("max_patches", max_patches, 1, 65536);
  pix2struct.patch_height = ToInt<int32_t>("patch_size height", patch_height, 1, 256);
  pix2struct.patch_width = ToInt<int32_t>("patch_size width", patch_width, 1, 256);
  pix2struct.hf_version = opt.preset.donut.hf_version;
  if (preset == "pix2struct" && opt.preset.donut.backend != DonutBackend::kPil) {
    RaiseInvalid(
        "backend=\"torchvision\" is Donut's; the pix2struct preset reproduces the numpy "
        "processors (Pix2StructImageProcessor of 4.x, Pix2StructImageProcessorPil of 5.x)");
  }
  opt.batch_size = ToInt<uint32_t>("batch_size", batch_size, 1);
  opt.shuffle = shuffle;
  opt.seed = ToInt<uint64_t>("seed", seed);
  if (pad == "random") {
    opt.preset.pad = PadMode::kRandom;
  } else if (pad == "center") {
    opt.preset.pad = PadMode::kCenter;
  } else {
    RaiseInvalid("pad must be 'random' or 'center', not '" + pad + "'");
  }
  opt.dtype = ParseDType(dtype);
  opt.image_mean = image_mean;
  opt.image_std = image_std;
  if (layout != "chw" && layout != "hwc") {
    RaiseInvalid("layout must be 'chw' or 'hwc', not '" + layout + "'");
  }
  opt.layout = layout == "chw" ? OutputLayout::kChw : OutputLayout::kHwc;
  opt.rank = ToInt<uint32_t>("rank", rank);
  opt.world_size = ToInt<uint32_t>("world_size", world_size, 1);
  Result<Remainder> parsed_remainder = ParseRemainder(remainder);
  if (!parsed_remainder.ok()) Raise(parsed_remainder.status());
  opt.remainder = parsed_remainder.value();
  opt.num_threads = ToInt<int>("num_threads", num_threads, 0, kIntMax);
  opt.prefetch = ToInt<int>("prefetch", prefetch, 1, kIntMax);
  opt.max_held = ToInt<int>("max_held", max_held, 1, kIntMax);
  if (range_prefetch == "auto") {
    opt.range_prefetch = RangePrefetch::kAuto;
  } else if (range_prefetch == "on") {
    opt.range_prefetch = RangePrefetch::kOn;
  } else if (range_prefetch == "off") {
    opt.range_prefetch = RangePrefetch::kOff;
  } else {
    Raise(InvalidArgumentError("range_prefetch must be \"auto\", \"on\" or \"off\", not \"" +
                               range_prefetch + "\""));
  }
  opt.prefetch_bytes = ToInt<uint64_t>("prefetch_bytes", prefetch_bytes, 1);
  opt.prefetch_requests = ToInt<int>("prefetch_requests", prefetch_requests, 1, 1024);
  opt.label_column = label_column;
  opt.label_length = ToInt<uint32_t>("label_length", label_length);
  if (on_error == "raise") {
    opt.on_error = BadSamplePolicy::kError;
  } else if (on_error == "skip") {
    opt.on_error = BadSamplePolicy::kSkip;
  } else {
    RaiseInvalid("on_error must be 'raise' or 'skip', not '" + on_error + "'");
  }
  opt.max_bad_samples = ToInt<uint64_t>("max_bad_samples", max_bad_samples);
  if (!allocator.is_none()) {
    auto alloc = std::make_shared<PyAllocator>(nb::borrow(allocator));
    opt.allocator.allocate = [alloc](size_t bytes) { return alloc->Allocate(bytes); };
    opt.allocator.release = [alloc](void* data, size_t) { alloc->Release(data); };
  }
  return opt;
}

// The loader object of the module. Every method takes its own reference to the C++ Loader
// (under the GIL) before releasing the GIL, so close() on another thread never frees a Loader
// a call is still inside: close() stops it at once (Loader::Close wakes a blocked next(), which
// raises LoaderClosedError) and the Loader is freed by whichever of them lets go last. After
// fork() the child inherits the Loader but not its threads: its calls fail with
// FailedPreconditionError and destroying it leaks instead of joining (pipeline/loader.h);
// docfeed.Loader re-creates one in the child.
struct PyLoader {
  explicit PyLoader(std::unique_ptr<Loader> l) : loader(std::move(l)) {}
  PyLoader(const PyLoader&) = delete;
  PyLoader& operator=(const PyLoader&) = delete;
  // Joining the workers (and freeing the pool, whose allocator hook takes the GIL itself) must
  // not hold the GIL.
  ~PyLoader() {
    if (!loader) return;
    if (!Py_IsInitialized()) {
      loader.reset();
      return;
    }
    nb::gil_scoped_release nogil;
    loader.reset();
  }
  std::shared_ptr<Loader> loader;  // null once closed; touched only with the GIL
  bool variable = false;           // the preset's output size follows the page (Qwen2-VL)
  size_t row = 0;                  // then: values per output row (a patch)
  // REQUIRES: the GIL.
  std::shared_ptr<Loader> get() {
    if (!loader) RaiseClosed("this docfeed loader was closed");
    return loader;
  }
  void Close() {
    std::shared_ptr<Loader> own = std::move(loader);  // later calls raise LoaderClosedError
    if (!own) return;
    nb::gil_scoped_release nogil;
    own->Close();  // wakes other threads' next(); joins the workers
    own.reset();   // frees it unless a call on another thread still holds it
  }
};

// A failed loader call: Cancelled comes only from a loader that close() stopped (possibly while
// this call waited), so it is the "closed" kind like every call after close().
[[noreturn]] void RaiseLoaderError(const Status& status) {
  if (status.code() == StatusCode::kCancelled) {
    RaiseClosed("this docfeed loader was closed while the call waited (" +
                std::string(status.message()) + ")");
  }
  Raise(status);
}

// Runs `call` on the loader without the GIL, holding a reference so that a concurrent close()
// cannot free it; the reference is dropped without the GIL too.
template <typename F>
auto WithoutGil(PyLoader& l, F call) {
  std::shared_ptr<Loader> loader = l.get();
  nb::gil_scoped_release nogil;
  auto result = call(*loader);
  loader.reset();
  return result;
}

// Every field of LoaderStats, in declaration order (docfeed/loader.h): stages as (count,
// seconds), counters as ints, bad_sample_errors as a list of str. STATS_FIELDS exposes the
// names so a test can hold them against the struct.
constexpr const char* kStatsFields[] = {"read",
                                        "decode",
                                        "resize",
                                        "decode_resize",
                                        "pad_normalize",
                                        "buffer_wait",
                                        "consumer_wait",
                                        "batches",
                                        "samples",
                                        "stored_bytes",
                                        "bad_samples",
                                        "bad_sample_errors",
                                        "ready_depth_sum",
                                        "pool_buffers",
                                        "pool_bytes",
                                        "remote"};

// A LoaderState as the dict docfeed.Loader.state_dict() builds on: seed, epoch, position,
// world_size, batch_size (the reporting loader's shape) and elastic (its last resume's mode).
nb::dict StateDict(const LoaderState& s) {
  nb::dict d;
  d["seed"] = s.seed;
  d["epoch"] = s.epoch;
  d["position"] = s.position;
  d["world_size"] = s.world_size;
  d["batch_size"] = s.batch_size;
  d["elastic"] = std::string(ElasticModeName(s.elastic));
  return d;
}

nb::dict StatsDict(const LoaderStats& s) {
  nb::dict d;
  auto stage = [](const StageTime& t) {
    return nb::make_tuple(t.count, static_cast<double>(t.nanos) * 1e-9);
  };
  d["read"] = stage(s.read);
  d["decode"] = stage(s.decode);
  d["resize"] = stage(s.resize);
  d["decode_resize"] = stage(s.decode_resize);
  d["pad_normalize"] = stage(s.pad_normalize);
  d["buffer_wait"] = stage(s.buffer_wait);
  d["consumer_wait"] = stage(s.consumer_wait);
  d["batches"] = s.batches;
  d["samples"] = s.samples;
  d["stored_bytes"] = s.stored_bytes;
  d["bad_samples"] = s.bad_samples;
  d["bad_sample_errors"] = nb::cast(s.bad_sample_errors);
  d["ready_depth_sum"] = s.ready_depth_sum;
  d["pool_buffers"] = s.pool_buffers;
  d["pool_bytes"] = s.pool_bytes;
  nb::dict r;
  r["prefetching"] = s.remote.prefetching;
  r["requests"] = s.remote.requests;
  r["bytes_fetched"] = s.remote.bytes_fetched;
  r["bytes_used"] = s.remote.bytes_used;
  r["coalesced"] = s.remote.coalesced;
  r["refetches"] = s.remote.refetches;
  r["direct_reads"] = s.remote.direct_reads;
  r["rereads"] = s.remote.rereads;
  r["retries"] = s.remote.retries;
  r["throttled"] = s.remote.throttled;
  r["throttle_waits"] = s.remote.throttle_waits;
  r["fetch_wait"] = stage(s.remote.fetch_wait);
  r["peak_bytes"] = s.remote.peak_bytes;
  r["cached"] = s.remote.cached;
  r["cache_reads"] = s.remote.cache_reads;
  r["cache_hit_bytes"] = s.remote.cache_hit_bytes;
  r["cache_fetched_bytes"] = s.remote.cache_fetched_bytes;
  r["cache_stored_bytes"] = s.remote.cache_stored_bytes;
  r["cache_bad_blocks"] = s.remote.cache_bad_blocks;
  r["cache_invalidated"] = s.remote.cache_invalidated;
  r["cache_io_errors"] = s.remote.cache_io_errors;
  r["cache_evicted_bytes"] = s.remote.cache_evicted_bytes;
  d["remote"] = r;
  return d;
}

// The process-wide remote Env's counters (docfeed/remote.h): what reading s3:// and http(s)://
// datasets has cost so far, for stats next to the loader's.
nb::dict RemoteStatsDict() {
  const RemoteStats s = GetRemoteStats();
  nb::dict d;
  d["requests"] = s.requests;
  d["connections"] = s.connections;
  d["bytes"] = s.bytes;
  d["retries"] = s.retries;
  d["errors"] = s.errors;
  d["throttled"] = s.throttled;
  d["throttle_waits"] = s.throttle_waits;
  d["throttle_wait_s"] = static_cast<double>(s.throttle_wait_ns) / 1e9;
  d["min_concurrency"] = s.min_concurrency;
  return d;
}

// What a dataset's manifest says, without starting a loader: ReadDatasetInfo checks the
// manifest, the index and each data file's schema (no image is read or decoded).
nb::dict DatasetInfoDict(const std::string& path) {
  Result<DatasetInfo> read = [&] {
    nb::gil_scoped_release nogil;
    return ReadDatasetInfo(path);
  }();
  if (!read.ok()) Raise(read.status());
  const DatasetInfo& info = read.value();
  nb::dict d;
  d["path"] = info.path;
  d["num_samples"] = info.num_samples;
  nb::list columns;
  for (const ColumnInfo& c : info.columns) columns.append(nb::make_tuple(c.name, c.type));
  d["columns"] = columns;
  d["label_column"] = info.label_column;
  d["codec"] = info.codec;
  d["compression"] = info.compression;
  d["stored_codecs"] = nb::cast(info.stored_codecs);
  d["source_bytes"] = info.source_bytes;
  d["stored_image_bytes"] = info.stored_image_bytes;
  d["total_bytes"] = info.total_bytes;
  d["rejected"] = info.rejected;
  if (!info.preset.empty()) {
    nb::dict pre;
    pre["preset"] = info.preset;
    pre["height"] = info.height;
    pre["width"] = info.width;
    pre["align_long_axis"] = info.align_long_axis;
    pre["hf_version"] = info.hf_version;
    pre["backend"] = info.backend;
    if (info.preset == kPackPresetIdefics3) {
      pre["longest_edge"] = info.longest_edge;
      pre["max_image_size"] = info.max_image_size;
      pre["do_image_splitting"] = info.do_image_splitting;
    }
    if (info.preset == kPackPresetPix2Struct) {
      pre["stored_form"] = info.stored_form;  // "page" or "patches"
      if (info.stored_form == "patches") {
        pre["max_patches"] = info.max_patches;
        pre["patch_height"] = info.patch_height;
        pre["patch_width"] = info.patch_width;
      }
    }
    d["preprocess"] = pre;
  } else {
    d["preprocess"] = nb::none();
  }
  d["original_column"] = info.original_column;
  d["chat_labels"] = info.chat_labels;  // JSON object text, "" when absent
  return d;
}

// Loader.__init__: typed keyword arguments -> MakeOptions -> Loader::Create (GIL released).
void InitLoader(
    PyLoader* self, const std::string& path, nb::int_ height, nb::int_ width, bool align_long_axis,
    nb::int_ hf_version, const std::string& backend, nb::int_ batch_size, bool shuffle,
    nb::int_ seed, const std::string& pad, const std::string& dtype, const std::string& layout,
    nb::int_ rank, nb::int_ world_size, const std::string& remainder, nb::int_ num_threads,
    nb::int_ prefetch, nb::int_ max_held, const std::string& label_column, nb::int_ label_length,
    const std::string& on_error, nb::int_ max_bad_samples,
    std::optional<std::array<double, 3>> image_mean, std::optional<std::array<double, 3>> image_std,
    nb::object allocator, const std::string& preset, nb::int_ min_pixels, nb::int_ max_pixels,
    nb::int_ patch_size, nb::int_ temporal_patch_size, nb::int_ merge_size, nb::int_ longest_edge,
    nb::int_ max_image_size, bool do_image_splitting, nb::int_ max_patches, nb::int_ patch_height,
    nb::int_ patch_width, const std::string& range_prefetch, nb::int_ prefetch_bytes,
    nb::int_ prefetch_requests, const std::vector<std::pair<std::string, int64_t>>& token_columns,
    nb::int_ token_capacity, const std::string& cache_dir, nb::int_ cache_limit) {
  LoaderOptions opt = MakeOptions(
      path, height, width, align_long_axis, hf_version, backend, batch_size, shuffle, seed, pad,
      dtype, layout, rank, world_size, remainder, num_threads, prefetch, max_held, label_column,
      label_length, on_error, max_bad_samples, image_mean, image_std, allocator, preset, min_pixels,
      max_pixels, patch_size, temporal_patch_size, merge_size, longest_edge, max_image_size,
      do_image_splitting, max_patches, patch_height, patch_width, range_prefetch, prefetch_bytes,
      prefetch_requests);
  for (const auto& [name, pad_value] : token_columns)
    opt.token_columns.push_back({name, pad_value});
  opt.token_capacity = ToInt<uint32_t>("token_capacity", token_capacity);
  opt.cache_dir = cache_dir;
  opt.cache_limit_bytes = ToInt<uint64_t>("cache_limit", cache_limit);
  Result<std::unique_ptr<Loader>> created = [&] {
    nb::gil_scoped_release nogil;
    return Loader::Create(opt);
  }();
  if (!created.ok()) Raise(created.status());
  Result<Preset> shape = Preset::Create(opt.preset);  // Create checked these options already
  if (!shape.ok()) Raise(shape.status());
  new (self) PyLoader(std::move(created).value());
  // Rows of values (a variable-size preset, or Pix2Struct's fixed max_patches rows, whose
  // output is one channel of rows x values) are given as (rows, row) rather than as pages.
  self->variable = shape->variable_size() || shape->output_shape().channels == 1;
  self->row = static_cast<size_t>(shape->output_shape().width);
}

// ---- docfeed.pack: the rows of an in-memory dataset through the C++ packer ----

// The rows' images as a SampleSource (docfeed/pack.h). The listing is the JSON rows Python wrote
// in its first pass, which PackFrom parses and types exactly as metadata.jsonl rows; this source
// knows only how many there are (`total`). The images come from `fetch()`, a
// Python callable returning the next rows' images in row order (a list; each item the encoded
// file as bytes, or a str saying what is wrong with that row; [] once the rows are exhausted).
// The encode workers call ReadImage without the GIL; the one that finds its row not fetched
// yet takes the GIL for one fetch() while holding mu_, so rows arrive in order and the GIL is
// held only to hand over the next rows.
class PyRowSource final : public SampleSource {
 public:
  PyRowSource(size_t total, nb::object fetch) : total_(total), fetch_(fetch.release().ptr()) {}
  ~PyRowSource() override {
    if (!Py_IsInitialized()) return;
    nb::gil_scoped_acquire gil;
    Py_XDECREF(fetch_);
  }
  PyRowSource(const PyRowSource&) = delete;
  PyRowSource& operator=(const PyRowSource&) = delete;

  Result<std::vector<uint8_t>> ReadImage(size_t i) override {
    std::lock_guard<std::mutex> lock(mu_);
    while (fetched_ <= i && fetch_error_.ok()) FetchMore();
    auto it = images_.find(i);
    if (it == images_.end()) {
      if (!fetch_error_.ok()) return fetch_error_;
      return InternalError("row " + std::to_string(i) + " was asked for twice");
    }
    Result<std::vector<uint8_t>> image = std::move(it->second);
    images_.erase(it);
    return image;
  }

  std::string Where(size_t i) const override {
    return "row " + std::to_string(i);  // PackFrom adds the row's file_name
  }
  std::string Name() const override { return "the dataset's rows"; }

 private:
  // REQUIRES: mu_ held. Appends the next rows to images_, or sets fetch_error_.
  void FetchMore() {
    const size_t total = total_;
    nb::gil_scoped_acquire gil;
    try {
      nb::object got = nb::handle(fetch_)();
      size_t added = 0;
      for (nb::handle item : got) {
        if (fetched_ >= total) {
          fetch_error_ = InvalidArgumentError("the rows gave more images than the " +
                                              std::to_string(total) + " rows listed");
          return;
        }
        if (nb::isinstance<nb::bytes>(item)) {
          nb::bytes data = nb::borrow<nb::bytes>(item);
          const auto* begin = static_cast<const uint8_t*>(static_cast<const void*>(data.c_str()));
          images_.emplace(fetched_, std::vector<uint8_t>(begin, begin + data.size()));
        } else if (nb::isinstance<nb::str>(item)) {
          images_.emplace(fetched_, InvalidArgumentError(nb::cast<std::string>(item)));
        } else {
          images_.emplace(
              fetched_,
              InvalidArgumentError("the image is a " +
                                   nb::cast<std::string>(nb::str(item.type().attr("__name__"))) +
                                   ", not bytes"));
        }
        ++fetched_;
        ++added;
      }
      if (added == 0) {
        fetch_error_ =
            InvalidArgumentError("the rows ended after " + std::to_string(fetched_) + " images; " +
                                 std::to_string(total) + " rows were listed");
      }
    } catch (nb::python_error& e) {
      fetch_error_ = InternalError("reading the images from row " + std::to_string(fetched_) +
                                   " on: " + e.what());
    }
  }

  const size_t total_;
  PyObject* fetch_;  // owned; touched only with the GIL
  std::mutex mu_;
  size_t fetched_ = 0;                                     // guarded by mu_
  std::map<size_t, Result<std::vector<uint8_t>>> images_;  // guarded by mu_
  Status fetch_error_;                                     // guarded by mu_
};

// pack_rows' / pack_path's longest_edge, max_image_size and do_image_splitting (None: not given).
struct Idefics3PackSizes {
  nb::handle longest_edge, max_image_size, do_image_splitting;

  bool given() const {
    return !longest_edge.is_none() || !max_image_size.is_none() || !do_image_splitting.is_none();
  }
};

// preprocess="idefics3": the sizes given (unset ones keep PackPreprocess's defaults, the
// processor's), with the bounds of `docfeed pack --longest-edge ...`; other presets' refused.
void SetIdefics3Sizes(const Idefics3PackSizes& sizes, bool other_sizes, PackPreprocess* p) {
  if (other_sizes) {
    RaiseInvalid(
        "size, align_long_axis, min_pixels, max_pixels, patch_size and merge_size are other "
        "presets', not idefics3's (it takes longest_edge, max_image_size and "
        "do_image_splitting)");
  }
  if (!sizes.longest_edge.is_none()) {
    p->longest_edge = ToInt<int32_t>("longest_edge", sizes.longest_edge, 1, 8192);
  }
  if (!sizes.max_image_size.is_none()) {
    p->max_image_size = ToInt<int32_t>("max_image_size", sizes.max_image_size, 1, 8192);
  }
  if (!sizes.do_image_splitting.is_none()) {
    p->do_image_splitting = nb::cast<bool>(sizes.do_image_splitting);
  }
}

// pack_rows' / pack_path's stored_form and max_patches (None: not given); patch_size is shared
// with the Qwen presets and read by the preset that takes it.
struct Pix2StructPackForm {
  nb::handle stored_form, max_patches;

  bool given() const { return !stored_form.is_none() || !max_patches.is_none(); }
};

// Pix2Struct's patch_size: an int (square), (height, width), or the processor's
// {"height": h, "width": w}, with the bounds of `docfeed pack --patch-size`.
void SetPix2StructPatchSize(nb::handle patch_size, PackPreprocess* p) {
  nb::handle height = patch_size;
  nb::handle width = patch_size;
  nb::object h_item, w_item;  // keep items taken out of a dict or sequence alive
  if (nb::isinstance<nb::dict>(patch_size)) {
    nb::dict d = nb::borrow<nb::dict>(patch_size);
    if (d.size() != 2 || !d.contains("height") || !d.contains("width")) {
      RaiseInvalid("patch_size must be an int, (height, width) or {\"height\": h, \"width\": w}");
    }
    h_item = d["height"];
    w_item = d["width"];
    height = h_item;
    width = w_item;
  } else if (nb::isinstance<nb::tuple>(patch_size) || nb::isinstance<nb::list>(patch_size)) {
    if (nb::len(patch_size) != 2) {
      RaiseInvalid("patch_size must be an int, (height, width) or {\"height\": h, \"width\": w}");
    }
    h_item = patch_size[0];
    w_item = patch_size[1];
    height = h_item;
    width = w_item;
  }
  p->patch_height = ToInt<int32_t>("patch_size height", height, 1, 256);
  p->patch_width = ToInt<int32_t>("patch_size width", width, 1, 256);
}

// preprocess="pix2struct": stored_form "page" (default: the page at its own size; max_patches
// is the loader's) or "patches" with max_patches and patch_size (unset ones keep
// PackPreprocess's defaults, the processor's), checked as `docfeed pack --stored-form ...`.
void SetPix2StructForm(const Pix2StructPackForm& form, nb::handle patch_size, PackPreprocess* p) {
  if (!form.stored_form.is_none()) {
    std::string stored;
    if (!nb::try_cast(form.stored_form, stored) || (stored != "page" && stored != "patches")) {
      RaiseInvalid("stored_form must be \"page\" or \"patches\", not " +
                   nb::cast<std::string>(nb::repr(form.stored_form)));
    }
    p->stored_form = stored;
  }
  if (p->stored_form != "patches") {
    if (!form.max_patches.is_none() || !patch_size.is_none()) {
      RaiseInvalid(
          "max_patches and patch_size need stored_form=\"patches\" (the page form serves any "
          "max_patches: give it to the loader)");
    }
    return;
  }
  if (!form.max_patches.is_none()) {
    p->max_patches = ToInt<int32_t>("max_patches", form.max_patches, 1, 65536);
  }
  if (!patch_size.is_none()) SetPix2StructPatchSize(patch_size, p);
}

// The one place that turns pack_rows' typed keyword arguments into PackOptions, with the
// checks and defaults of `docfeed pack` (tools/docfeed/pack_command.cc).
PackOptions MakePackOptions(const std::string& output, const std::string& codec,
                            nb::handle jpeg_quality, nb::handle threads, bool overwrite,
                            bool skip_bad, bool strict,
                            const std::optional<std::string>& compression,
                            const std::string& preprocess,
                            const std::optional<std::array<int64_t, 2>>& size, bool align_long_axis,
                            nb::handle hf_version, const std::string& backend, bool keep_original,
                            nb::handle max_file_mb, const std::string& validate,
                            nb::handle min_pixels, nb::handle max_pixels, nb::handle patch_size,
                            nb::handle merge_size, const Idefics3PackSizes& idefics3,
                            const Pix2StructPackForm& pix2struct_form) {
  PackOptions o;
  o.output = output;
  Result<PackCodec> parsed_codec = ParsePackCodec(codec);
  if (!parsed_codec.ok()) Raise(parsed_codec.status());
  o.codec = parsed_codec.value();
  o.jpeg_quality = ToInt<int>("jpeg_quality", jpeg_quality, 1, 100);
  o.threads = ToInt<int>("threads", threads, 0, 1024);
  o.overwrite = overwrite;
  o.skip_bad = skip_bad;
  o.strict = strict;
  o.max_file_bytes = uint64_t{ToInt<uint32_t>("max_file_mb", max_file_mb, 1, 1 << 20)} * 1'000'000;
  Result<PackValidation> parsed_validate = ParsePackValidation(validate);
  if (!parsed_validate.ok()) Raise(parsed_validate.status().WithContext("validate"));
  o.validate = parsed_validate.value();
  const bool has_qwen_sizes = !min_pixels.is_none() || !max_pixels.is_none() ||
                              !patch_size.is_none() || !merge_size.is_none();
  // Pix2Struct takes patch_size too: only these are the Qwen presets' alone.
  const bool has_qwen_only_sizes =
      !min_pixels.is_none() || !max_pixels.is_none() || !merge_size.is_none();
  const bool qwen = preprocess == kPackPresetQwen2VL || preprocess == kPackPresetQwen25VL;
  if (preprocess.empty()) {
    if (size || align_long_axis || keep_original || !hf_version.is_none() || backend != "pil" ||
        has_qwen_sizes || idefics3.given() || pix2struct_form.given()) {
      RaiseInvalid(
          "size, align_long_axis, hf_version, backend, keep_original, min_pixels, max_pixels, "
          "patch_size, merge_size, longest_edge, max_image_size, do_image_splitting, "
          "stored_form and max_patches need "
          "preprocess= (\"donut\", \"nougat\", \"qwen2-vl\", \"qwen2.5-vl\", \"idefics3\" or "
          "\"pix2struct\")");
    }
  } else {
    const bool nougat = preprocess == kPackPresetNougat;
    const bool tiled = preprocess == kPackPresetIdefics3;
    const bool pix2struct = preprocess == kPackPresetPix2Struct;
    if (preprocess != kPackPresetDonut && !qwen && !nougat && !tiled && !pix2struct) {
      RaiseInvalid(
          "preprocess must be \"donut\", \"nougat\", \"qwen2-vl\", \"qwen2.5-vl\", "
          "\"idefics3\" or \"pix2struct\", not \"" +
          preprocess + "\"");
    }
    if (o.codec != PackCodec::kKeep) {
      RaiseInvalid("codec does not apply with preprocess (pages are stored as PGM/PPM)");
    }
    if (!tiled && idefics3.given()) {
      RaiseInvalid(
          "longest_edge, max_image_size and do_image_splitting are the idefics3 "
          "preset's, not " +
          preprocess + "'s");
    }
    if (!pix2struct && pix2struct_form.given()) {
      RaiseInvalid("stored_form and max_patches are the pix2struct preset's, not " + preprocess +
                   "'s");
    }
    o.preprocess.preset = preprocess;
    if (tiled) {
      SetIdefics3Sizes(idefics3, size || align_long_axis || has_qwen_sizes, &o.preprocess);
    } else if (pix2struct) {
      if (size || align_long_axis || has_qwen_only_sizes) {
        RaiseInvalid(
            "size, align_long_axis, min_pixels, max_pixels and merge_size are other presets', "
            "not pix2struct's (it stores the decoded page at its own size, or with "
            "stored_form=\"patches\" its patches for max_patches and patch_size)");
      }
      SetPix2StructForm(pix2struct_form, patch_size, &o.preprocess);
    } else if (qwen) {
      if (size || align_long_axis) {
        RaiseInvalid("size and align_long_axis are Donut's, not " + preprocess +
                     "'s (it takes min_pixels and max_pixels)");
      }
      // The bounds and defaults of `docfeed pack --min-pixels ...` (tools/docfeed/pack_command.cc).
      constexpr int64_t kMaxArea = int64_t{1} << 40;
      // Unset ones keep PackPreprocess's defaults (the processor's).
      if (!min_pixels.is_none()) {
        o.preprocess.min_pixels = ToInt<int64_t>("min_pixels", min_pixels, 1, kMaxArea);
      }
      if (!max_pixels.is_none()) {
        o.preprocess.max_pixels = ToInt<int64_t>("max_pixels", max_pixels, 1, kMaxArea);
      }
      if (!patch_size.is_none()) {
        o.preprocess.patch_size = ToInt<int32_t>("patch_size", patch_size, 1, 1024);
      }
      if (!merge_size.is_none()) {
        o.preprocess.merge_size = ToInt<int32_t>("merge_size", merge_size, 1, 1024);
      }
    } else {
      if (has_qwen_sizes) {
        RaiseInvalid(
            "min_pixels, max_pixels, patch_size and merge_size are the Qwen2-VL presets', not " +
            preprocess + "'s");
      }
      if (!size && !nougat) RaiseInvalid("preprocess=\"donut\" needs size=(height, width)");
      if (size) {
        o.preprocess.height = ToInt<int32_t>("size[0] (height)", nb::int_((*size)[0]), 1, 65535);
        o.preprocess.width = ToInt<int32_t>("size[1] (width)", nb::int_((*size)[1]), 1, 65535);
      } else {  // Nougat's default: the processor's (and facebook/nougat-base's) 896 x 672
        o.preprocess.height = 896;
        o.preprocess.width = 672;
      }
      o.preprocess.align_long_axis = align_long_axis;
    }
    o.preprocess.hf_version =
        hf_version.is_none() ? 4 : ToInt<int32_t>("hf_version", hf_version, 4, 5);
    if (backend != "pil" && backend != "torchvision") {
      RaiseInvalid("backend must be \"pil\" or \"torchvision\", not \"" + backend + "\"");
    }
    if (backend == "torchvision" && o.preprocess.hf_version != 5) {
      RaiseInvalid("backend=\"torchvision\" needs hf_version=5");
    }
    if (backend != "pil" && (nougat || tiled || pix2struct)) {
      RaiseInvalid("backend=\"torchvision\" is not offered for " + preprocess +
                   " (the preset reproduces the PIL processors)");
    }
    o.preprocess.backend = backend;
    o.preprocess.keep_original = keep_original;
  }
  if (o.validate == PackValidation::kStructure &&
      (o.codec != PackCodec::kKeep || !o.preprocess.preset.empty())) {
    RaiseInvalid(
        "validate=\"structure\" applies to codec=\"keep\" only (re-encoding and preprocess "
        "decode every image)");
  }
  o.compression =
      compression.value_or(o.preprocess.preset.empty() ? "none" : kPreprocessedDefaultCompression);
  if (o.compression != "none" && o.compression != "zstd" && o.compression != "lz4_frame") {
    RaiseInvalid("compression must be none, zstd or lz4_frame, not " + o.compression);
  }
  return o;
}

// `part`: None (the whole source) or (index, count), checked as `pack --part I/N`.
void SetPart(nb::handle part, PackOptions* o) {
  if (part.is_none()) return;
  nb::tuple pair;
  if (!nb::try_cast(part, pair) || pair.size() != 2) {
    RaiseInvalid("part must be None or a pair (index, count), e.g. (0, 4)");
  }
  const auto count = ToInt<uint32_t>("part[1] (count)", pair[1], 1, 1'000'000);
  const auto index = ToInt<uint32_t>("part[0] (index)", pair[0], 0, count - 1);
  o->part_index = index;
  o->part_count = count;
}

nb::dict PackSummaryDict(const PackSummary& s) {
  nb::dict d;
  d["already_complete"] = s.already_complete;
  d["samples"] = s.samples;
  d["rejected"] = s.rejected;
  d["source_bytes"] = s.source_bytes;
  d["stored_image_bytes"] = s.stored_image_bytes;
  d["output_bytes"] = s.output_bytes;
  d["stored_codecs"] = nb::cast(s.stored_codecs);
  d["data_files"] = nb::cast(s.data_files);
  d["seconds"] = s.seconds;
  nb::list warned;
  for (const DecodeWarning& w : s.decode_warnings) {
    nb::dict entry;
    entry["file_name"] = w.file_name;
    entry["warnings"] = w.warnings;
    entry["first"] = w.first;
    warned.append(entry);
  }
  d["decode_warnings"] = warned;
  return d;
}

// The rows PackFrom will list: lines with anything but blanks (as metadata.jsonl is read).
size_t CountRows(std::string_view rows) {
  size_t count = 0;
  for (size_t pos = 0; pos < rows.size();) {
    size_t end = rows.find('\n', pos);
    if (end == std::string_view::npos) end = rows.size();
    if (rows.substr(pos, end - pos).find_first_not_of(" \t\r") != std::string_view::npos) ++count;
    pos = end + 1;
  }
  return count;
}

nb::dict PackRows(const std::string& output, const std::string& rows, nb::object fetch,
                  const std::string& codec, nb::int_ jpeg_quality, nb::int_ threads, bool overwrite,
                  bool skip_bad, bool strict, std::optional<std::string> compression,
                  const std::string& preprocess, std::optional<std::array<int64_t, 2>> size,
                  bool align_long_axis, nb::object hf_version, const std::string& backend,
                  bool keep_original, nb::int_ max_file_mb, const std::string& validate,
                  nb::object min_pixels, nb::object max_pixels, nb::object patch_size,
                  nb::object merge_size, nb::object longest_edge, nb::object max_image_size,
                  nb::object do_image_splitting, nb::object part, const std::string& chat_labels,
                  nb::object stored_form, nb::object max_patches) {
  PackOptions options = MakePackOptions(
      output, codec, jpeg_quality, threads, overwrite, skip_bad, strict, compression, preprocess,
      size, align_long_axis, hf_version, backend, keep_original, max_file_mb, validate, min_pixels,
      max_pixels, patch_size, merge_size, {longest_edge, max_image_size, do_image_splitting},
      {stored_form, max_patches});
  SetPart(part, &options);
  options.chat_labels = chat_labels;
  PyRowSource source(CountRows(rows), std::move(fetch));
  Result<PackSummary> packed = [&] {
    nb::gil_scoped_release nogil;
    return PackFrom(rows, source, options);
  }();
  if (!packed.ok()) Raise(packed.status());
  return PackSummaryDict(packed.value());
}

// Packs the folder or Hugging Face dataset at `source` (Pack: an image folder, a save_to_disk
// Dataset/DatasetDict or a load_dataset cache directory).
nb::dict PackPath(const std::string& source, const std::string& output, const std::string& codec,
                  nb::int_ jpeg_quality, nb::int_ threads, bool overwrite, bool skip_bad,
                  bool strict, std::optional<std::string> compression,
                  const std::string& preprocess, std::optional<std::array<int64_t, 2>> size,
                  bool align_long_axis, nb::object hf_version, const std::string& backend,
                  bool keep_original, nb::int_ max_file_mb, const std::string& split,
                  const std::string& image_root, nb::int_ dpi, const std::string& pages,
                  const std::string& validate, nb::object min_pixels, nb::object max_pixels,
                  nb::object patch_size, nb::object merge_size, nb::object longest_edge,
                  nb::object max_image_size, nb::object do_image_splitting, nb::object part,
                  nb::object stored_form, nb::object max_patches) {
  PackOptions options = MakePackOptions(
      output, codec, jpeg_quality, threads, overwrite, skip_bad, strict, compression, preprocess,
      size, align_long_axis, hf_version, backend, keep_original, max_file_mb, validate, min_pixels,
      max_pixels, patch_size, merge_size, {longest_edge, max_image_size, do_image_splitting},
      {stored_form, max_patches});
  SetPart(part, &options);
  options.source = source;
  options.split = split;
  options.image_root = image_root;
  // The bounds and names of `docfeed pack --dpi/--pages` (tools/docfeed/pack_command.cc).
  options.pdf_dpi = ToInt<int32_t>("dpi", dpi, 1, 2400);
  Result<PackPages> parsed_pages = ParsePackPages(pages);
  if (!parsed_pages.ok()) Raise(parsed_pages.status().WithContext("pages"));
  options.pages = parsed_pages.value();
  Result<PackSummary> packed = [&] {
    nb::gil_scoped_release nogil;
    return Pack(options);
  }();
  if (!packed.ok()) Raise(packed.status());
  nb::dict summary = PackSummaryDict(packed.value());
  summary["splits"] = nb::cast(packed->splits);
  return summary;
}

// docfeed/merge.h's Merge: the parts of a split pack joined into `output`.
nb::dict MergeParts(const std::vector<std::string>& parts, const std::string& output,
                    bool overwrite) {
  MergeOptions options;
  options.parts = parts;
  options.output = output;
  options.overwrite = overwrite;
  Result<MergeSummary> merged = [&] {
    nb::gil_scoped_release nogil;
    return Merge(options);
  }();
  if (!merged.ok()) Raise(merged.status());
  const MergeSummary& s = merged.value();
  nb::dict d;
  d["parts"] = s.parts;
  d["samples"] = s.samples;
  d["rejected"] = s.rejected;
  d["data_files"] = s.data_files;
  d["linked_files"] = s.linked_files;
  d["copied_files"] = s.copied_files;
  d["server_copied_files"] = s.server_copied_files;
  d["output_bytes"] = s.output_bytes;
  d["already_complete"] = s.already_complete;
  d["seconds"] = s.seconds;
  return d;
}

}  // namespace
}  // namespace docfeed

NB_MODULE(_docfeed, m) {
  using namespace docfeed;
  m.doc() = "docfeed's C++ loader (internal; use docfeed.Loader)";
  LoadErrorTypes();
  static const LoaderOptions kDefaults;

  nb::list stats_fields;
  for (const char* name : kStatsFields) stats_fields.append(name);
  m.attr("STATS_FIELDS") = nb::tuple(stats_fields);
  m.def(
      "_raise_status",
      [](int code, const std::string& message) {
        if (code <= 0 || code > static_cast<int>(StatusCode::kFailedPrecondition)) {
          RaiseInvalid("no StatusCode " + std::to_string(code));
        }
        Raise(Status(static_cast<StatusCode>(code), message));
      },
      "code"_a, "message"_a,
      "For tests: raises what a C++ Status with this StatusCode value becomes.");
  m.def("remote_stats", &RemoteStatsDict,
        "Requests, bytes, retries, errors and throttling of the remote reads (s3://, http(s)://) "
        "so far, over the whole process.");
  m.def(
      "read_file",
      [](const std::string& path) {
        Result<std::vector<uint8_t>> read = [&] {
          nb::gil_scoped_release nogil;
          return EnvForPath(path)->ReadFile(path);
        }();
        if (!read.ok()) Raise(read.status());
        return nb::bytes(reinterpret_cast<const char*>(read->data()), read->size());
      },
      "path"_a,
      "The bytes of a file, or of an object at an s3:// or http(s):// URL, read as docfeed reads "
      "datasets (docfeed.ray reads the parts' rejects.jsonl with it).");
  m.def(
      "page_size",
      [](nb::bytes data) {
        const std::span<const uint8_t> bytes(static_cast<const uint8_t*>(data.data()), data.size());
        Result<PageSize> size = ProbePageSize(bytes);
        if (!size.ok()) Raise(size.status());
        return std::make_tuple(size->height, size->width);
      },
      "data"_a,
      "(height, width) of the page in image file bytes as `datasets` decodes it (after the EXIF "
      "orientation), from its headers.");
  m.def(
      "page_grid",
      [](const std::string& preset, nb::handle height, nb::handle width, nb::handle min_pixels,
         nb::handle max_pixels, nb::handle patch_size, nb::handle merge_size,
         nb::handle longest_edge, nb::handle max_image_size, bool do_image_splitting) {
        PresetOptions options;
        options.name = preset;
        options.qwen_vl.min_pixels = ToInt<int64_t>("min_pixels", min_pixels, 1);
        options.qwen_vl.max_pixels = ToInt<int64_t>("max_pixels", max_pixels, 1);
        options.qwen_vl.patch_size = ToInt<int32_t>("patch_size", patch_size, 1, 1024);
        options.qwen_vl.merge_size = ToInt<int32_t>("merge_size", merge_size, 1, 1024);
        options.idefics3.longest_edge = ToInt<int32_t>("longest_edge", longest_edge, 1, 8192);
        options.idefics3.max_image_size = ToInt<int32_t>("max_image_size", max_image_size, 1, 8192);
        options.idefics3.do_image_splitting = do_image_splitting;
        const int32_t h = ToInt<int32_t>("height", height, 1);
        const int32_t w = ToInt<int32_t>("width", width, 1);
        Result<Preset> made = Preset::Create(options);
        if (!made.ok()) Raise(made.status());
        Result<PageGrid> grid = made->GridOf(h, w);
        if (!grid.ok()) Raise(grid.status());
        return std::make_tuple(grid->temporal, grid->rows, grid->cols);
      },
      "preset"_a, "height"_a, "width"_a, nb::kw_only(),
      "min_pixels"_a = kDefaults.preset.qwen_vl.min_pixels,
      "max_pixels"_a = kDefaults.preset.qwen_vl.max_pixels,
      "patch_size"_a = kDefaults.preset.qwen_vl.patch_size,
      "merge_size"_a = kDefaults.preset.qwen_vl.merge_size,
      "longest_edge"_a = kDefaults.preset.idefics3.longest_edge,
      "max_image_size"_a = kDefaults.preset.idefics3.max_image_size,
      "do_image_splitting"_a = kDefaults.preset.idefics3.do_image_splitting,
      "(temporal, rows, cols) of a page of height x width (as decoded) under `preset`: "
      "Qwen2-VL's image_grid_thw, Idefics3's image_rows / image_cols (0, 0: one tile). The "
      "processor's own arithmetic (docfeed::Preset::GridOf).");
  m.def("dataset_info", &DatasetInfoDict, "path"_a,
        "The manifest's facts about a dataset (num_samples, columns, label_column, preprocess, "
        "...) without starting a loader.");

  nb::class_<PyBatch>(m, "Batch")
      .def_prop_ro("valid", [](const PyBatch& b) { return b.batch->valid(); })
      .def_prop_ro("size",
                   [](const PyBatch& b) {
                     b.RequireValid();
                     return b.batch->size();
                   })
      .def_prop_ro("epoch", [](const PyBatch& b) { return b.batch->epoch(); })
      .def_prop_ro("index", [](const PyBatch& b) { return b.batch->index(); })
      .def_prop_ro("buffer_index", [](const PyBatch& b) { return b.batch->buffer_index(); })
      .def_prop_ro("label_length", [](const PyBatch& b) { return b.batch->label_length(); })
      .def_prop_ro("resume_state",
                   [](const PyBatch& b) { return StateDict(b.batch->resume_state()); })
      .def("pixels", [](const PyBatch& b) { return Pixels(b); })
      .def("labels",
           [](const PyBatch& b) -> nb::object {
             b.RequireValid();
             if (b.batch->label_length() == 0) return nb::none();
             return View(b, b.batch->labels(), {b.batch->size(), b.batch->label_length()});
           })
      .def(
          "tokens",
          [](const PyBatch& b, size_t k) -> nb::object {
            b.RequireValid();
            if (k >= b.batch->num_token_columns()) return nb::none();
            return View(b, b.batch->tokens(k), {b.batch->size(), b.batch->token_length()});
          },
          "k"_a, "Token column k (the loader's token_columns order), size x token_length.")
      .def("sample_ids",
           [](const PyBatch& b) {
             b.RequireValid();
             return View(b, b.batch->sample_ids(), {b.batch->size()});
           })
      .def("pad_offsets",
           [](const PyBatch& b) {
             b.RequireValid();
             return View(b, b.batch->pad_offsets(), {b.batch->size(), size_t{2}});
           })
      .def("content_sizes",
           [](const PyBatch& b) {
             b.RequireValid();
             return View(b, b.batch->content_sizes(), {b.batch->size(), size_t{2}});
           })
      .def(
          "release",
          [](PyBatch& b) {
            nb::gil_scoped_release nogil;
            b.batch->Release();
          },
          "Returns the buffer to the pool now. Only safe when no view of it is alive.");

  nb::class_<PyLoader>(m, "Loader")
      .def("__init__", &InitLoader, "path"_a, nb::kw_only(),
           "height"_a = kDefaults.preset.donut.height, "width"_a = kDefaults.preset.donut.width,
           "align_long_axis"_a = kDefaults.preset.donut.align_long_axis,
           "hf_version"_a = kDefaults.preset.donut.hf_version, "backend"_a = "pil",
           "batch_size"_a = kDefaults.batch_size, "shuffle"_a = kDefaults.shuffle,
           "seed"_a = kDefaults.seed, "pad"_a = "random", "dtype"_a = "float32", "layout"_a = "chw",
           "rank"_a = kDefaults.rank, "world_size"_a = kDefaults.world_size, "remainder"_a = "drop",
           "num_threads"_a = kDefaults.num_threads, "prefetch"_a = kDefaults.prefetch,
           "max_held"_a = kDefaults.max_held, "label_column"_a = "",
           "label_length"_a = kDefaults.label_length, "on_error"_a = "raise",
           "max_bad_samples"_a = kDefaults.max_bad_samples, "image_mean"_a = nb::none(),
           "image_std"_a = nb::none(), "allocator"_a = nb::none(), "preset"_a = "donut",
           "min_pixels"_a = kDefaults.preset.qwen_vl.min_pixels,
           "max_pixels"_a = kDefaults.preset.qwen_vl.max_pixels,
           "patch_size"_a = kDefaults.preset.qwen_vl.patch_size,
           "temporal_patch_size"_a = kDefaults.preset.qwen_vl.temporal_patch_size,
           "merge_size"_a = kDefaults.preset.qwen_vl.merge_size,
           "longest_edge"_a = kDefaults.preset.idefics3.longest_edge,
           "max_image_size"_a = kDefaults.preset.idefics3.max_image_size,
           "do_image_splitting"_a = kDefaults.preset.idefics3.do_image_splitting,
           "max_patches"_a = kDefaults.preset.pix2struct.max_patches,
           "patch_height"_a = kDefaults.preset.pix2struct.patch_height,
           "patch_width"_a = kDefaults.preset.pix2struct.patch_width, "range_prefetch"_a = "auto",
           "prefetch_bytes"_a = kDefaults.prefetch_bytes,
           "prefetch_requests"_a = kDefaults.prefetch_requests,
           "token_columns"_a = std::vector<std::pair<std::string, int64_t>>(),
           "token_capacity"_a = 0, "cache_dir"_a = "", "cache_limit"_a = 0,
           "Opens `path` and starts epoch 0. Integers out of range, unknown names and bad "
           "combinations raise docfeed.InvalidArgumentError (a ValueError) naming the "
           "parameter.")
      .def_prop_ro("num_samples", [](PyLoader& l) { return l.get()->num_samples(); })
      .def_prop_ro("num_batches", [](PyLoader& l) { return l.get()->num_batches(); })
      .def_prop_ro("preprocessed", [](PyLoader& l) { return l.get()->preprocessed(); })
      .def_prop_ro("image_mean", [](PyLoader& l) { return l.get()->image_mean(); })
      .def_prop_ro("image_std", [](PyLoader& l) { return l.get()->image_std(); })
      .def_prop_ro("batch_pixel_bytes", [](PyLoader& l) { return l.get()->batch_pixel_bytes(); })
      .def(
          "start_epoch",
          [](PyLoader& l, nb::int_ epoch_arg, nb::int_ position_arg) {
            const auto epoch = ToInt<uint64_t>("epoch", epoch_arg);
            const auto position = ToInt<uint64_t>("position", position_arg);
            const Status status =
                WithoutGil(l, [&](Loader& loader) { return loader.StartEpoch(epoch, position); });
            if (!status.ok()) RaiseLoaderError(status);
          },
          "epoch"_a, "position"_a = 0)
      .def(
          "restore",
          [](PyLoader& l, nb::int_ seed_arg, nb::int_ epoch_arg, nb::int_ position_arg,
             nb::int_ world_size_arg, nb::int_ batch_size_arg,
             const std::optional<std::string>& elastic_arg) {
            LoaderState state;
            state.seed = ToInt<uint64_t>("seed", seed_arg);
            state.epoch = ToInt<uint64_t>("epoch", epoch_arg);
            state.position = ToInt<uint64_t>("position", position_arg);
            state.world_size = ToInt<uint32_t>("world_size", world_size_arg);
            state.batch_size = ToInt<uint32_t>("batch_size", batch_size_arg);
            std::optional<ElasticMode> elastic;
            if (elastic_arg) {
              Result<ElasticMode> parsed = ParseElasticMode(*elastic_arg);
              if (!parsed.ok()) Raise(parsed.status());
              elastic = parsed.value();
            }
            const Status status =
                WithoutGil(l, [&](Loader& loader) { return loader.Restore(state, elastic); });
            if (!status.ok()) RaiseLoaderError(status);
          },
          "seed"_a, "epoch"_a, "position"_a, "world_size"_a = 0, "batch_size"_a = 0,
          "elastic"_a = nb::none(),
          "Restore(): world_size / batch_size 0 is a state of unknown shape; elastic None "
          "resumes in whichever mode holds.")
      .def("state", [](PyLoader& l) { return StateDict(l.get()->state()); })
      .def("stats", [](PyLoader& l) { return StatsDict(l.get()->stats()); })
      // Every statistic as the JSON text `docfeed bench --json` embeds as "stats"
      // (LoaderStatsJson: one rendering for the CLI, this module and doctor).
      .def("stats_json", [](PyLoader& l) { return LoaderStatsJson(l.get()->stats()); })
      .def(
          "next",
          [](PyLoader& l) -> nb::object {
            std::shared_ptr<Loader> loader = l.get();
            Result<Batch> next = WithoutGil(l, [](Loader& c) { return c.Next(); });
            if (!next.ok()) RaiseLoaderError(next.status());
            if (!next.value().valid()) return nb::none();
            const LoaderOptions& o = loader->options();
            auto* b = new PyBatch{std::make_shared<Batch>(std::move(next).value()), o.dtype,
                                  o.layout, o.preset.donut.height, o.preset.donut.width};
            if (l.variable) {
              b->variable = true;
              b->row = l.row;
            }
            return nb::cast(b, nb::rv_policy::take_ownership);
          },
          "The next batch, or None at the end of the epoch. Several threads may call it: each "
          "batch goes to one of them, and all see the end. close() on another thread makes a "
          "waiting call raise LoaderClosedError.")
      .def(
          "close", [](PyLoader& l) { l.Close(); },
          "Stops the loader (any thread): wakes a next() waiting on another thread, which raises "
          "LoaderClosedError, and joins the workers. Batches stay valid.");

  m.def("pack_rows", &PackRows, "output"_a, "rows"_a, "fetch"_a, nb::kw_only(), "codec"_a = "keep",
        "jpeg_quality"_a = 90, "threads"_a = 0, "overwrite"_a = false, "skip_bad"_a = false,
        "strict"_a = false, "compression"_a = nb::none(), "preprocess"_a = "",
        "size"_a = nb::none(), "align_long_axis"_a = false, "hf_version"_a = nb::none(),
        "backend"_a = "pil", "keep_original"_a = false, "max_file_mb"_a = 500,
        "validate"_a = "auto", "min_pixels"_a = nb::none(), "max_pixels"_a = nb::none(),
        "patch_size"_a = nb::none(), "merge_size"_a = nb::none(), "longest_edge"_a = nb::none(),
        "max_image_size"_a = nb::none(), "do_image_splitting"_a = nb::none(), "part"_a = nb::none(),
        "chat_labels"_a = "", "stored_form"_a = nb::none(), "max_patches"_a = nb::none(),
        "Packs rows into `output` (docfeed.pack's engine): `rows` is one JSON object per line "
        "(file_name and the other columns, as metadata.jsonl), `fetch()` returns the next "
        "rows' images. The GIL is released while encoding and writing. Returns the summary.");
  m.def("pack_path", &PackPath, "source"_a, "output"_a, nb::kw_only(), "codec"_a = "keep",
        "jpeg_quality"_a = 90, "threads"_a = 0, "overwrite"_a = false, "skip_bad"_a = false,
        "strict"_a = false, "compression"_a = nb::none(), "preprocess"_a = "",
        "size"_a = nb::none(), "align_long_axis"_a = false, "hf_version"_a = nb::none(),
        "backend"_a = "pil", "keep_original"_a = false, "max_file_mb"_a = 500, "split"_a = "",
        "image_root"_a = "", "dpi"_a = 200, "pages"_a = "auto", "validate"_a = "auto",
        "min_pixels"_a = nb::none(), "max_pixels"_a = nb::none(), "patch_size"_a = nb::none(),
        "merge_size"_a = nb::none(), "longest_edge"_a = nb::none(), "max_image_size"_a = nb::none(),
        "do_image_splitting"_a = nb::none(), "part"_a = nb::none(), "stored_form"_a = nb::none(),
        "max_patches"_a = nb::none(),
        "Packs the image folder or Hugging Face dataset on disk (save_to_disk output, or a "
        "load_dataset cache directory) at `source` into `output`, as `docfeed pack` does "
        "(dpi, pages: its --dpi and --pages). The GIL is released while packing. Returns the "
        "summary.");
  m.def("merge", &MergeParts, "parts"_a, "output"_a, nb::kw_only(), "overwrite"_a = false,
        "Joins the parts of a split pack (pack_path/pack_rows with part=(I, N)) into `output`, "
        "as `docfeed merge` does. The GIL is released while merging. Returns the summary.");
  m.def(
      "normalize_table",
      [](int32_t height, int32_t width, double rescale_factor, std::array<double, 3> mean,
         std::array<double, 3> std, int32_t hf_version, const std::string& backend) {
        PresetOptions options;
        options.donut.height = height;
        options.donut.width = width;
        options.donut.rescale_factor = rescale_factor;
        options.donut.mean = mean;
        options.donut.std = std;
        options.donut.hf_version = hf_version;
        Result<DonutBackend> parsed_backend = ParseDonutBackend(backend);
        if (!parsed_backend.ok()) Raise(parsed_backend.status());
        options.donut.backend = parsed_backend.value();
        Result<Preset> preset = Preset::Create(options);
        if (!preset.ok()) Raise(preset.status());
        return preset.value().NormalizeTable();
      },
      "height"_a = 2560, "width"_a = 1920, "rescale_factor"_a = 1.0 / 255.0,
      "mean"_a = std::array<double, 3>{0.5, 0.5, 0.5},
      "std"_a = std::array<double, 3>{0.5, 0.5, 0.5}, "hf_version"_a = 4, "backend"_a = "pil",
      "The C++ float32 normalization table (Preset::NormalizeTable), 3 x 256 values, "
      "channel-major.");
}
