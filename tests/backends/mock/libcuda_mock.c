/* A stand-in for the CUDA driver (libcuda.so.1), for testing Canopy's CUDA
 * backend on machines without a GPU (tests/backends/cuda_mock_driver.cpp
 * builds it with the system's C compiler and points CANOPY_LIBCUDA at it).
 *
 * It implements the driver functions the backend's table resolves, with
 * device memory in host memory, and it "runs" three kernels on the host the
 * way the CUDA C++ Canopy generates for them would run on a GPU, thread by
 * thread, so that a test can check the arguments, grids and begins the
 * backend launches with end to end:
 *   triad, triad_edges  (a, a_n0, b, b_n0, c, c_n0, s, i_begin, i_end)
 *   index_2d, index_2d_edges  (out, out_n0, out_n1, i_begin, i_end, j_begin, j_end):
 *       out[i][j] = i * 1000 + j
 *   sum  (x, x_n0, total_partials, i_begin, i_end): a strided f64 sum
 *       reduction with a tree per block, one partial per block.
 * Other kernels launch without running. Every launch is recorded.
 *
 * Its devices are set by the environment when the driver is asked:
 * MOCK_CUDA_DEVICES (default 1), MOCK_CUDA_CC (compute capability as
 * 10 * major + minor, default 90). A module image containing MOCK_REJECT
 * is refused with CUDA_ERROR_INVALID_PTX and an error log. The mock_*
 * functions let the test read what happened. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kInvalidContext = 201,
  kInvalidPtx = 218,
  kNotFound = 500,
};

struct Module {
  char* image;
  size_t size;
};

struct Function {
  char name[128];
};

struct Launch {
  char name[128];
  unsigned grid[3], block[3];
};

static int context_token; /* the primary context's address */
static int retained;      /* primary context references held */
static int current_depth; /* contexts pushed and not popped */
static long live_allocations;
static int modules_loaded, modules_unloaded;
static struct Launch launches[4096];
static int launch_count;

static int env_int(const char* name, int fallback) {
  const char* text = getenv(name);
  return text && *text ? atoi(text) : fallback;
}

/* ---- what the test reads ----------------------------------------------- */

int mock_retained(void) { return retained; }
int mock_current_depth(void) { return current_depth; }
long mock_live_allocations(void) { return live_allocations; }
int mock_modules_loaded(void) { return modules_loaded; }
int mock_modules_unloaded(void) { return modules_unloaded; }
int mock_launch_count(void) { return launch_count; }
void mock_clear_launches(void) { launch_count = 0; }
/* Launch `index`: its function's name, and its grid and block along x, y, z. */
const char* mock_launch(int index, unsigned* grid, unsigned* block) {
  if (index < 0 || index >= launch_count) return NULL;
  memcpy(grid, launches[index].grid, sizeof launches[index].grid);
  memcpy(block, launches[index].block, sizeof launches[index].block);
  return launches[index].name;
}

/* ---- initialisation and devices ---------------------------------------- */

CUresult cuInit(unsigned int flags) { return flags == 0 ? kSuccess : kInvalidValue; }
CUresult cuDriverGetVersion(int* version) {
  *version = 12040;
  return kSuccess;
}
CUresult cuGetErrorName(CUresult code, const char** name) {
  switch (code) {
    case kSuccess: *name = "CUDA_SUCCESS"; return kSuccess;
    case kInvalidPtx: *name = "CUDA_ERROR_INVALID_PTX"; return kSuccess;
    case kOutOfMemory: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return kSuccess;
    default: *name = NULL; return kInvalidValue;
  }
}
CUresult cuGetErrorString(CUresult code, const char** text) {
  *text = code == kInvalidPtx ? "a PTX JIT compilation failed (mock)" : NULL;
  return *text ? kSuccess : kInvalidValue;
}
CUresult cuDeviceGetCount(int* count) {
  *count = env_int("MOCK_CUDA_DEVICES", 1);
  return kSuccess;
}
CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal < 0 || ordinal >= env_int("MOCK_CUDA_DEVICES", 1)) return kInvalidValue;
  *device = ordinal;
  return kSuccess;
}
CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
  snprintf(name, (size_t)length, "Mock GPU %d", device);
  return kSuccess;
}
CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
  const int capability = env_int("MOCK_CUDA_CC", 90);
  switch (attribute) {
    case 1: *value = 1024; break; /* max threads per block */
    case 2:
    case 3: *value = 1024; break;       /* max block x, y */
    case 4: *value = 64; break;         /* max block z */
    case 5: *value = 2147483647; break; /* max grid x */
    case 6:
    case 7: *value = 65535; break;
    case 8: *value = 49152; break; /* shared memory per block */
    case 10: *value = 32; break;   /* warp size */
    case 16: *value = 4; break;    /* multiprocessors */
    case 18: *value = 0; break;    /* integrated */
    case 33: *value = 0x3b + device; break;
    case 34: *value = 0; break;
    case 50: *value = 0; break;
    case 75: *value = capability / 10; break;
    case 76: *value = capability % 10; break;
    default: return kInvalidValue;
  }
  return kSuccess;
}
CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
  *bytes = (size_t)1 << 30;
  return kSuccess;
}
CUresult cuDeviceGetPCIBusId(char* text, int length, CUdevice device) {
  /* Like nvidia-smi: an 8-digit domain, hexadecimal in capitals. */
  snprintf(text, (size_t)length, "00000000:%02X:00.0", 0x3b + device);
  return kSuccess;
}

/* ---- contexts ------------------------------------------------------------ */

CUresult cuDevicePrimaryCtxRetain(void** context, CUdevice device) {
  ++retained;
  *context = &context_token;
  return kSuccess;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  if (retained == 0) return kInvalidContext;
  --retained;
  return kSuccess;
}
CUresult cuCtxPushCurrent_v2(void* context) {
  if (context != &context_token || retained == 0) return kInvalidContext;
  ++current_depth;
  return kSuccess;
}
CUresult cuCtxPopCurrent_v2(void** context) {
  if (current_depth == 0) return kInvalidContext;
  --current_depth;
  if (context) *context = &context_token;
  return kSuccess;
}

/* ---- memory -------------------------------------------------------------- */

static CUresult need_context(void) { return current_depth > 0 ? kSuccess : kInvalidContext; }

CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  *free_bytes = (size_t)1 << 29;
  *total = (size_t)1 << 30;
  return kSuccess;
}
CUresult cuMemAlloc_v2(CUdeviceptr* pointer, size_t bytes) {
  if (need_context() != kSuccess) return kInvalidContext;
  if (bytes == 0) return kInvalidValue;
  if (bytes > ((size_t)1 << 30)) return kOutOfMemory;
  void* memory = calloc(1, bytes);
  if (!memory) return kOutOfMemory;
  ++live_allocations;
  *pointer = (CUdeviceptr)(uintptr_t)memory;
  return kSuccess;
}
CUresult cuMemFree_v2(CUdeviceptr pointer) {
  if (need_context() != kSuccess) return kInvalidContext;
  free((void*)(uintptr_t)pointer);
  --live_allocations;
  return kSuccess;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr target, const void* source, size_t bytes, void* stream) {
  if (need_context() != kSuccess) return kInvalidContext;
  memcpy((void*)(uintptr_t)target, source, bytes);
  return kSuccess;
}
CUresult cuMemcpyDtoHAsync_v2(void* target, CUdeviceptr source, size_t bytes, void* stream) {
  if (need_context() != kSuccess) return kInvalidContext;
  memcpy(target, (const void*)(uintptr_t)source, bytes);
  return kSuccess;
}
CUresult cuMemsetD8Async(CUdeviceptr target, unsigned char value, size_t count, void* stream) {
  if (need_context() != kSuccess) return kInvalidContext;
  memset((void*)(uintptr_t)target, value, count);
  return kSuccess;
}
CUresult cuMemsetD32Async(CUdeviceptr target, unsigned int value, size_t count, void* stream) {
  if (need_context() != kSuccess || target % 4 != 0) return kInvalidValue;
  unsigned int* words = (unsigned int*)(uintptr_t)target;
  for (size_t k = 0; k < count; ++k) words[k] = value;
  return kSuccess;
}
CUresult cuMemsetD2D32Async(CUdeviceptr target, size_t pitch, unsigned int value, size_t width, size_t height,
                            void* stream) {
  if (need_context() != kSuccess || target % 4 != 0 || pitch % 4 != 0 || pitch < 4 * width) return kInvalidValue;
  for (size_t row = 0; row < height; ++row) {
    unsigned int* words = (unsigned int*)(uintptr_t)(target + row * pitch);
    for (size_t k = 0; k < width; ++k) words[k] = value;
  }
  return kSuccess;
}

/* ---- streams and events ------------------------------------------------- */

static int stream_token, event_token;
CUresult cuStreamCreate(void** stream, unsigned int flags) {
  *stream = &stream_token;
  return need_context();
}
CUresult cuStreamDestroy_v2(void* stream) { return need_context(); }
CUresult cuStreamSynchronize(void* stream) { return need_context(); }
CUresult cuEventCreate(void** event, unsigned int flags) {
  *event = &event_token;
  return need_context();
}
CUresult cuEventRecord(void* event, void* stream) { return need_context(); }
CUresult cuEventSynchronize(void* event) { return kSuccess; }
CUresult cuEventDestroy_v2(void* event) { return need_context(); }

/* ---- modules -------------------------------------------------------------- */

/* The image's length: a cubin is an ELF64 file that ends with the last of
 * its header tables and section contents; PTX is text up to its NUL. */
static size_t image_size(const char* image) {
  if (memcmp(image,
             "\x7f"
             "ELF",
             4) != 0)
    return strlen(image);
  uint64_t program_offset, section_offset;
  uint16_t program_entry, program_count, section_entry, section_count;
  memcpy(&program_offset, image + 0x20, 8);
  memcpy(&section_offset, image + 0x28, 8);
  memcpy(&program_entry, image + 0x36, 2);
  memcpy(&program_count, image + 0x38, 2);
  memcpy(&section_entry, image + 0x3a, 2);
  memcpy(&section_count, image + 0x3c, 2);
  uint64_t end = 64;
  if (program_offset + (uint64_t)program_entry * program_count > end)
    end = program_offset + (uint64_t)program_entry * program_count;
  if (section_offset + (uint64_t)section_entry * section_count > end)
    end = section_offset + (uint64_t)section_entry * section_count;
  for (uint16_t k = 0; k < section_count; ++k) {
    const char* header = image + section_offset + (uint64_t)k * section_entry;
    uint32_t type;
    uint64_t offset, size;
    memcpy(&type, header + 0x04, 4);
    memcpy(&offset, header + 0x18, 8);
    memcpy(&size, header + 0x20, 8);
    if (type != 8 /* SHT_NOBITS */ && offset + size > end) end = offset + size;
  }
  return (size_t)end;
}

static int contains(const char* image, size_t size, const char* word) {
  const size_t length = strlen(word);
  for (size_t k = 0; k + length <= size; ++k)
    if (memcmp(image + k, word, length) == 0) return 1;
  return 0;
}

CUresult cuModuleLoadDataEx(void** module, const void* image, unsigned int count, int* options, void** values) {
  if (need_context() != kSuccess) return kInvalidContext;
  const char* bytes = (const char*)image;
  const int is_cubin = memcmp(bytes,
                              "\x7f"
                              "ELF",
                              4) == 0;
  const size_t size = image_size(bytes);
  char* info_log = NULL;
  char* error_log = NULL;
  size_t info_size = 0, error_size = 0;
  for (unsigned int k = 0; k < count; ++k) {
    if (options[k] == 3) info_log = (char*)values[k];
    if (options[k] == 4) info_size = (size_t)(uintptr_t)values[k];
    if (options[k] == 5) error_log = (char*)values[k];
    if (options[k] == 6) error_size = (size_t)(uintptr_t)values[k];
  }
  if (info_log && info_size > 0) snprintf(info_log, info_size, "mock: loaded %zu bytes", size);
  if (contains(bytes, size, "MOCK_REJECT") || (!is_cubin && !contains(bytes, size, ".version"))) {
    if (error_log && error_size > 0)
      snprintf(error_log, error_size, "mock: rejected the %s image", is_cubin ? "cubin" : "PTX");
    return kInvalidPtx;
  }
  struct Module* loaded = calloc(1, sizeof *loaded);
  loaded->image = malloc(size);
  memcpy(loaded->image, bytes, size);
  loaded->size = size;
  ++modules_loaded;
  *module = loaded;
  return kSuccess;
}
CUresult cuModuleUnload(void* module) {
  if (need_context() != kSuccess) return kInvalidContext;
  struct Module* loaded = module;
  free(loaded->image);
  free(loaded);
  ++modules_unloaded;
  return kSuccess;
}
CUresult cuModuleGetFunction(void** function, void* module, const char* name) {
  struct Module* loaded = module;
  if (!contains(loaded->image, loaded->size, name) || strlen(name) >= sizeof(((struct Function*)0)->name))
    return kNotFound;
  struct Function* found = calloc(1, sizeof *found); /* never freed: functions live as long as modules */
  strcpy(found->name, name);
  *function = found;
  return kSuccess;
}
CUresult cuFuncGetAttribute(int* value, int attribute, void* function) {
  if (attribute == 0)
    *value = env_int("MOCK_CUDA_FUNCTION_THREADS", 1024);
  else if (attribute == 4)
    *value = 32;
  else
    return kInvalidValue;
  return kSuccess;
}

/* ---- running the known kernels on the host ----------------------------- */

static long long slot_int(void** params, int k) {
  long long value;
  memcpy(&value, params[k], sizeof value);
  return value;
}
static double slot_double(void** params, int k) {
  double value;
  memcpy(&value, params[k], sizeof value);
  return value;
}
static void* slot_pointer(void** params, int k) {
  CUdeviceptr value;
  memcpy(&value, params[k], sizeof value);
  return (void*)(uintptr_t)value;
}

static void run_triad(int edges, const unsigned* grid, const unsigned* block, void** params) {
  double* a = slot_pointer(params, 0);
  const double* b = slot_pointer(params, 2);
  const double* c = slot_pointer(params, 4);
  const double s = slot_double(params, 6);
  const long long begin = slot_int(params, 7), end = slot_int(params, 8);
  for (unsigned long long g = 0; g < grid[0]; ++g)
    for (unsigned t = 0; t < block[0]; ++t) {
      const long long i = begin + (long long)(g * block[0] + t);
      if (edges && i >= end) continue;
      a[i] = b[i] + s * c[i];
    }
}

static void run_index_2d(int edges, const unsigned* grid, const unsigned* block, void** params) {
  long long* out = slot_pointer(params, 0);
  const long long n1 = slot_int(params, 2);
  const long long i_begin = slot_int(params, 3), i_end = slot_int(params, 4);
  const long long j_begin = slot_int(params, 5), j_end = slot_int(params, 6);
  for (unsigned long long gy = 0; gy < grid[1]; ++gy)
    for (unsigned long long gx = 0; gx < grid[0]; ++gx)
      for (unsigned ty = 0; ty < block[1]; ++ty)
        for (unsigned tx = 0; tx < block[0]; ++tx) {
          const long long i = i_begin + (long long)(gy * block[1] + ty);
          const long long j = j_begin + (long long)(gx * block[0] + tx);
          if (edges && (i >= i_end || j >= j_end)) continue;
          out[i * n1 + j] = i * 1000 + j;
        }
}

static void run_sum(const unsigned* grid, const unsigned* block, void** params) {
  const double* x = slot_pointer(params, 0);
  double* partials = slot_pointer(params, 2);
  const long long begin = slot_int(params, 3), end = slot_int(params, 4);
  const long long points = end - begin, items = (long long)grid[0] * block[0];
  double* scratch = calloc(block[0], sizeof *scratch);
  for (unsigned g = 0; g < grid[0]; ++g) {
    for (unsigned t = 0; t < block[0]; ++t) {
      double total = 0.0;
      for (long long point = (long long)g * block[0] + t; point < points; point += items) total += x[begin + point];
      scratch[t] = total;
    }
    for (unsigned width = block[0] / 2; width > 0; width /= 2)
      for (unsigned t = 0; t < width; ++t) scratch[t] = scratch[t] + scratch[t + width];
    partials[g] = scratch[0];
  }
  free(scratch);
}

CUresult cuLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void* stream, void** params, void** extra) {
  if (need_context() != kSuccess) return kInvalidContext;
  const struct Function* f = function;
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  if (gx == 0 || gy == 0 || gz == 0 || bx * by * bz == 0 || bx * by * bz > 1024 || gy > 65535 || gz > 65535)
    return kInvalidValue;
  if (launch_count < (int)(sizeof launches / sizeof launches[0])) {
    strcpy(launches[launch_count].name, f->name);
    memcpy(launches[launch_count].grid, grid, sizeof grid);
    memcpy(launches[launch_count].block, block, sizeof block);
    ++launch_count;
  }
  if (strcmp(f->name, "triad") == 0 || strcmp(f->name, "triad_edges") == 0)
    run_triad(strcmp(f->name, "triad_edges") == 0, grid, block, params);
  else if (strcmp(f->name, "index_2d") == 0 || strcmp(f->name, "index_2d_edges") == 0)
    run_index_2d(strcmp(f->name, "index_2d_edges") == 0, grid, block, params);
  else if (strcmp(f->name, "sum") == 0)
    run_sum(grid, block, params);
  return kSuccess;
}
