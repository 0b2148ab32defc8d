// coil's C++ wrapper runtime: what a `-t cpp` wrapper includes.
//
// A generated wrapper (targets/cpp.py) is one C++ file: its `call` allocates
// with the ATen C++ API, calls ATen ops through the dispatcher, and launches
// the Triton-compiled kernels through the CUDA driver API with the helpers
// below. Header-only, so a wrapper is one translation unit that links against
// libtorch alone:
//
// * The driver API is opened at run time (dlopen "libcuda.so.1", or
//   $COIL_LIBCUDA_PATH), as Triton's own launcher does for cuLaunchKernelEx: a
//   wrapper links and loads on a machine without a GPU driver, and fails only
//   when it first launches a kernel, with a sentence.
// * A kernel is a cubin plus a metadata file, `<dir>/<name>.cubin` and
//   `<dir>/<name>.meta`, written by coil.runtime.cpp_wrapper from Triton's
//   compiled kernel: the function name, num_warps, shared memory and one
//   `scratch <size> <align>` line per scratch pointer the installed Triton's
//   launcher appends after the kernel's own arguments (global scratch, then
//   profile scratch in Triton 3.5+), in that order. The argument layout is the
//   launcher's: each non-constexpr argument by value (pointers as
//   CUdeviceptr, i64 as int64_t, i32 as int32_t, fp32 as float), then the
//   scratch pointers, null where the size is 0.
// * Launches go on the current stream of the tensors' device (PyTorch's
//   current CUDA stream, read through c10's device-generic stream API so that
//   no CUDA library is needed at link time), with 32*num_warps threads and the
//   kernel's shared memory, as Triton launches them.
//
// Errors are exceptions: coil::InputError for inputs that differ from what the
// wrapper was compiled for, std::runtime_error (or c10::Error) otherwise. The
// exported entry points (COIL_DEFINE_ENTRY) turn them into an error code and a
// message, so nothing is thrown across a dlopen boundary.

#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
// The factory functions through their operator structs (at::_ops::X::call):
// ATen/ops/X.h, for at::X, also pulls in ATen/Context.h and the tracer, ~20%
// of this header's parse (g++ 12, -fsyntax-only), for nothing used here.
#include <ATen/ops/empty_ops.h>
#include <ATen/ops/empty_strided_ops.h>
#include <ATen/ops/randint_ops.h>
#include <ATen/ops/scalar_tensor_ops.h>
#include <ATen/ops/zeros_ops.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#define COIL_EXPORT extern "C" __attribute__((visibility("default")))

namespace coil {

// ---- errors -----------------------------------------------------------------

// An input that does not match what the wrapper was compiled for (Python:
// coil.runtime.wrapper.CoilInputError).
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Messages are built without iostreams: a library's own instantiations of
// libstdc++'s stream templates crashed in its locale facets (g++ 13).
inline std::string to_text(const char* s) { return s; }
inline std::string to_text(const std::string& s) { return s; }
inline std::string to_text(bool v) { return v ? "1" : "0"; }
template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
std::string to_text(T v) {
  return std::to_string(v);
}
inline std::string to_text(at::ScalarType t) { return c10::toString(t); }
inline std::string to_text(at::Device d) { return d.str(); }

template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  ((out += to_text(parts)), ...);
  return out;
}

// ---- size arithmetic (Python's semantics, as the IR means them) ---------------

inline int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

inline int64_t mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// ---- inputs -------------------------------------------------------------------

inline at::Tensor tensor_input(const std::vector<c10::IValue>& args, size_t i, const char* name) {
  if (!args[i].isTensor()) {
    throw InputError(cat("input ", name, ": expected a tensor, got ", args[i].tagKind()));
  }
  return args[i].toTensor();
}

inline int64_t int_input(const std::vector<c10::IValue>& args, size_t i, const char* name) {
  if (!args[i].isInt()) {
    throw InputError(cat("input ", name, ": expected an int, got ", args[i].tagKind()));
  }
  return args[i].toInt();
}

inline std::string format_ints(c10::IntArrayRef values) {
  std::string out = "(";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + (values.size() == 1 ? ",)" : ")");
}

// As coil.runtime.wrapper.check_input: sizes, strides (dimensions of size 1 are
// not compared), dtype and device ("cuda" means device 0).
inline void check_input(const char* name, const at::Tensor& t, c10::IntArrayRef sizes,
                        c10::IntArrayRef strides, at::ScalarType dtype, at::Device device) {
  if (t.sizes() != sizes) {
    throw InputError(cat("input ", name, ": expected size ", format_ints(sizes), ", got ",
                         format_ints(t.sizes())));
  }
  auto got = t.strides();
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1 && got[d] != strides[d]) {
      throw InputError(cat("input ", name, ": expected strides ", format_ints(strides), ", got ",
                           format_ints(got), " (dimensions of size 1 are not compared)"));
    }
  }
  if (t.scalar_type() != dtype) {
    throw InputError(cat("input ", name, ": expected dtype ", dtype, ", got ", t.scalar_type()));
  }
  auto index = [](at::Device d) { return d.has_index() ? d.index() : 0; };
  // A 0-d CPU tensor may stand for a CUDA scalar (torch mixes them; cuDNN
  // attention returns its philox seed/offset so): the wrapper moves it.
  bool cpu_scalar = t.dim() == 0 && t.device().is_cpu() && device.is_cuda();
  if (!cpu_scalar && (t.device().type() != device.type() || index(t.device()) != index(device))) {
    throw InputError(cat("input ", name, ": expected device ", device, ", got ", t.device()));
  }
}

// ---- allocation and ATen calls --------------------------------------------------

// at::empty_strided(sizes, strides, TensorOptions().dtype(dtype).device(device)).
inline at::Tensor empty_strided(c10::IntArrayRef sizes, c10::IntArrayRef strides,
                                at::ScalarType dtype, at::Device device) {
  return at::_ops::empty_strided::call(c10::fromIntArrayRefSlow(sizes),
                                       c10::fromIntArrayRefSlow(strides), dtype, std::nullopt,
                                       device, std::nullopt);
}

// at::empty(sizes, TensorOptions().dtype(dtype).device(device)).
inline at::Tensor empty(c10::IntArrayRef sizes, at::ScalarType dtype,
                        std::optional<at::Device> device = std::nullopt) {
  return at::_ops::empty_memory_format::call(c10::fromIntArrayRefSlow(sizes), dtype,
                                             std::nullopt, device, std::nullopt, std::nullopt);
}

// Storage for a layout that starts `offset` elements into it.
inline at::Tensor empty_with_offset(int64_t numel, c10::IntArrayRef sizes,
                                    c10::IntArrayRef strides, int64_t offset,
                                    at::ScalarType dtype, at::Device device) {
  return empty({numel}, dtype, device).as_strided(sizes, strides, offset);
}

// A fresh seed from torch's default CPU generator, as the Python wrapper's
// int(torch.randint(2**31 - 1, (), device="cpu")) draws it.
inline int64_t draw_seed() {
  return at::_ops::randint::call(2147483647, {}, at::kLong, std::nullopt, std::nullopt,
                                 std::nullopt)
      .item<int64_t>();
}

template <typename T>
at::Tensor constant_tensor(const std::vector<T>& values, c10::IntArrayRef sizes,
                           at::ScalarType dtype, at::Device device) {
  auto host_type = std::is_floating_point_v<T> ? at::kDouble : at::kLong;
  at::Tensor t = empty({static_cast<int64_t>(values.size())}, host_type);
  std::memcpy(t.data_ptr(), values.data(), values.size() * sizeof(T));
  return t.to(device, dtype).reshape(sizes);
}

// A Python number passed where a schema has a Tensor: a 0-d CPU tensor marked
// as a wrapped number (so type promotion treats it as a scalar), as torch.ops
// converts it.
inline at::Tensor wrapped_number(const c10::IValue& v) {
  at::Tensor t;
  auto scalar = [](const at::Scalar& s, at::ScalarType dtype) {
    return at::_ops::scalar_tensor::call(s, dtype, std::nullopt, std::nullopt, std::nullopt);
  };
  if (v.isDouble()) t = scalar(v.toDouble(), at::kDouble);
  else if (v.isBool()) t = scalar(v.toBool(), at::kBool);
  else t = scalar(v.toInt(), at::kLong);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

// An operator by name and overload ("aten::mm", ""), found once per call site.
inline c10::OperatorHandle find_op(const char* name, const char* overload) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
}

// A boxed call: every schema argument in order in, the returns out.
inline std::vector<c10::IValue> call_op(const c10::OperatorHandle& op,
                                        std::vector<c10::IValue> stack) {
  op.callBoxed(stack);
  return stack;
}

inline c10::List<at::Tensor> tensor_list(std::initializer_list<at::Tensor> items) {
  return c10::List<at::Tensor>(std::vector<at::Tensor>(items));
}

inline c10::List<std::optional<at::Tensor>> optional_tensor_list(
    std::initializer_list<std::optional<at::Tensor>> items) {
  return c10::List<std::optional<at::Tensor>>(std::vector<std::optional<at::Tensor>>(items));
}

// ---- the CUDA driver API, opened at run time --------------------------------------

struct Driver {
  decltype(&::cuGetErrorString) getErrorString = nullptr;
  decltype(&::cuCtxGetCurrent) ctxGetCurrent = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuCtxSynchronize) ctxSynchronize = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) devicePrimaryCtxRetain = nullptr;
  decltype(&::cuModuleLoadData) moduleLoadData = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuFuncGetAttribute) funcGetAttribute = nullptr;
  decltype(&::cuFuncSetAttribute) funcSetAttribute = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;

  static const Driver& get() {
    static const Driver driver = open();
    return driver;
  }

  void check(CUresult status, const char* what) const {
    if (status == CUDA_SUCCESS) return;
    const char* text = nullptr;
    if (getErrorString != nullptr) getErrorString(status, &text);
    throw std::runtime_error(cat("coil: ", what, " failed: ", text ? text : "unknown CUDA error",
                                 " (CUresult ", static_cast<int>(status), ")"));
  }

 private:
  static Driver open() {
    const char* path = std::getenv("COIL_LIBCUDA_PATH");
    const char* name = (path != nullptr && *path != '\0') ? path : "libcuda.so.1";
    void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      throw std::runtime_error(cat("coil: cannot open the CUDA driver library ", name, " (",
                                   dlerror(), "): the C++ wrapper launches its kernels on an "
                                   "NVIDIA GPU through the CUDA driver"));
    }
    Driver d;
    // The unversioned names: cuda.h maps none of these to a _v2 (cuLaunchKernel's
    // per-thread-stream alias applies only under CUDA_API_PER_THREAD_DEFAULT_STREAM).
    d.getErrorString = sym<decltype(d.getErrorString)>(lib, "cuGetErrorString");
    d.ctxGetCurrent = sym<decltype(d.ctxGetCurrent)>(lib, "cuCtxGetCurrent");
    d.ctxSetCurrent = sym<decltype(d.ctxSetCurrent)>(lib, "cuCtxSetCurrent");
    d.ctxSynchronize = sym<decltype(d.ctxSynchronize)>(lib, "cuCtxSynchronize");
    d.deviceGet = sym<decltype(d.deviceGet)>(lib, "cuDeviceGet");
    d.deviceGetAttribute = sym<decltype(d.deviceGetAttribute)>(lib, "cuDeviceGetAttribute");
    d.devicePrimaryCtxRetain =
        sym<decltype(d.devicePrimaryCtxRetain)>(lib, "cuDevicePrimaryCtxRetain");
    d.moduleLoadData = sym<decltype(d.moduleLoadData)>(lib, "cuModuleLoadData");
    d.moduleGetFunction = sym<decltype(d.moduleGetFunction)>(lib, "cuModuleGetFunction");
    d.funcGetAttribute = sym<decltype(d.funcGetAttribute)>(lib, "cuFuncGetAttribute");
    d.funcSetAttribute = sym<decltype(d.funcSetAttribute)>(lib, "cuFuncSetAttribute");
    d.launchKernel = sym<decltype(d.launchKernel)>(lib, "cuLaunchKernel");
    return d;
  }

  template <typename F>
  static F sym(void* lib, const char* name) {
    void* f = dlsym(lib, name);
    if (f == nullptr) {
      throw std::runtime_error(cat("coil: the CUDA driver library has no ", name));
    }
    return reinterpret_cast<F>(f);
  }
};

// The stream a launch goes on: PyTorch's current stream of `device` (null, the
// legacy default stream, for a device that is not CUDA).
inline CUstream current_stream(at::Device device) {
  if (device.type() != at::kCUDA) return nullptr;
  const auto* impl = c10::impl::getDeviceGuardImpl(at::kCUDA);
  return static_cast<CUstream>(impl->getStream(device).native_handle());
}

// host.semaphores: `n` int32 counters on a device that the module keeps, one
// set per stream (zeroed when first used on that stream; the kernels that take
// them leave them zero), as the Python wrapper's runtime.wrapper.Semaphores.
class Semaphores {
 public:
  explicit Semaphores(int64_t n) : n_(n) {}
  at::Tensor on(at::Device device) {
    CUstream stream = current_stream(device);
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = by_stream_.find(stream);
    if (found != by_stream_.end()) return found->second;
    at::Tensor sems = at::_ops::zeros::call(c10::fromIntArrayRefSlow({n_}), at::kInt,
                                            std::nullopt, device, std::nullopt);
    by_stream_.emplace(stream, sems);
    return sems;
  }

 private:
  int64_t n_;
  std::mutex mutex_;
  std::map<CUstream, at::Tensor> by_stream_;
};

// ---- kernel arguments -----------------------------------------------------------

// One kernel argument by value, as the launcher passes it: its bytes at the start
// of an 8-byte slot (cuLaunchKernel reads as many as the kernel's parameter has).
struct Arg {
  alignas(8) unsigned char bytes[8] = {};
  uint8_t size = 0;

  template <typename T>
  static Arg of(T value) {
    static_assert(sizeof(T) <= 8);
    Arg a;
    std::memcpy(a.bytes, &value, sizeof(T));
    a.size = sizeof(T);
    return a;
  }
};

inline Arg ptr(const at::Tensor& t) {
  return Arg::of(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(t.data_ptr())));
}
inline Arg i64(int64_t v) { return Arg::of(v); }
inline Arg i32(int64_t v) { return Arg::of(static_cast<int32_t>(v)); }
inline Arg i16(int64_t v) { return Arg::of(static_cast<int16_t>(v)); }
inline Arg i8(int64_t v) { return Arg::of(static_cast<int8_t>(v)); }
inline Arg f32(double v) { return Arg::of(static_cast<float>(v)); }
inline Arg f64(double v) { return Arg::of(v); }

// ---- kernels ----------------------------------------------------------------------

inline std::string read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw std::runtime_error(cat("coil: cannot read ", path));
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

// What Triton's compiled kernel says about launching it (the .meta file).
struct KernelMeta {
  std::string name;
  int num_warps = 4;
  int num_ctas = 1;
  int shared = 0;
  std::vector<std::pair<int64_t, int64_t>> scratch;  // (bytes per program, alignment)
  bool cooperative = false;
  bool pdl = false;

  static KernelMeta parse(const std::string& text, const std::string& path) {
    KernelMeta m;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string::npos) end = text.size();
      std::string line = text.substr(pos, end - pos);
      pos = end + 1;
      // "key value [value]": a '#' starts a comment.
      std::vector<std::string> words;
      size_t i = 0;
      while (i < line.size() && line[i] != '#') {
        while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
        size_t j = i;
        while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j])) &&
               line[j] != '#') {
          ++j;
        }
        if (j > i) words.push_back(line.substr(i, j - i));
        i = j;
      }
      if (words.empty()) continue;
      auto number = [&](size_t k) -> int64_t {
        char* rest = nullptr;
        int64_t v = k < words.size() ? std::strtoll(words[k].c_str(), &rest, 10) : 0;
        if (k >= words.size() || rest == nullptr || *rest != '\0') {
          throw std::runtime_error(cat("coil: bad line '", line, "' in ", path));
        }
        return v;
      };
      const std::string& key = words[0];
      if (key == "name" && words.size() == 2) m.name = words[1];
      else if (key == "num_warps") m.num_warps = static_cast<int>(number(1));
      else if (key == "num_ctas") m.num_ctas = static_cast<int>(number(1));
      else if (key == "shared") m.shared = static_cast<int>(number(1));
      else if (key == "launch_cooperative_grid") m.cooperative = number(1) != 0;
      else if (key == "launch_pdl") m.pdl = number(1) != 0;
      else if (key == "scratch") m.scratch.emplace_back(number(1), number(2));
    }
    if (m.name.empty()) throw std::runtime_error(cat("coil: ", path, " names no kernel"));
    // What coil's kernels never ask for; Triton's launcher would add launch
    // attributes (clusters, cooperative grids, PDL) that this runtime does not.
    if (m.num_ctas != 1 || m.cooperative || m.pdl) {
      throw std::runtime_error(cat("coil: kernel ", m.name, " asks for num_ctas=", m.num_ctas,
                                   ", cooperative=", m.cooperative, ", pdl=", m.pdl,
                                   "; the C++ wrapper launches only num_ctas=1 without them"));
    }
    return m;
  }
};

inline void ensure_context(int device) {
  const Driver& cu = Driver::get();
  CUcontext ctx = nullptr;
  cu.check(cu.ctxGetCurrent(&ctx), "cuCtxGetCurrent");
  if (ctx != nullptr) return;
  // No current context (nothing ran on this thread yet): the device's primary
  // one, which is PyTorch's, as Triton's loader does.
  CUdevice dev;
  cu.check(cu.deviceGet(&dev, device), "cuDeviceGet");
  cu.check(cu.devicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  cu.check(cu.ctxSetCurrent(ctx), "cuCtxSetCurrent");
}

// One Triton kernel of a wrapper: loaded on first launch per device from
// `<dir>/<name>.cubin` and `<dir>/<name>.meta`.
class Kernel {
 public:
  static constexpr int kMaxDevices = 64;

  Kernel(const char* name, const std::string* dir) : name_(name), dir_(dir) {}

  // Launch on `device`'s current stream; `args` are the kernel's own
  // arguments, the scratch pointers follow.
  void launch(at::Device device, int64_t gx, int64_t gy, int64_t gz,
              std::initializer_list<Arg> args) {
    if (gx <= 0 || gy <= 0 || gz <= 0) return;  // an empty grid launches nothing (as Triton)
    int index = device.has_index() ? device.index() : 0;
    const Loaded& k = load(index);
    void* params[64];
    if (args.size() + k.meta.scratch.size() > 64) {
      throw std::runtime_error(cat("coil: kernel ", name_, " has too many arguments"));
    }
    size_t n = 0;
    for (const Arg& a : args) params[n++] = const_cast<unsigned char*>(a.bytes);
    // Scratch: grid * num_ctas * size bytes each, as Triton's launcher
    // allocates them; kept alive until the launch is enqueued (the caching
    // allocator orders reuse on the stream).
    std::array<at::Tensor, 4> scratch_storage;
    std::array<CUdeviceptr, 4> scratch_ptrs{};
    for (size_t s = 0; s < k.meta.scratch.size() && s < 4; ++s) {
      auto [size, align] = k.meta.scratch[s];
      if (size > 0) {
        int64_t bytes = gx * gy * gz * k.meta.num_ctas * size + align;
        scratch_storage[s] = empty({bytes}, at::kByte, device);
        auto p = reinterpret_cast<uintptr_t>(scratch_storage[s].data_ptr());
        scratch_ptrs[s] = static_cast<CUdeviceptr>((p + align - 1) / align * align);
      }
      params[n++] = &scratch_ptrs[s];
    }
    const Driver& cu = Driver::get();
    cu.check(cu.launchKernel(k.function, static_cast<unsigned>(gx * k.meta.num_ctas),
                             static_cast<unsigned>(gy), static_cast<unsigned>(gz),
                             static_cast<unsigned>(32 * k.meta.num_warps), 1, 1,
                             static_cast<unsigned>(k.meta.shared), current_stream(device), params,
                             nullptr),
             "cuLaunchKernel");
  }

  const char* name() const { return name_; }

 private:
  struct Loaded {
    CUfunction function = nullptr;
    KernelMeta meta;
  };

  const Loaded& load(int device) {
    if (device < 0 || device >= kMaxDevices) {
      throw std::runtime_error(cat("coil: device index ", device, " out of range"));
    }
    Loaded* loaded = loaded_[device].load(std::memory_order_acquire);
    if (loaded != nullptr) return *loaded;
    std::lock_guard<std::mutex> lock(mutex_);
    loaded = loaded_[device].load(std::memory_order_relaxed);
    if (loaded != nullptr) return *loaded;
    auto k = std::make_unique<Loaded>();
    std::string base = *dir_ + "/" + name_;
    k->meta = KernelMeta::parse(read_file(base + ".meta"), base + ".meta");
    std::string cubin = read_file(base + ".cubin");
    const Driver& cu = Driver::get();
    ensure_context(device);
    CUmodule module;
    cu.check(cu.moduleLoadData(&module, cubin.data()), "cuModuleLoadData");
    cu.check(cu.moduleGetFunction(&k->function, module, k->meta.name.c_str()),
             "cuModuleGetFunction");
    if (k->meta.shared > 49152) {
      // More than the default 48 KB: opt in to the device's maximum, as
      // Triton's loader does when the oversized-shared-memory mode is absent.
      CUdevice dev;
      cu.check(cu.deviceGet(&dev, device), "cuDeviceGet");
      int optin = 0, shared_static = 0;
      cu.check(cu.deviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                     dev),
               "cuDeviceGetAttribute");
      cu.check(cu.funcGetAttribute(&shared_static, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                   k->function),
               "cuFuncGetAttribute");
      cu.check(cu.funcSetAttribute(k->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   optin - shared_static),
               "cuFuncSetAttribute");
    }
    loaded = k.release();  // lives as long as the wrapper's library
    loaded_[device].store(loaded, std::memory_order_release);
    return *loaded;
  }

  const char* name_;
  const std::string* dir_;
  std::mutex mutex_;
  std::array<std::atomic<Loaded*>, kMaxDevices> loaded_{};
};

// ---- autotuning ---------------------------------------------------------------------

// host.autotune: run exactly one candidate launch. On a CUDA device the first
// call for a set of sizes times each candidate (one warm-up, then `reps`
// launches between two synchronizations) and remembers the fastest; on
// another device (or with one candidate) the first, the compiler's heuristic,
// runs untimed. The chosen launch runs last, so the outputs are its own --
// as coil.runtime.autotune does for the Python wrapper.
class Autotuner {
 public:
  void run(at::Device device, std::vector<int64_t> sizes,
           std::initializer_list<std::function<void()>> candidates, int reps = 10) {
    std::vector<std::function<void()>> c(candidates);
    if (c.size() == 1 || device.type() != at::kCUDA) {
      c[0]();
      return;
    }
    size_t choice;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = choices_.find(sizes);
      if (it == choices_.end()) {
        it = choices_.emplace(sizes, measure(c, reps)).first;
      }
      choice = it->second;
    }
    c[choice]();
  }

 private:
  static size_t measure(const std::vector<std::function<void()>>& c, int reps) {
    const Driver& cu = Driver::get();
    size_t best = 0;
    double best_time = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < c.size(); ++i) {
      c[i]();
      cu.check(cu.ctxSynchronize(), "cuCtxSynchronize");
      auto start = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r) c[i]();
      cu.check(cu.ctxSynchronize(), "cuCtxSynchronize");
      double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (t < best_time) best = i, best_time = t;
    }
    return best;
  }

  std::mutex mutex_;
  std::map<std::vector<int64_t>, size_t> choices_;
};

// ---- CPU kernels -------------------------------------------------------------------

// A graph on the CPU runs C++ kernels (`-t cpp-kernels`), not Triton's: the
// library coil.runtime.cpp_kernels builds from the graph's kernel source (the
// one the Python wrapper loads through ctypes), copied to `<kernel dir>/
// cpu_kernels.so` and opened at the first call. `Fn` is the kernel's C type
// (buffers as void*, size symbols as int64_t); a kernel returns nonzero for an
// out-of-range indirect index, which throws c10::IndexError as eager does.
template <typename Fn>
class CpuKernel;

template <typename... Args>
class CpuKernel<int(Args...)> {
 public:
  CpuKernel(const char* name, const std::string* dir) : name_(name), dir_(dir) {}

  void operator()(Args... args) {
    std::call_once(once_, [this] { fn_ = resolve(); });
    if (fn_(args...) != 0) {
      TORCH_CHECK_INDEX(false, "coil: an index is out of bounds in CPU kernel ", name_);
    }
  }

 private:
  using Pointer = int (*)(Args...);

  Pointer resolve() const {
    std::string path = *dir_ + "/cpu_kernels.so";
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      throw std::runtime_error(cat("coil: cannot open the CPU kernel library ", path, " (",
                                   dlerror(), ")"));
    }
    void* fn = dlsym(lib, name_);
    if (fn == nullptr) {
      throw std::runtime_error(cat("coil: ", path, " has no kernel ", name_));
    }
    return reinterpret_cast<Pointer>(fn);
  }

  const char* name_;
  const std::string* dir_;
  std::once_flag once_;
  Pointer fn_ = nullptr;
};

// ---- the library's entry points --------------------------------------------------

// Where the kernels are: `<directory of this library>/kernels` unless
// coil_set_kernel_dir says otherwise.
inline std::string default_kernel_dir(const void* address_in_library) {
  Dl_info info;
  if (dladdr(address_in_library, &info) == 0 || info.dli_fname == nullptr) return "kernels";
  std::string path = info.dli_fname;
  auto slash = path.rfind('/');
  return (slash == std::string::npos ? std::string(".") : path.substr(0, slash)) + "/kernels";
}

}  // namespace coil

// The exported C entry points of a wrapper library, around its `call`:
//
//   int coil_run(std::vector<c10::IValue>* args, std::vector<c10::IValue>* outputs,
//                std::string* error)
//       runs the wrapper (args are consumed); 0 on success, 1 when an input does
//       not match (error says which), 3 on an index out of range (c10::IndexError:
//       a CPU kernel's indirect index), 2 on any other error.
//   void coil_set_kernel_dir(const char* dir)
//       where the .cubin/.meta files are (default: kernels/ beside the library).
//   int coil_num_inputs()
#define COIL_DEFINE_ENTRY(CALL, NUM_INPUTS, KERNEL_DIR)                                    \
  COIL_EXPORT int coil_run(std::vector<c10::IValue>* args, std::vector<c10::IValue>* outputs, \
                           std::string* error) {                                          \
    try {                                                                                 \
      *outputs = CALL(*args);                                                             \
      return 0;                                                                           \
    } catch (const coil::InputError& e) {                                                 \
      *error = e.what();                                                                  \
      return 1;                                                                           \
    } catch (const c10::IndexError& e) {                                                  \
      *error = e.what_without_backtrace();                                                \
      return 3;                                                                           \
    } catch (const c10::Error& e) {                                                       \
      *error = e.what_without_backtrace();                                                \
      return 2;                                                                           \
    } catch (const std::exception& e) {                                                   \
      *error = e.what();                                                                  \
      return 2;                                                                           \
    }                                                                                     \
  }                                                                                       \
  COIL_EXPORT void coil_set_kernel_dir(const char* dir) { KERNEL_DIR = dir; }             \
  COIL_EXPORT int coil_num_inputs() { return NUM_INPUTS; }
