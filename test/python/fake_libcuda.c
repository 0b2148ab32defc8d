// A stand-in for libcuda.so.1 that records kernel launches instead of running
// them, so the launch path of coil's C++ wrapper and Triton's own launcher can
// be compared on a machine without a GPU (test_cpp_target.py).
//
// Every entry point either of them calls answers success with plausible
// values; cuLaunchKernel and cuLaunchKernelEx append one line per launch:
//
//   <kernel> grid X Y Z block X Y Z shared N params <hex> <hex> ...
//
// where each parameter's bytes are read with the size fake_set_params gave
// for that kernel (the sizes in the cubin's parameter table). Pointers are
// reported as handed over: a "device pointer" is any address here.

#include <cuda.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KERNELS 64
#define LOG_SIZE (1 << 20)

struct fake_function {
  char name[256];
  int nparams;
  int sizes[64];
};

static struct fake_function functions[MAX_KERNELS];
static int nfunctions = 0;
static char log_text[LOG_SIZE];
static size_t log_len = 0;
static int context_dummy;

static struct fake_function *find(const char *name, int create) {
  for (int i = 0; i < nfunctions; ++i)
    if (strcmp(functions[i].name, name) == 0) return &functions[i];
  if (!create || nfunctions == MAX_KERNELS) return NULL;
  struct fake_function *f = &functions[nfunctions++];
  memset(f, 0, sizeof(*f));
  snprintf(f->name, sizeof(f->name), "%s", name);
  f->nparams = -1;
  return f;
}

void fake_set_params(const char *name, int n, const int *sizes) {
  struct fake_function *f = find(name, 1);
  f->nparams = n;
  for (int i = 0; i < n && i < 64; ++i) f->sizes[i] = sizes[i];
}

const char *fake_log(void) { return log_text; }
void fake_clear(void) { log_len = 0; log_text[0] = '\0'; }

static void append(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(log_text + log_len, LOG_SIZE - log_len, fmt, ap);
  va_end(ap);
  if (n > 0 && log_len + (size_t)n < LOG_SIZE) log_len += (size_t)n;
}

static CUresult record(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned shared, void **params) {
  struct fake_function *f = (struct fake_function *)fn;
  append("%s grid %u %u %u block %u %u %u shared %u params", f->name, gx, gy, gz, bx, by, bz,
         shared);
  for (int i = 0; i < f->nparams; ++i) {
    append(" ");
    const unsigned char *p = (const unsigned char *)params[i];
    for (int b = 0; b < f->sizes[i]; ++b) append("%02x", p[b]);
  }
  append("\n");
  return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int flags) { (void)flags; return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
CUresult cuGetErrorString(CUresult e, const char **s) { (void)e; *s = "fake error"; return CUDA_SUCCESS; }
CUresult cuCtxGetCurrent(CUcontext *c) { *c = (CUcontext)&context_dummy; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext c) { (void)c; return CUDA_SUCCESS; }
CUresult cuCtxGetDevice(CUdevice *d) { *d = 0; return CUDA_SUCCESS; }
CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }
CUresult cuCtxGetLimit(size_t *v, CUlimit l) { (void)l; *v = 0; return CUDA_SUCCESS; }
CUresult cuCtxSetLimit(CUlimit l, size_t v) { (void)l; (void)v; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int o) { *d = o; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  (void)d; *c = (CUcontext)&context_dummy; return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  (void)d;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    default: *v = 1024;
  }
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadData(CUmodule *m, const void *image) {
  (void)image; *m = (CUmodule)&context_dummy; return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule m) { (void)m; return CUDA_SUCCESS; }
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  (void)m;
  struct fake_function *fn = find(name, 1);
  if (fn == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *f = (CUfunction)fn;
  return CUDA_SUCCESS;
}
CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) {
  (void)f;
  *v = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
  return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
  (void)f; (void)a; (void)v; return CUDA_SUCCESS;
}
CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache c) { (void)f; (void)c; return CUDA_SUCCESS; }
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr p) {
  if (a == CU_POINTER_ATTRIBUTE_DEVICE_POINTER) *(CUdeviceptr *)data = p;
  return CUDA_SUCCESS;
}
CUresult cuPointerGetAttributes(unsigned n, CUpointer_attribute *a, void **data, CUdeviceptr p) {
  (void)n; (void)a; (void)data; (void)p; return CUDA_SUCCESS;
}
CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st) {
  (void)s; *st = CU_STREAM_CAPTURE_STATUS_NONE; return CUDA_SUCCESS;
}

#undef cuLaunchKernel
#undef cuLaunchKernelEx
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, CUstream s, void **params,
                        void **extra) {
  (void)s; (void)extra;
  return record(f, gx, gy, gz, bx, by, bz, shared, params);
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
  (void)extra;
  return record(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                c->blockDimZ, c->sharedMemBytes, params);
}
