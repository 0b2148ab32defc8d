// Run a coil-compiled model from C++ alone: load a C++ wrapper library built by
// coil (a directory with wrapper.so and kernels/), feed it the inputs saved
// beside it, check its outputs against the saved ones (eager PyTorch's), and
// time it. No Python is involved.
//
// Make the directory (on a machine with a GPU):
//
//   python -c "import torch; from coil.examples.models import build; \
//     from coil.backend import export_cpp; m, x = build('mlp'); \
//     export_cpp(m.cuda(), tuple(t.cuda() for t in x), 'mlp_cpp')"
//
// Build this program against the same libtorch (TORCH=$(python -c "import torch,os; \
// print(os.path.dirname(torch.__file__))")):
//
//   g++ -std=c++20 -O2 examples/run_cpp.cpp -o run_cpp \
//     -I$TORCH/include -I$TORCH/include/torch/csrc/api/include \
//     -L$TORCH/lib -Wl,-rpath,$TORCH/lib -ltorch -ltorch_cpu -lc10 -ldl
//
// and run it: ./run_cpp mlp_cpp [iterations]
//
// The wrapper's interface (runtime/cpp/coil_runtime.h): coil_run(&inputs,
// &outputs, &error) with inputs and outputs as c10::IValues (tensors, ints) in
// the order of the compiled graph, 0 on success. io.txt lists the inputs and
// expected outputs: `input tensor Float cuda:0 2 8 32 32 1 input0.bin` (dtype,
// device, rank, sizes, strides, raw contiguous data) or `input int 8`.

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/ScalarType.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using RunFn = int (*)(std::vector<c10::IValue>*, std::vector<c10::IValue>*, std::string*);

at::ScalarType scalar_type(const std::string& name) {
  static const std::map<std::string, at::ScalarType> types = {
      {"Float", at::kFloat}, {"Double", at::kDouble}, {"Half", at::kHalf},
      {"BFloat16", at::kBFloat16}, {"Long", at::kLong}, {"Int", at::kInt},
      {"Short", at::kShort}, {"Char", at::kChar}, {"Byte", at::kByte}, {"Bool", at::kBool}};
  auto it = types.find(name);
  if (it == types.end()) throw std::runtime_error("unknown dtype " + name);
  return it->second;
}

c10::IValue read_value(std::istringstream& words, const std::string& dir) {
  std::string kind;
  words >> kind;
  if (kind == "int") {
    int64_t v;
    words >> v;
    return v;
  }
  std::string dtype, device, file;
  int64_t rank;
  words >> dtype >> device >> rank;
  std::vector<int64_t> sizes(rank), strides(rank);
  for (auto& s : sizes) words >> s;
  for (auto& s : strides) words >> s;
  words >> file;
  std::ifstream in(dir + "/" + file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  at::Tensor host = at::empty(sizes, at::TensorOptions().dtype(scalar_type(dtype)));
  if (static_cast<size_t>(host.nbytes()) != bytes.size()) {
    throw std::runtime_error(file + " does not hold the tensor's bytes");
  }
  std::memcpy(host.data_ptr(), bytes.data(), bytes.size());
  // The layout and device the graph was compiled for.
  at::Tensor out = at::empty_strided(sizes, strides, host.options().device(c10::Device(device)));
  out.copy_(host);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " DIR [iterations]\n";
    return 2;
  }
  std::string dir = argv[1];
  int iterations = argc > 2 ? std::atoi(argv[2]) : 100;
  // libtorch's CUDA support registers itself when loaded; nothing here names a
  // symbol of it, so the linker would drop it.
  dlopen("libtorch_cuda.so", RTLD_NOW | RTLD_GLOBAL);

  void* lib = dlopen((dir + "/wrapper.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::cerr << "cannot load " << dir << "/wrapper.so: " << dlerror() << "\n";
    return 1;
  }
  auto run = reinterpret_cast<RunFn>(dlsym(lib, "coil_run"));
  if (run == nullptr) {
    std::cerr << dir << "/wrapper.so is not a coil C++ wrapper (no coil_run)\n";
    return 1;
  }

  std::vector<c10::IValue> inputs, expected;
  std::ifstream io(dir + "/io.txt");
  std::string line;
  while (std::getline(io, line)) {
    std::istringstream words(line);
    std::string role;
    words >> role;
    (role == "input" ? inputs : expected).push_back(read_value(words, dir));
  }

  std::vector<c10::IValue> outputs;
  std::string error;
  std::vector<c10::IValue> args = inputs;
  if (run(&args, &outputs, &error) != 0) {
    std::cerr << "coil_run failed: " << error << "\n";
    return 1;
  }
  if (outputs.size() != expected.size()) {
    std::cerr << "got " << outputs.size() << " outputs, expected " << expected.size() << "\n";
    return 1;
  }
  bool ok = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!expected[i].isTensor()) continue;
    at::Tensor got = outputs[i].toTensor().cpu().to(at::kDouble);
    at::Tensor want = expected[i].toTensor().cpu().to(at::kDouble);
    double err = got.sub(want).abs().max().item().toDouble();
    double tol = 1e-4 + 1e-4 * want.abs().max().item().toDouble();
    std::printf("output %zu: %s max abs error %.3g\n", i,
                c10::str(outputs[i].toTensor().sizes()).c_str(), err);
    ok = ok && err <= tol;
  }

  // Time it: the host's cost per call, the GPU work being small.
  auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < iterations; ++k) {
    args = inputs;
    outputs.clear();
    if (run(&args, &outputs, &error) != 0) {
      std::cerr << "coil_run failed: " << error << "\n";
      return 1;
    }
  }
  if (!outputs.empty() && outputs[0].isTensor()) outputs[0].toTensor().cpu();  // synchronizes
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                  .count() / iterations;
  std::printf("%s: %d calls, %.1f us per call\n", ok ? "ok" : "MISMATCH", iterations, us);
  return ok ? 0 : 1;
}
