/* A stand-in for the Level Zero loader and a GPU driver (libze_loader.so.1),
 * for testing Canopy's Level Zero backend on machines without one
 * (tests/backends/level_zero_mock_driver.cpp builds it with the system's C
 * compiler and passes its path as LevelZeroOptions::library).
 *
 * It implements the functions the backend's table resolves, with device
 * memory in host memory and every command done at once (it signals the
 * command's event, and zeEventHostSynchronize fails on an event nobody
 * signalled). Modules must be SPIR-V (magic number checked); their "native
 * binary" is the SPIR-V behind the prefix MOCKNATIVE, and only that is taken
 * back with ZE_MODULE_FORMAT_NATIVE. A module whose SPIR-V names an entry
 * point "mock_reject" fails to build, with a build log.
 *
 * It "runs" three kernels on the host the way the SPIR-V Canopy generates
 * for them runs on a GPU, work-item by work-item, reading the arguments the
 * kernel ABI of jit/spirv.hpp lays out:
 *   triad     (a, a_n0, b, b_n0, c, c_n0, s, begin0, end0)
 *   index_2d  (values, n0, n1, begin0, end0, begin1, end1):
 *       values[i][j] = i * 1000 + j, device dimension 0 being j
 *   sum       (x, x_n0, total_partials, total_scratch, begin0, end0): the
 *       strided walk and the tree over each work-group, one partial per group.
 * Other kernels launch without running. Every launch is recorded.
 *
 * Its devices are set by the environment when the driver is asked:
 * MOCK_ZE_DEVICES (default 1), MOCK_ZE_NO_FP64 (set: no fp64, no 64-bit
 * atomics), MOCK_ZE_MAX_GROUPS (the most work-groups per dimension of a
 * launch, default 65535; launches beyond it fail). The mock_* functions let the test read what happened. */
#include <level_zero/ze_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 4
#define MAX_ARGUMENTS 32

struct _ze_driver_handle_t {
  int unused;
};
struct _ze_device_handle_t {
  int index;
};
struct _ze_context_handle_t {
  int alive;
};
struct _ze_command_list_handle_t {
  uint32_t ordinal;
};
struct _ze_event_pool_handle_t {
  int host_visible;
};
struct _ze_event_handle_t {
  int signalled;
};
struct _ze_module_build_log_handle_t {
  char text[256];
};
struct _ze_module_handle_t {
  unsigned char* spirv;
  size_t size;
};
struct Argument {
  unsigned char bytes[16];
  size_t size;
  int local; /* set without a value: work-group memory of `size` bytes */
};
struct _ze_kernel_handle_t {
  char name[128];
  uint32_t group[3];
  struct Argument arguments[MAX_ARGUMENTS];
};

struct Launch {
  char name[128];
  uint32_t group[3], count[3];
};

static struct _ze_driver_handle_t the_driver;
static struct _ze_device_handle_t devices[MAX_DEVICES];
static long live_allocations, live_contexts, live_modules, live_kernels;
static int built_from_spirv, loaded_native;
static struct Launch launches[1024];
static int launch_count;

static int device_count(void) {
  const char* text = getenv("MOCK_ZE_DEVICES");
  int count = text ? atoi(text) : 1;
  return count < 0 ? 0 : count > MAX_DEVICES ? MAX_DEVICES : count;
}

static int has_fp64(void) { return getenv("MOCK_ZE_NO_FP64") == NULL; }

static uint32_t max_group_count(void) {
  const char* text = getenv("MOCK_ZE_MAX_GROUPS");
  return text ? (uint32_t)atoi(text) : 65535;
}

ze_result_t zeInit(ze_init_flags_t flags) {
  return flags == ZE_INIT_FLAG_GPU_ONLY ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ENUMERATION;
}

ze_result_t zeDriverGet(uint32_t* count, ze_driver_handle_t* drivers) {
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (drivers && *count >= 1) drivers[0] = &the_driver;
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDriverGetProperties(ze_driver_handle_t driver, ze_driver_properties_t* properties) {
  if (driver != &the_driver || !properties) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (properties->stype != ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  memset(properties->uuid.id, 7, sizeof properties->uuid.id);
  properties->driverVersion = 42;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDriverGetApiVersion(ze_driver_handle_t driver, ze_api_version_t* version) {
  *version = ZE_API_VERSION_1_3;
  return driver == &the_driver ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

ze_result_t zeDeviceGet(ze_driver_handle_t driver, uint32_t* count, ze_device_handle_t* handles) {
  if (driver != &the_driver || !count) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  const int available = device_count();
  if (handles)
    for (int k = 0; k < available && k < (int)*count; ++k) {
      devices[k].index = k;
      handles[k] = &devices[k];
    }
  if (!handles || *count > (uint32_t)available) *count = (uint32_t)available;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetProperties(ze_device_handle_t device, ze_device_properties_t* p) {
  if (p->stype != ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  p->type = ZE_DEVICE_TYPE_GPU;
  p->vendorId = 0x8086;
  p->deviceId = 0x0bd5;
  p->flags = 0;
  p->maxMemAllocSize = (uint64_t)1 << 30;
  p->physicalEUSimdWidth = 8;
  p->numSlices = 1;
  p->numSubslicesPerSlice = 2;
  p->numEUsPerSubslice = 8;
  snprintf(p->name, sizeof p->name, "Mock GPU %d", device->index);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetComputeProperties(ze_device_handle_t device, ze_device_compute_properties_t* p) {
  (void)device;
  if (p->stype != ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  p->maxTotalGroupSize = 512;
  p->maxGroupSizeX = p->maxGroupSizeY = 512;
  p->maxGroupSizeZ = 64;
  p->maxGroupCountX = p->maxGroupCountY = p->maxGroupCountZ = max_group_count();
  p->maxSharedLocalMemory = 64 * 1024;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetModuleProperties(ze_device_handle_t device, ze_device_module_properties_t* p) {
  if (p->stype != ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  p->spirvVersionSupported = ZE_MAKE_VERSION(1, 2);
  p->flags = has_fp64() ? (ZE_DEVICE_MODULE_FLAG_FP64 | ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS) : 0;
  memset(p->nativeKernelSupported.id, 0xab, sizeof p->nativeKernelSupported.id);
  p->nativeKernelSupported.id[0] = (uint8_t)device->index;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetMemoryProperties(ze_device_handle_t device, uint32_t* count, ze_device_memory_properties_t* p) {
  (void)device;
  if (p)
    for (uint32_t k = 0; k < *count && k < 2; ++k) p[k].totalSize = (uint64_t)2 << 30;
  if (!p || *count > 2) *count = 2;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetCommandQueueGroupProperties(ze_device_handle_t device, uint32_t* count,
                                                   ze_command_queue_group_properties_t* p) {
  (void)device;
  if (p && *count >= 2) {
    p[0].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
    p[0].maxMemoryFillPatternSize = 4;
    p[0].numQueues = 2;
    p[1].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
    p[1].maxMemoryFillPatternSize = 128;
    p[1].numQueues = 1;
  }
  *count = 2;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDevicePciGetPropertiesExt(ze_device_handle_t device, ze_pci_ext_properties_t* p) {
  if (p->stype != ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  p->address.domain = 0;
  p->address.bus = 0x3a + (uint32_t)device->index;
  p->address.device = 0;
  p->address.function = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeContextCreate(ze_driver_handle_t driver, const ze_context_desc_t* desc, ze_context_handle_t* context) {
  if (driver != &the_driver || desc->stype != ZE_STRUCTURE_TYPE_CONTEXT_DESC) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *context = calloc(1, sizeof **context);
  (*context)->alive = 1;
  ++live_contexts;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeContextDestroy(ze_context_handle_t context) {
  free(context);
  --live_contexts;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListCreateImmediate(ze_context_handle_t context, ze_device_handle_t device,
                                         const ze_command_queue_desc_t* desc, ze_command_list_handle_t* list) {
  (void)context;
  (void)device;
  if (desc->stype != ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC || desc->ordinal != 1)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *list = calloc(1, sizeof **list);
  (*list)->ordinal = desc->ordinal;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListDestroy(ze_command_list_handle_t list) {
  free(list);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeEventPoolCreate(ze_context_handle_t context, const ze_event_pool_desc_t* desc, uint32_t count,
                              ze_device_handle_t* handles, ze_event_pool_handle_t* pool) {
  (void)context;
  (void)count;
  (void)handles;
  if (desc->stype != ZE_STRUCTURE_TYPE_EVENT_POOL_DESC || desc->count < 1) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *pool = calloc(1, sizeof **pool);
  (*pool)->host_visible = (desc->flags & ZE_EVENT_POOL_FLAG_HOST_VISIBLE) != 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeEventPoolDestroy(ze_event_pool_handle_t pool) {
  free(pool);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeEventCreate(ze_event_pool_handle_t pool, const ze_event_desc_t* desc, ze_event_handle_t* event) {
  if (!pool->host_visible || desc->stype != ZE_STRUCTURE_TYPE_EVENT_DESC) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *event = calloc(1, sizeof **event);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeEventDestroy(ze_event_handle_t event) {
  free(event);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeEventHostSynchronize(ze_event_handle_t event, uint64_t timeout) {
  (void)timeout;
  return event->signalled ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

ze_result_t zeEventHostReset(ze_event_handle_t event) {
  event->signalled = 0;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t signal(ze_event_handle_t event) {
  if (event) event->signalled = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeMemAllocDevice(ze_context_handle_t context, const ze_device_mem_alloc_desc_t* desc, size_t size,
                             size_t alignment, ze_device_handle_t device, void** memory) {
  (void)context;
  (void)device;
  if (desc->stype != ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC || size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (alignment & (alignment - 1)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  if (size > ((size_t)1 << 30)) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  *memory = aligned_alloc(64, (size + 63) / 64 * 64);
  ++live_allocations;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeMemFree(ze_context_handle_t context, void* memory) {
  (void)context;
  free(memory);
  --live_allocations;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListAppendMemoryCopy(ze_command_list_handle_t list, void* destination, const void* source,
                                          size_t size, ze_event_handle_t done, uint32_t waits,
                                          ze_event_handle_t* wait_events) {
  (void)list;
  (void)waits;
  (void)wait_events;
  memcpy(destination, source, size);
  return signal(done);
}

ze_result_t zeCommandListAppendMemoryFill(ze_command_list_handle_t list, void* start, const void* pattern,
                                          size_t pattern_size, size_t size, ze_event_handle_t done, uint32_t waits,
                                          ze_event_handle_t* wait_events) {
  (void)list;
  (void)waits;
  (void)wait_events;
  if (pattern_size == 0 || (pattern_size & (pattern_size - 1)) || pattern_size > 128 || size % pattern_size)
    return ZE_RESULT_ERROR_INVALID_SIZE;
  for (size_t at = 0; at < size; at += pattern_size) memcpy((char*)start + at, pattern, pattern_size);
  return signal(done);
}

/* True when the SPIR-V module holds the string `name` (as an entry point's name). */
static int names(const unsigned char* spirv, size_t size, const char* name) {
  const size_t length = strlen(name) + 1; /* with its nul */
  for (size_t at = 0; at + length <= size; at += 4)
    if (memcmp(spirv + at, name, length) == 0) return 1;
  return 0;
}

ze_result_t zeModuleCreate(ze_context_handle_t context, ze_device_handle_t device, const ze_module_desc_t* desc,
                           ze_module_handle_t* module, ze_module_build_log_handle_t* log) {
  (void)context;
  (void)device;
  if (log) *log = calloc(1, sizeof **log);
  if (desc->stype != ZE_STRUCTURE_TYPE_MODULE_DESC) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  const unsigned char* input = desc->pInputModule;
  size_t size = desc->inputSize;
  if (desc->format == ZE_MODULE_FORMAT_NATIVE) {
    if (size < 10 || memcmp(input, "MOCKNATIVE", 10) != 0) return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
    input += 10;
    size -= 10;
  } else {
    uint32_t magic = 0;
    if (size >= 4) memcpy(&magic, input, 4);
    if (magic != 0x07230203u) {
      if (log) snprintf((*log)->text, sizeof(*log)->text, "mock: not SPIR-V");
      return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    if (names(input, size, "mock_reject")) {
      if (log) snprintf((*log)->text, sizeof(*log)->text, "mock: error: kernel 'mock_reject' is refused on purpose");
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
  }
  *module = calloc(1, sizeof **module);
  (*module)->spirv = malloc(size);
  memcpy((*module)->spirv, input, size);
  (*module)->size = size;
  ++live_modules;
  if (desc->format == ZE_MODULE_FORMAT_NATIVE)
    ++loaded_native;
  else
    ++built_from_spirv;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeModuleDestroy(ze_module_handle_t module) {
  free(module->spirv);
  free(module);
  --live_modules;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeModuleBuildLogGetString(ze_module_build_log_handle_t log, size_t* size, char* text) {
  const size_t needed = strlen(log->text) + 1;
  if (text) memcpy(text, log->text, *size < needed ? *size : needed);
  *size = needed;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeModuleBuildLogDestroy(ze_module_build_log_handle_t log) {
  free(log);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeModuleGetNativeBinary(ze_module_handle_t module, size_t* size, uint8_t* binary) {
  const size_t needed = module->size + 10;
  if (binary) {
    if (*size < needed) return ZE_RESULT_ERROR_INVALID_SIZE;
    memcpy(binary, "MOCKNATIVE", 10);
    memcpy(binary + 10, module->spirv, module->size);
  }
  *size = needed;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeKernelCreate(ze_module_handle_t module, const ze_kernel_desc_t* desc, ze_kernel_handle_t* kernel) {
  if (desc->stype != ZE_STRUCTURE_TYPE_KERNEL_DESC || !names(module->spirv, module->size, desc->pKernelName))
    return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  *kernel = calloc(1, sizeof **kernel);
  snprintf((*kernel)->name, sizeof(*kernel)->name, "%s", desc->pKernelName);
  ++live_kernels;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeKernelDestroy(ze_kernel_handle_t kernel) {
  free(kernel);
  --live_kernels;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeKernelGetProperties(ze_kernel_handle_t kernel, ze_kernel_properties_t* p) {
  (void)kernel;
  if (p->stype != ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  p->maxSubgroupSize = 16;
  p->maxNumSubgroups = 8; /* at most 128 work-items in a group for this kernel */
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeKernelSetGroupSize(ze_kernel_handle_t kernel, uint32_t x, uint32_t y, uint32_t z) {
  if (x == 0 || y == 0 || z == 0 || (uint64_t)x * y * z > 128) return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  kernel->group[0] = x;
  kernel->group[1] = y;
  kernel->group[2] = z;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeKernelSetArgumentValue(ze_kernel_handle_t kernel, uint32_t index, size_t size, const void* value) {
  if (index >= MAX_ARGUMENTS) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
  struct Argument* argument = &kernel->arguments[index];
  if (value && size > sizeof argument->bytes) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
  argument->size = size;
  argument->local = value == NULL;
  if (value) memcpy(argument->bytes, value, size);
  return ZE_RESULT_SUCCESS;
}

/* Argument `k` of `kernel` as a value of its type. */
static void* pointer_at(ze_kernel_handle_t kernel, int k) {
  void* p;
  memcpy(&p, kernel->arguments[k].bytes, sizeof p);
  return p;
}
static int64_t long_at(ze_kernel_handle_t kernel, int k) {
  int64_t v;
  memcpy(&v, kernel->arguments[k].bytes, sizeof v);
  return v;
}
static double double_at(ze_kernel_handle_t kernel, int k) {
  double v;
  memcpy(&v, kernel->arguments[k].bytes, sizeof v);
  return v;
}

static void run_triad(ze_kernel_handle_t kernel, const ze_group_count_t* count) {
  double* a = pointer_at(kernel, 0);
  const double* b = pointer_at(kernel, 2);
  const double* c = pointer_at(kernel, 4);
  const double s = double_at(kernel, 6);
  const int64_t begin = long_at(kernel, 7), end = long_at(kernel, 8);
  const uint64_t items = (uint64_t)count->groupCountX * kernel->group[0];
  for (uint64_t id = 0; id < items; ++id) {
    const int64_t i = begin + (int64_t)id;
    if (i < end) a[i] = b[i] + s * c[i];
  }
}

static void run_index_2d(ze_kernel_handle_t kernel, const ze_group_count_t* count) {
  int64_t* values = pointer_at(kernel, 0);
  const int64_t n1 = long_at(kernel, 2);
  const int64_t begin0 = long_at(kernel, 3), end0 = long_at(kernel, 4);
  const int64_t begin1 = long_at(kernel, 5), end1 = long_at(kernel, 6);
  const uint64_t items_x = (uint64_t)count->groupCountX * kernel->group[0];
  const uint64_t items_y = (uint64_t)count->groupCountY * kernel->group[1];
  for (uint64_t y = 0; y < items_y; ++y)
    for (uint64_t x = 0; x < items_x; ++x) {
      const int64_t i = begin0 + (int64_t)y, j = begin1 + (int64_t)x;
      if (i < end0 && j < end1) values[i * n1 + j] = i * 1000 + j;
    }
}

static void run_sum(ze_kernel_handle_t kernel, const ze_group_count_t* count) {
  const double* x = pointer_at(kernel, 0);
  double* partials = pointer_at(kernel, 2);
  const uint32_t size = kernel->group[0];
  if (!kernel->arguments[3].local || kernel->arguments[3].size != size * sizeof(double)) return; /* no result */
  const int64_t begin = long_at(kernel, 4), end = long_at(kernel, 5);
  const int64_t points = end - begin, items = (int64_t)count->groupCountX * size;
  double* scratch = calloc(size, sizeof(double));
  for (uint32_t g = 0; g < count->groupCountX; ++g) {
    for (uint32_t lane = 0; lane < size; ++lane) {
      double acc = 0;
      for (int64_t p = (int64_t)g * size + lane; p < points; p += items) acc += x[begin + p];
      scratch[lane] = acc;
    }
    for (uint32_t half = size / 2; half > 0; half /= 2)
      for (uint32_t lane = 0; lane < half; ++lane) scratch[lane] += scratch[lane + half];
    partials[g] = scratch[0];
  }
  free(scratch);
}

ze_result_t zeCommandListAppendLaunchKernel(ze_command_list_handle_t list, ze_kernel_handle_t kernel,
                                            const ze_group_count_t* count, ze_event_handle_t done, uint32_t waits,
                                            ze_event_handle_t* wait_events) {
  (void)list;
  (void)waits;
  (void)wait_events;
  if (kernel->group[0] == 0) return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  const uint32_t most = max_group_count();
  if (count->groupCountX > most || count->groupCountY > most || count->groupCountZ > most)
    return ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION;
  if (launch_count < (int)(sizeof launches / sizeof launches[0])) {
    struct Launch* launch = &launches[launch_count++];
    snprintf(launch->name, sizeof launch->name, "%s", kernel->name);
    memcpy(launch->group, kernel->group, sizeof launch->group);
    launch->count[0] = count->groupCountX;
    launch->count[1] = count->groupCountY;
    launch->count[2] = count->groupCountZ;
  }
  if (strcmp(kernel->name, "triad") == 0) run_triad(kernel, count);
  if (strcmp(kernel->name, "index_2d") == 0) run_index_2d(kernel, count);
  if (strcmp(kernel->name, "sum") == 0) run_sum(kernel, count);
  return signal(done);
}

/* ---- what the test reads ---- */

long mock_live_allocations(void) { return live_allocations; }
long mock_live_contexts(void) { return live_contexts; }
long mock_live_modules(void) { return live_modules; }
long mock_live_kernels(void) { return live_kernels; }
int mock_built_from_spirv(void) { return built_from_spirv; }
int mock_loaded_native(void) { return loaded_native; }
int mock_launch_count(void) { return launch_count; }
void mock_clear_launches(void) { launch_count = 0; }
/* Launch `index`: its kernel's name, group size and group count; NULL past the last. */
const char* mock_launch(int index, uint32_t* group, uint32_t* count) {
  if (index < 0 || index >= launch_count) return NULL;
  memcpy(group, launches[index].group, sizeof launches[index].group);
  memcpy(count, launches[index].count, sizeof launches[index].count);
  return launches[index].name;
}
