// docfeed._docfeed: the nanobind extension behind the `docfeed` Python package.
//
// It exposes the C++ loader (pipeline/loader.h) with as little policy as possible; the Python
// layer (python/docfeed/loader.py) adds torch.distributed defaults, the GPU path and the iterable
// protocol. Contracts:
//   * Every blocking call (Create, Next, StartEpoch, Restore) releases the GIL.
//   * A Batch's arrays are DLPack views of the pool buffer, never copies. Each view holds a
//     reference to the Python Batch object, which owns the C++ Batch, so the buffer returns to
//     the pool only when the Batch object and every tensor made from it are gone (or after an
//     explicit release(), which the Python layer calls only when it knows no view escaped).
//   * The optional buffer allocator (pinned memory for CUDA) is a Python callable
//     allocate(nbytes) -> object with .data_ptr(); the object is kept alive until the pool frees
//     the buffer. Its hooks take the GIL themselves because the pool may be freed on any thread.
//   * Errors become exceptions: ValueError (InvalidArgument), FileNotFoundError (NotFound),
//     RuntimeError otherwise, with docfeed's message (which names the file / sample).
// nanobind's headers trip docfeed's -Wshadow; they are third-party code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wpedantic"
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#pragma GCC diagnostic pop

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "docfeed/status.h"
#include "imaging/donut.h"
#include "imaging/normalize.h"
#include "pipeline/epoch_order.h"
#include "pipeline/loader.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace docfeed::internal {
namespace {

[[noreturn]] void Raise(const Status& status) {
  const std::string text = std::string(status.message());
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      throw nb::value_error(text.c_str());
    case StatusCode::kNotFound:
      PyErr_SetString(PyExc_FileNotFoundError, text.c_str());
      throw nb::python_error();
    default:
      throw std::runtime_error(std::string(StatusCodeName(status.code())) + ": " + text);
  }
}

void Check(const Status& status) {
  if (!status.ok()) Raise(status);
}

DType ParseDType(const std::string& name) {
  if (name == "uint8") return DType::kUint8;
  if (name == "float32") return DType::kFloat32;
  if (name == "float16") return DType::kFloat16;
  if (name == "bfloat16") return DType::kBfloat16;
  throw nb::value_error(("dtype must be uint8, float32, float16 or bfloat16, not " + name).c_str());
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

// The Python-side batch: owns the C++ Batch (moved out of Next()).
struct PyBatch {
  Batch batch;
  DType dtype = DType::kFloat32;
  OutputLayout layout = OutputLayout::kChw;
  int32_t height = 0, width = 0;

  void RequireValid() const {
    if (!batch.valid()) throw std::runtime_error("this docfeed batch was released");
  }
};

template <typename T>
nb::object View(nb::handle owner, const T* data, std::initializer_list<size_t> shape) {
  // A read-only flag would make torch warn on every batch; the views are writable like any
  // DataLoader output, and writing only affects this batch.
  nb::ndarray<nb::pytorch> array(const_cast<T*>(data), shape.size(), shape.begin(), owner, nullptr,
                                 nb::dtype<T>());
  return nb::cast(array, nb::rv_policy::reference);
}

nb::object Pixels(nb::handle self) {
  PyBatch& b = nb::cast<PyBatch&>(self);
  b.RequireValid();
  const size_t n = b.batch.size();
  const size_t h = static_cast<size_t>(b.height), w = static_cast<size_t>(b.width);
  size_t shape[4] = {n, 3, h, w};
  if (b.layout == OutputLayout::kHwc) {
    shape[1] = h;
    shape[2] = w;
    shape[3] = 3;
  }
  nb::ndarray<nb::pytorch> array(b.batch.pixels(), 4, shape, self, nullptr, ToDlpack(b.dtype));
  return nb::cast(array, nb::rv_policy::reference);
}

LoaderOptions MakeOptions(const nb::dict& o) {
  LoaderOptions opt;
  opt.path = nb::cast<std::string>(o["path"]);
  opt.preset.donut.height = nb::cast<int32_t>(o["height"]);
  opt.preset.donut.width = nb::cast<int32_t>(o["width"]);
  opt.preset.donut.align_long_axis = nb::cast<bool>(o["align_long_axis"]);
  opt.batch_size = nb::cast<uint32_t>(o["batch_size"]);
  opt.shuffle = nb::cast<bool>(o["shuffle"]);
  opt.seed = nb::cast<uint64_t>(o["seed"]);
  const auto pad = nb::cast<std::string>(o["pad"]);
  if (pad == "random") {
    opt.preset.pad = PadMode::kRandom;
  } else if (pad == "center") {
    opt.preset.pad = PadMode::kCenter;
  } else {
    throw nb::value_error(("pad must be 'random' or 'center', not '" + pad + "'").c_str());
  }
  opt.dtype = ParseDType(nb::cast<std::string>(o["dtype"]));
  // Optional keys (None or 3 floats): override the dataset's normalization.
  if (o.contains("image_mean") && !o["image_mean"].is_none()) {
    opt.image_mean = nb::cast<std::array<double, 3>>(o["image_mean"]);
  }
  if (o.contains("image_std") && !o["image_std"].is_none()) {
    opt.image_std = nb::cast<std::array<double, 3>>(o["image_std"]);
  }
  const auto layout = nb::cast<std::string>(o["layout"]);
  if (layout != "chw" && layout != "hwc") throw nb::value_error("layout must be 'chw' or 'hwc'");
  opt.layout = layout == "chw" ? OutputLayout::kChw : OutputLayout::kHwc;
  opt.rank = nb::cast<uint32_t>(o["rank"]);
  opt.world_size = nb::cast<uint32_t>(o["world_size"]);
  auto remainder = ParseRemainder(nb::cast<std::string>(o["remainder"]));
  if (!remainder.ok()) Raise(remainder.status());
  opt.remainder = remainder.value();
  opt.num_threads = nb::cast<int>(o["num_threads"]);
  opt.prefetch = nb::cast<int>(o["prefetch"]);
  opt.max_held = nb::cast<int>(o["max_held"]);
  opt.label_column = nb::cast<std::string>(o["label_column"]);
  opt.label_length = nb::cast<uint32_t>(o["label_length"]);
  const auto on_error = nb::cast<std::string>(o["on_error"]);
  if (on_error == "raise") {
    opt.on_error = BadSamplePolicy::kError;
  } else if (on_error == "skip") {
    opt.on_error = BadSamplePolicy::kSkip;
  } else {
    throw nb::value_error(("on_error must be 'raise' or 'skip', not '" + on_error + "'").c_str());
  }
  opt.max_bad_samples = nb::cast<uint64_t>(o["max_bad_samples"]);
  nb::object allocate = o["allocator"];
  if (!allocate.is_none()) {
    auto alloc = std::make_shared<PyAllocator>(allocate);
    opt.allocator.allocate = [alloc](size_t bytes) { return alloc->Allocate(bytes); };
    opt.allocator.release = [alloc](void* data, size_t) { alloc->Release(data); };
  }
  return opt;
}

// The loader object of the module. close() or destruction joins the workers.
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
  std::unique_ptr<Loader> loader;
  Loader& get() {
    if (!loader) throw std::runtime_error("this docfeed loader was closed");
    return *loader;
  }
};

nb::dict StatsDict(const LoaderStats& s) {
  nb::dict d;
  auto stage = [](const StageTime& t) {
    return nb::make_tuple(t.count, static_cast<double>(t.nanos) * 1e-9);
  };
  d["read"] = stage(s.read);
  d["decode"] = stage(s.decode);
  d["resize"] = stage(s.resize);
  d["pad_normalize"] = stage(s.pad_normalize);
  d["buffer_wait"] = stage(s.buffer_wait);
  d["consumer_wait"] = stage(s.consumer_wait);
  d["batches"] = s.batches;
  d["samples"] = s.samples;
  d["stored_bytes"] = s.stored_bytes;
  d["bad_samples"] = s.bad_samples;
  d["bad_sample_errors"] = s.bad_sample_errors;
  d["ready_depth_sum"] = s.ready_depth_sum;
  d["pool_buffers"] = s.pool_buffers;
  d["pool_bytes"] = s.pool_bytes;
  return d;
}

}  // namespace
}  // namespace docfeed::internal

NB_MODULE(_docfeed, m) {
  using namespace docfeed::internal;
  using docfeed::Result;
  using docfeed::Status;
  m.doc() = "docfeed's C++ loader (internal; use docfeed.Loader)";

  nb::class_<PyBatch>(m, "Batch")
      .def_prop_ro("valid", [](const PyBatch& b) { return b.batch.valid(); })
      .def_prop_ro("size",
                   [](const PyBatch& b) {
                     b.RequireValid();
                     return b.batch.size();
                   })
      .def_prop_ro("epoch", [](const PyBatch& b) { return b.batch.epoch(); })
      .def_prop_ro("index", [](const PyBatch& b) { return b.batch.index(); })
      .def_prop_ro("buffer_index", [](const PyBatch& b) { return b.batch.buffer_index(); })
      .def_prop_ro("label_length", [](const PyBatch& b) { return b.batch.label_length(); })
      .def_prop_ro("resume_state",
                   [](const PyBatch& b) {
                     const LoaderState& s = b.batch.resume_state();
                     return std::make_tuple(s.seed, s.epoch, s.position);
                   })
      .def("pixels", [](nb::handle self) { return Pixels(self); })
      .def("labels",
           [](nb::handle self) -> nb::object {
             PyBatch& b = nb::cast<PyBatch&>(self);
             b.RequireValid();
             if (b.batch.label_length() == 0) return nb::none();
             return View(self, b.batch.labels(), {b.batch.size(), b.batch.label_length()});
           })
      .def("sample_ids",
           [](nb::handle self) {
             PyBatch& b = nb::cast<PyBatch&>(self);
             b.RequireValid();
             return View(self, b.batch.sample_ids(), {b.batch.size()});
           })
      .def("pad_offsets",
           [](nb::handle self) {
             PyBatch& b = nb::cast<PyBatch&>(self);
             b.RequireValid();
             return View(self, b.batch.pad_offsets(), {b.batch.size(), size_t{2}});
           })
      .def("content_sizes",
           [](nb::handle self) {
             PyBatch& b = nb::cast<PyBatch&>(self);
             b.RequireValid();
             return View(self, b.batch.content_sizes(), {b.batch.size(), size_t{2}});
           })
      .def(
          "release",
          [](PyBatch& b) {
            nb::gil_scoped_release nogil;
            b.batch.Release();
          },
          "Returns the buffer to the pool now. Only safe when no view of it is alive.");

  nb::class_<PyLoader>(m, "Loader")
      .def(
          "__init__",
          [](PyLoader* self, nb::dict options) {
            LoaderOptions opt = MakeOptions(options);
            Result<std::unique_ptr<Loader>> created = [&] {
              nb::gil_scoped_release nogil;
              return Loader::Create(opt);
            }();
            if (!created.ok()) Raise(created.status());
            new (self) PyLoader(std::move(created).value());
          },
          "options"_a)
      .def_prop_ro("num_samples", [](PyLoader& l) { return l.get().num_samples(); })
      .def_prop_ro("num_batches", [](PyLoader& l) { return l.get().num_batches(); })
      .def_prop_ro("preprocessed", [](PyLoader& l) { return l.get().preprocessed(); })
      .def_prop_ro("image_mean", [](PyLoader& l) { return l.get().image_mean(); })
      .def_prop_ro("image_std", [](PyLoader& l) { return l.get().image_std(); })
      .def_prop_ro("batch_pixel_bytes", [](PyLoader& l) { return l.get().batch_pixel_bytes(); })
      .def(
          "start_epoch",
          [](PyLoader& l, uint64_t epoch, uint64_t position) {
            Loader& loader = l.get();
            Status status;
            {
              nb::gil_scoped_release nogil;
              status = loader.StartEpoch(epoch, position);
            }
            Check(status);
          },
          "epoch"_a, "position"_a = 0)
      .def(
          "restore",
          [](PyLoader& l, uint64_t seed, uint64_t epoch, uint64_t position) {
            Loader& loader = l.get();
            Status status;
            {
              nb::gil_scoped_release nogil;
              status = loader.Restore(LoaderState{seed, epoch, position});
            }
            Check(status);
          },
          "seed"_a, "epoch"_a, "position"_a)
      .def("state",
           [](PyLoader& l) {
             LoaderState s = l.get().state();
             return std::make_tuple(s.seed, s.epoch, s.position);
           })
      .def("stats", [](PyLoader& l) { return StatsDict(l.get().stats()); })
      .def(
          "next",
          [](PyLoader& l) -> nb::object {
            Loader& loader = l.get();
            Result<Batch> next = [&] {
              nb::gil_scoped_release nogil;
              return loader.Next();
            }();
            if (!next.ok()) Raise(next.status());
            if (!next.value().valid()) return nb::none();
            const LoaderOptions& o = loader.options();
            auto* b = new PyBatch{std::move(next).value(), o.dtype, o.layout, o.preset.donut.height,
                                  o.preset.donut.width};
            return nb::cast(b, nb::rv_policy::take_ownership);
          },
          "The next batch, or None at the end of the epoch.")
      .def("close", [](PyLoader& l) {
        std::unique_ptr<Loader> loader = std::move(l.loader);
        nb::gil_scoped_release nogil;
        loader.reset();  // joins the workers
      });

  m.def(
      "normalize_table",
      [](int32_t height, int32_t width, double rescale_factor, std::array<double, 3> mean,
         std::array<double, 3> std) {
        DonutConfig config;
        config.height = height;
        config.width = width;
        config.rescale_factor = rescale_factor;
        config.mean = mean;
        config.std = std;
        Result<NormalizeTable> table = MakeNormalizeTable(config);
        if (!table.ok()) Raise(table.status());
        std::vector<float> flat;
        flat.reserve(3 * 256);
        for (const auto& channel : table.value().f32)
          flat.insert(flat.end(), channel.begin(), channel.end());
        return flat;
      },
      "height"_a = 2560, "width"_a = 1920, "rescale_factor"_a = 1.0 / 255.0,
      "mean"_a = std::array<double, 3>{0.5, 0.5, 0.5},
      "std"_a = std::array<double, 3>{0.5, 0.5, 0.5},
      "The C++ float32 normalization table, 3 x 256 values, channel-major.");
}
