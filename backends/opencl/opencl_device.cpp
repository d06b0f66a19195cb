#include "opencl_device.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>

#include <canopy/ir/dump.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/verifier.hpp>
#include <canopy/jit/checked_file.hpp>
#include <canopy/jit/hash.hpp>
#include <canopy/jit/opencl_c.hpp>

#include "../fault_injection.hpp"
#include "../program_cache.hpp"
#include "../signal_guard.hpp"

namespace canopy::backends::opencl {

namespace {

// Changes whenever what the generated source means for a given text changes
// in a way the key does not show (the host side of the kernel ABI).
constexpr int kProgramFormatVersion = 1;

// ---- reading device and platform information --------------------------------

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\0' || text.back() == ' ' || text.back() == '\n')) text.pop_back();
  return text;
}

std::string device_string(const Api& api, cl_device_id device, cl_device_info what) {
  std::size_t size = 0;
  if (api.clGetDeviceInfo(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string text(size, '\0');
  if (api.clGetDeviceInfo(device, what, size, text.data(), nullptr) != CL_SUCCESS) return "";
  return trimmed(std::move(text));
}

std::string platform_string(const Api& api, cl_platform_id platform, cl_platform_info what) {
  std::size_t size = 0;
  if (api.clGetPlatformInfo(platform, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string text(size, '\0');
  if (api.clGetPlatformInfo(platform, what, size, text.data(), nullptr) != CL_SUCCESS) return "";
  return trimmed(std::move(text));
}

// A fixed-size value of the device, or `fallback` when the device does not say.
template <class T>
T device_value(const Api& api, cl_device_id device, cl_device_info what, T fallback = T{}) {
  T value{};
  if (api.clGetDeviceInfo(device, what, sizeof value, &value, nullptr) != CL_SUCCESS) return fallback;
  return value;
}

// True when the space-separated `list` holds `word`.
bool has_word(const std::string& list, std::string_view word) {
  std::size_t at = 0;
  while ((at = list.find(word, at)) != std::string::npos) {
    const bool starts = at == 0 || list[at - 1] == ' ';
    const bool ends = at + word.size() == list.size() || list[at + word.size()] == ' ';
    if (starts && ends) return true;
    at += word.size();
  }
  return false;
}

// "0000:3b:00.0", from whichever extension the device offers; empty when none.
std::string pci_bus_id(const Api& api, cl_device_id device, const std::string& extensions) {
  char text[32] = {};
  if (has_word(extensions, "cl_khr_pci_bus_info")) {
    cl_device_pci_bus_info_khr bus{};
    if (api.clGetDeviceInfo(device, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof bus, &bus, nullptr) == CL_SUCCESS) {
      std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", bus.pci_domain, bus.pci_bus, bus.pci_device,
                    bus.pci_function);
      return text;
    }
  }
  if (has_word(extensions, "cl_nv_device_attribute_query")) {
    constexpr cl_device_info kBusIdNv = 0x4008, kSlotIdNv = 0x4009, kDomainIdNv = 0x400A;
    const auto bus = device_value<cl_uint>(api, device, kBusIdNv, ~0u);
    const auto slot = device_value<cl_uint>(api, device, kSlotIdNv, ~0u);
    const auto domain = device_value<cl_uint>(api, device, kDomainIdNv, 0u);
    if (bus != ~0u && slot != ~0u) {
      std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", domain, bus, slot >> 3, slot & 7);
      return text;
    }
  }
  if (has_word(extensions, "cl_amd_device_attribute_query")) {
    cl_device_topology_amd topology{};
    if (api.clGetDeviceInfo(device, CL_DEVICE_TOPOLOGY_AMD, sizeof topology, &topology, nullptr) == CL_SUCCESS &&
        topology.raw.type == CL_DEVICE_TOPOLOGY_TYPE_PCIE_AMD) {
      std::snprintf(text, sizeof text, "0000:%02x:%02x.%x", static_cast<unsigned char>(topology.pcie.bus),
                    static_cast<unsigned char>(topology.pcie.device),
                    static_cast<unsigned char>(topology.pcie.function));
      return text;
    }
  }
  return "";
}

// True when "OpenCL C <major>.<minor> ..." is at least 1.2.
bool at_least_opencl_c_1_2(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "OpenCL C %d.%d", &major, &minor) != 2) return false;
  return major > 1 || (major == 1 && minor >= 2);
}

std::size_t floor_pow2(std::size_t n) {
  std::size_t p = 1;
  while (p <= n / 2) p *= 2;
  return p;
}

std::string bytes_text(std::size_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%zu bytes (%.2f GiB)", bytes, static_cast<double>(bytes) / (1 << 30));
  return text;
}

// What code generation, builds and launches need to know of a device.
OpenCLTraits read_traits(const Api& cl, cl_platform_id platform, cl_device_id device) {
  OpenCLTraits traits;
  traits.platform_name = platform_string(cl, platform, CL_PLATFORM_NAME);
  traits.platform_version = platform_string(cl, platform, CL_PLATFORM_VERSION);
  traits.device_version = device_string(cl, device, CL_DEVICE_VERSION);
  traits.opencl_c_version = device_string(cl, device, CL_DEVICE_OPENCL_C_VERSION);
  traits.extensions = device_string(cl, device, CL_DEVICE_EXTENSIONS);
  traits.is_cpu = (device_value<cl_device_type>(cl, device, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_CPU) != 0;
  traits.streaming_entry = traits.is_cpu && device_value<cl_uint>(cl, device, CL_DEVICE_MEM_BASE_ADDR_ALIGN) >= 512;
  const auto cache = static_cast<std::size_t>(device_value<cl_ulong>(cl, device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE));
  traits.streaming_threshold = streaming_threshold_from_environment(streaming_threshold_for_cache(cache));
  traits.int64_atomics = has_word(traits.extensions, "cl_khr_int64_base_atomics");
  traits.correctly_rounded_divide_sqrt = (device_value<cl_device_fp_config>(cl, device, CL_DEVICE_SINGLE_FP_CONFIG) &
                                          CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  traits.opencl_c_1_2 = at_least_opencl_c_1_2(traits.opencl_c_version);
  std::size_t sizes[3] = {1, 1, 1};
  if (cl.clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof sizes, sizes, nullptr) == CL_SUCCESS)
    for (int d = 0; d < 3; ++d) traits.max_work_item_sizes[d] = std::max<std::size_t>(1, sizes[d]);
  traits.local_memory = static_cast<std::size_t>(device_value<cl_ulong>(cl, device, CL_DEVICE_LOCAL_MEM_SIZE));
  const std::size_t most = floor_pow2(device_value<std::size_t>(cl, device, CL_DEVICE_MAX_WORK_GROUP_SIZE, 1));
  const int compute_units = static_cast<int>(device_value<cl_uint>(cl, device, CL_DEVICE_MAX_COMPUTE_UNITS, 1));
  // CPU devices run a work-group's items in a loop on one core: large groups
  // cost nothing and mean fewer of them to schedule. GPUs want a few warps.
  traits.work_group_size = static_cast<int>(std::min<std::size_t>(most, traits.is_cpu ? 4096 : 256));
  // Reductions: on CPUs, 8 groups of 64 items per core measured best on
  // PoCL (each item streams through one contiguous chunk).
  traits.reduction_work_group_size = static_cast<int>(std::min<std::size_t>(most, traits.is_cpu ? 64 : 256));
  traits.reduction_groups = std::max(1, compute_units) * 8;
  traits.reduction_walk = traits.is_cpu ? jit::ReductionWalk::Chunked : jit::ReductionWalk::Strided;
  return traits;
}

// Who the device is and what it holds, as the runtime sees every device.
DeviceInfo read_info(const Api& cl, cl_device_id device, int index, const OpenCLTraits& traits) {
  DeviceInfo info;
  info.id = "opencl:" + std::to_string(index);
  info.backend = "opencl";
  info.name = device_string(cl, device, CL_DEVICE_NAME);
  info.vendor = device_string(cl, device, CL_DEVICE_VENDOR);
  const std::string driver = device_string(cl, device, CL_DRIVER_VERSION);
  info.driver_version = driver + ", " + traits.opencl_c_version;
  info.fingerprint = "opencl|" + traits.platform_name + "|" + info.name + "|" + driver + "|" + traits.opencl_c_version +
                     "|" + traits.device_version;
  info.pci_bus_id = pci_bus_id(cl, device, traits.extensions);
  info.compute_units = static_cast<int>(device_value<cl_uint>(cl, device, CL_DEVICE_MAX_COMPUTE_UNITS, 1));
  info.global_memory = static_cast<std::int64_t>(device_value<cl_ulong>(cl, device, CL_DEVICE_GLOBAL_MEM_SIZE));
  info.max_allocation = static_cast<std::int64_t>(device_value<cl_ulong>(cl, device, CL_DEVICE_MAX_MEM_ALLOC_SIZE));
  info.max_work_group = static_cast<int>(device_value<std::size_t>(cl, device, CL_DEVICE_MAX_WORK_GROUP_SIZE, 1));
  info.preferred_vector_width =
      static_cast<int>(device_value<cl_uint>(cl, device, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, 1)) * 4;
  info.fp64 = has_word(traits.extensions, "cl_khr_fp64") ||
              device_value<cl_device_fp_config>(cl, device, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
  info.host_memory = false;
  info.on_host_cores = traits.is_cpu;
  if (traits.streaming_entry)
    info.streaming_threshold = static_cast<std::int64_t>(
        std::min<std::size_t>(traits.streaming_threshold, std::numeric_limits<std::int64_t>::max()));
  return info;
}

// The bytes a scalar argument of parameter type `type` passes (bool as int).
std::vector<unsigned char> scalar_bytes(ir::ScalarType type, const ScalarArg& arg) {
  const double as_float = ir::is_float(arg.type) ? arg.float_value : static_cast<double>(arg.int_value);
  const std::int64_t as_int = ir::is_float(arg.type) ? static_cast<std::int64_t>(arg.float_value) : arg.int_value;
  auto bytes_of = [](const auto& value) {
    std::vector<unsigned char> out(sizeof value);
    std::memcpy(out.data(), &value, sizeof value);
    return out;
  };
  switch (type) {
    case ir::ScalarType::Bool: return bytes_of(static_cast<cl_int>(as_int != 0 || as_float != 0.0));
    case ir::ScalarType::I32: return bytes_of(static_cast<cl_int>(as_int));
    case ir::ScalarType::I64: return bytes_of(static_cast<cl_long>(as_int));
    case ir::ScalarType::F32: return bytes_of(static_cast<cl_float>(as_float));
    case ir::ScalarType::F64: return bytes_of(static_cast<cl_double>(as_float));
  }
  return {};
}

}  // namespace

// ---- programs ---------------------------------------------------------------

OpenCLProgram::~OpenCLProgram() {
  if (!api_) return;
  for (cl_mem partials : partials_)
    if (partials) api_->clReleaseMemObject(partials);
  if (entry_) api_->clReleaseKernel(entry_);
  if (edges_) api_->clReleaseKernel(edges_);
  if (stream_) api_->clReleaseKernel(stream_);
  if (program_) api_->clReleaseProgram(program_);
}

// ---- the device -------------------------------------------------------------

OpenCLDevice::OpenCLDevice(std::shared_ptr<const Api> api, cl_platform_id platform, cl_device_id device, int index,
                           const OpenCLOptions& options)
    : api_(std::move(api)), platform_(platform), device_(device) {
  const Api& cl = *api_;
  traits_ = read_traits(cl, platform, device);
  info_ = read_info(cl, device, index, traits_);
  cl_int status = CL_SUCCESS;
  const cl_context_properties properties[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform),
                                              0};
  context_ = cl.clCreateContext(properties, 1, &device_, nullptr, nullptr, &status);
  check(status, "clCreateContext", label());
  queue_ = cl.clCreateCommandQueue(context_, device_, 0, &status);
  if (status != CL_SUCCESS) {
    cl.clReleaseContext(context_);
    check(status, "clCreateCommandQueue", label());
  }
  if (const std::string dir = jit::cache_directory(options.cache_dir); dir != "off")
    disk_ = std::make_unique<jit::DiskCache>(dir);
}

OpenCLDevice::~OpenCLDevice() {
  {
    // Programs still held elsewhere keep their own references to the context.
    std::lock_guard lock(compile_mutex_);
    programs_.clear();
  }
  if (queue_) {
    api_->clFinish(queue_);
    api_->clReleaseCommandQueue(queue_);
  }
  if (context_) api_->clReleaseContext(context_);
}

std::string OpenCLDevice::label() const { return "OpenCL device '" + info_.name + "' (" + info_.id + ")"; }

jit::CSourceOptions OpenCLDevice::code_options() const {
  jit::CSourceOptions options;
  options.reduction_walk = traits_.reduction_walk;
  options.streaming_entry = traits_.streaming_entry;
  return options;
}

std::string OpenCLDevice::build_options() const {
  std::string options;
  if (traits_.opencl_c_1_2) options += "-cl-std=CL1.2";
  if (traits_.correctly_rounded_divide_sqrt) options += " -cl-fp32-correctly-rounded-divide-sqrt";
  return options;
}

// ---- memory -----------------------------------------------------------------

Buffer OpenCLDevice::allocate(std::size_t bytes) {
  const auto largest = static_cast<std::size_t>(info_.max_allocation);
  if (largest > 0 && bytes > largest)
    throw Error(label() + " cannot allocate " + bytes_text(bytes) + ": its largest buffer is " + bytes_text(largest) +
                "; split the array or place it on another location");
  cl_int status = CL_SUCCESS;
  // OpenCL has no empty buffers: an empty one holds one byte nobody reads.
  const bool injected = inject_fault("opencl", FaultOperation::Alloc);
  cl_mem memory =
      injected ? nullptr
               : api_->clCreateBuffer(context_, CL_MEM_READ_WRITE, std::max<std::size_t>(bytes, 1), nullptr, &status);
  if (injected) status = CL_MEM_OBJECT_ALLOCATION_FAILURE;
  if (status != CL_SUCCESS || !memory)
    throw Error(label() + " could not allocate " + bytes_text(bytes) + " (" + error_name(status) +
                (injected ? injected_note("opencl", FaultOperation::Alloc) : "") + "); it has " +
                bytes_text(static_cast<std::size_t>(info_.global_memory)) +
                " in all: free arrays there or place this one elsewhere");
  return Buffer{memory, bytes};
}

void OpenCLDevice::free(Buffer buffer) noexcept {
  if (buffer.handle) api_->clReleaseMemObject(static_cast<cl_mem>(buffer.handle));
}

void OpenCLDevice::check_buffer(Buffer buffer, std::size_t offset, std::size_t bytes, const char* what) const {
  if (!buffer) throw Error(std::string(what) + " on " + label() + " was given no buffer");
  if (offset > buffer.bytes || bytes > buffer.bytes - offset)
    throw Error(std::string(what) + " on " + label() + " reaches byte " + std::to_string(offset + bytes) +
                " of a buffer of " + std::to_string(buffer.bytes) + " bytes");
}

void OpenCLDevice::copy_in(Buffer buffer, std::size_t offset, const void* source, std::size_t bytes) {
  check_buffer(buffer, offset, bytes, "copy_in");
  if (bytes == 0) return;
  if (!source) throw Error("copy_in on " + label() + " was given no host memory to read");
  if (inject_fault("opencl", FaultOperation::Copy))
    check(CL_OUT_OF_RESOURCES, "clEnqueueWriteBuffer" + injected_note("opencl", FaultOperation::Copy), label());
  check(api_->clEnqueueWriteBuffer(queue_, static_cast<cl_mem>(buffer.handle), CL_TRUE, offset, bytes, source, 0,
                                   nullptr, nullptr),
        "clEnqueueWriteBuffer", label());
}

void OpenCLDevice::copy_out(Buffer buffer, std::size_t offset, void* destination, std::size_t bytes) {
  check_buffer(buffer, offset, bytes, "copy_out");
  if (bytes == 0) return;
  if (!destination) throw Error("copy_out on " + label() + " was given no host memory to write");
  if (inject_fault("opencl", FaultOperation::Copy))
    check(CL_OUT_OF_RESOURCES, "clEnqueueReadBuffer" + injected_note("opencl", FaultOperation::Copy), label());
  check(api_->clEnqueueReadBuffer(queue_, static_cast<cl_mem>(buffer.handle), CL_TRUE, offset, bytes, destination, 0,
                                  nullptr, nullptr),
        "clEnqueueReadBuffer", label());
}

void OpenCLDevice::fill(Buffer buffer, std::size_t first, std::size_t count, const ScalarArg& value) {
  std::vector<unsigned char> pattern = scalar_bytes(value.type, value);
  if (value.type == ir::ScalarType::Bool) pattern.resize(1);  // bool elements are one byte
  const std::size_t size = pattern.size();
  check_buffer(buffer, 0, 0, "fill");
  const std::size_t capacity = buffer.bytes / size;
  if (first > capacity || count > capacity - first)
    throw Error("fill on " + label() + " reaches element " + std::to_string(first) + " + " + std::to_string(count) +
                " of a buffer of " + std::to_string(capacity) + " elements of " + std::to_string(size) + " bytes");
  if (count == 0) return;
  cl_event event = nullptr;
  check(api_->clEnqueueFillBuffer(queue_, static_cast<cl_mem>(buffer.handle), pattern.data(), size, first * size,
                                  count * size, 0, nullptr, &event),
        "clEnqueueFillBuffer", label());
  wait(event, "clEnqueueFillBuffer");
}

void OpenCLDevice::wait(cl_event event, const char* what) {
  const cl_int status = api_->clWaitForEvents(1, &event);
  api_->clReleaseEvent(event);
  check(status, std::string("waiting for ") + what, label());
}

// ---- compiling --------------------------------------------------------------

void check_device_supports(const ir::Kernel& kernel, const DeviceInfo& info, const OpenCLTraits& traits) {
  const jit::CSourceFeatures features = jit::features_of(kernel);
  const std::string device = "OpenCL device '" + info.name + "' (" + info.id + ")";
  if (features.uses_f64 && !info.fp64)
    throw Error("kernel '" + kernel.name + "' uses f64, but " + device +
                " has no double precision (cl_khr_fp64); use f32 or run the kernel on a device with fp64");
  if (features.int64_atomics && !traits.int64_atomics)
    throw Error("kernel '" + kernel.name + "' adds atomically to an i64 or f64 array, which needs " +
                "cl_khr_int64_base_atomics, and " + device +
                " lacks it; use i32 or f32 atomics or run the kernel on another device");
}

std::shared_ptr<Program> OpenCLDevice::compile(std::shared_ptr<const ir::Kernel> optimized) {
  if (!optimized) throw Error("compile on " + label() + " was given no kernel");
  if (inject_fault("opencl", FaultOperation::Compile))
    throw Error(label() + " could not build kernel '" + optimized->name + "' (clBuildProgram: " +
                error_name(CL_BUILD_PROGRAM_FAILURE) + injected_note("opencl", FaultOperation::Compile) + ")");
  ir::verify(*optimized);
  check_device_supports(*optimized, info_, traits_);
  return compile_source(optimized, jit::opencl_c_source(*optimized, code_options()));
}

std::shared_ptr<OpenCLProgram> OpenCLDevice::compile_source(std::shared_ptr<const ir::Kernel> optimized,
                                                            jit::CSource source) {
  if (!optimized) throw Error("compile on " + label() + " was given no kernel");
  ir::verify(*optimized);
  check_device_supports(*optimized, info_, traits_);
  dump("opencl", optimized->name, source.text);
  const std::string key =
      jit::hash_hex("canopy opencl program " + std::to_string(kProgramFormatVersion) + "\n" + info_.fingerprint + "\n" +
                    traits_.platform_version + "\n" + build_options() + "\n" + source.entry + "\n" + source.text);
  std::lock_guard lock(compile_mutex_);
  if (auto known = programs_[key].lock()) return known;
  auto program = build(std::move(optimized), std::move(source), key);
  programs_[key] = program;
  return program;
}

std::shared_ptr<OpenCLProgram> OpenCLDevice::build(std::shared_ptr<const ir::Kernel> optimized, jit::CSource source,
                                                   const std::string& key) {
  std::shared_ptr<OpenCLProgram> program(new OpenCLProgram);
  program->api_ = api_;
  program->device_ = this;
  program->kernel_ = std::move(optimized);
  program->source_ = std::move(source);
  program->cache_key_ = key;
  program->origin_ = load_or_build(
      disk_.get(), key, [&](const std::string& binary) { return build_from_binary(*program, binary); },
      [&] {
        build_from_source(*program);
        return program_binary(program->program_);
      });
  cl_int status = CL_SUCCESS;
  program->entry_ = api_->clCreateKernel(program->program_, program->source_.entry.c_str(), &status);
  check(status, "clCreateKernel for kernel '" + program->kernel_->name + "'", label());
  if (!program->source_.edge_entry.empty()) {
    program->edges_ = api_->clCreateKernel(program->program_, program->source_.edge_entry.c_str(), &status);
    check(status, "clCreateKernel for the edges of kernel '" + program->kernel_->name + "'", label());
  }
  if (!program->source_.stream_entry.empty()) {
    program->stream_ = api_->clCreateKernel(program->program_, program->source_.stream_entry.c_str(), &status);
    check(status, "clCreateKernel for the streaming entry of kernel '" + program->kernel_->name + "'", label());
  }
  program->max_work_group_ =
      std::max<std::size_t>(1, std::min<std::size_t>(static_cast<std::size_t>(std::max(1, info_.max_work_group)), [&] {
                              std::size_t size = 0;
                              api_->clGetKernelWorkGroupInfo(program->entry_, device_, CL_KERNEL_WORK_GROUP_SIZE,
                                                             sizeof size, &size, nullptr);
                              return size ? size : std::size_t{1};
                            }()));
  // One partial per work-group for each reduction, allocated once.
  const auto& params = program->kernel_->params;
  program->partials_.assign(params.size(), nullptr);
  for (std::size_t p = 0; p < params.size(); ++p)
    if (params[p].is_reduction())
      program->partials_[p] = static_cast<cl_mem>(
          allocate(static_cast<std::size_t>(traits_.reduction_groups) * ir::size_of(params[p].type)).handle);
  return program;
}

bool OpenCLDevice::build_from_binary(OpenCLProgram& program, const std::string& binary) {
  const KeepSignals keep;  // PoCL's compiler may install signal handlers (signal_guard.hpp)
  cl_int status = CL_SUCCESS, binary_status = CL_SUCCESS;
  const std::size_t size = binary.size();
  const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
  program.program_ = api_->clCreateProgramWithBinary(context_, 1, &device_, &size, &bytes, &binary_status, &status);
  if (status == CL_SUCCESS && binary_status == CL_SUCCESS && program.program_ &&
      api_->clBuildProgram(program.program_, 1, &device_, build_options().c_str(), nullptr, nullptr) == CL_SUCCESS)
    return true;
  // A binary the driver no longer takes (it changed without saying so): build from source.
  if (program.program_) api_->clReleaseProgram(program.program_);
  program.program_ = nullptr;
  return false;
}

void OpenCLDevice::build_from_source(OpenCLProgram& program) {
  const KeepSignals keep;  // PoCL's compiler may install signal handlers (signal_guard.hpp)
  const std::string& text = program.source_.text;
  const char* start = text.c_str();
  const std::size_t length = text.size();
  cl_int status = CL_SUCCESS;
  program.program_ = api_->clCreateProgramWithSource(context_, 1, &start, &length, &status);
  check(status, "clCreateProgramWithSource for kernel '" + program.kernel_->name + "'", label());
  status = api_->clBuildProgram(program.program_, 1, &device_, build_options().c_str(), nullptr, nullptr);
  if (status == CL_SUCCESS) return;
  throw Error(label() + " could not build kernel '" + program.kernel_->name +
              "' (clBuildProgram: " + error_name(status) + ").\nBuild log:\n" + build_log(program.program_) +
              "\nOpenCL C source (" + program.source_.entry + "):\n" + jit::numbered_source(text) +
              "Canopy generated this source from the kernel's IR: if the log blames the source, please report it "
              "with the IR (CANOPY_DUMP=ir,opencl writes both).");
}

std::string OpenCLDevice::build_log(cl_program program) const {
  std::size_t size = 0;
  if (api_->clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS || size == 0)
    return "(the driver gave no build log)";
  std::string log(size, '\0');
  api_->clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  log = trimmed(std::move(log));
  return log.empty() ? "(the build log is empty)" : log;
}

std::string OpenCLDevice::program_binary(cl_program program) const {
  std::size_t size = 0;
  if (api_->clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS || size == 0)
    return "";
  std::string binary(size, '\0');
  auto* bytes = reinterpret_cast<unsigned char*>(binary.data());
  if (api_->clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof bytes, &bytes, nullptr) != CL_SUCCESS) return "";
  return binary;
}

// ---- running ----------------------------------------------------------------

std::vector<ReductionValue> OpenCLDevice::run(const Program& base, const std::vector<KernelArg>& args,
                                              const Range& range) {
  const auto* program = dynamic_cast<const OpenCLProgram*>(&base);
  if (!program || program->device_ != this)
    throw Error(label() + " was asked to run a program compiled for another device; compile the kernel on it first");
  const ir::Kernel& kernel = program->kernel();
  std::vector<ReductionValue> results;
  if (!check_launch(kernel, args, range)) {
    for (const auto& param : kernel.params)
      if (param.is_reduction()) results.push_back(identity_value(param.reduce, param.type));
    return results;
  }
  if (inject_fault("opencl", FaultOperation::Launch))
    check(CL_OUT_OF_RESOURCES,
          "clEnqueueNDRangeKernel for kernel '" + kernel.name + "'" + injected_note("opencl", FaultOperation::Launch),
          label());
  std::lock_guard lock(launch_mutex_);
  if (program->edges_) {
    launch_points(*program, args, range);
    return results;
  }
  set_arguments(*program, program->entry_, args, range);
  return launch_reduction(*program, range);
}

// Throws canopy::Error when `args` or `range` do not fit `kernel`; returns
// false when the range holds no point.
bool OpenCLDevice::check_launch(const ir::Kernel& kernel, const std::vector<KernelArg>& args,
                                const Range& range) const {
  if (args.size() != kernel.params.size())
    throw Error("kernel '" + kernel.name + "' takes " + std::to_string(kernel.params.size()) + " arguments, " +
                std::to_string(args.size()) + " were given");
  for (std::size_t p = 0; p < args.size(); ++p) {
    const auto& param = kernel.params[p];
    const bool fits = param.is_array()    ? std::holds_alternative<ArrayArg>(args[p])
                      : param.is_scalar() ? std::holds_alternative<ScalarArg>(args[p])
                                          : std::holds_alternative<ReductionArg>(args[p]);
    if (!fits)
      throw Error("argument " + std::to_string(p) + " of kernel '" + kernel.name + "' does not fit its " +
                  std::string(ir::name_of(param.kind)) + " parameter '" + param.name + "'");
  }
  if (range.dims != kernel.dims)
    throw Error("kernel '" + kernel.name + "' has " + std::to_string(kernel.dims) + " index dimensions, the range " +
                std::to_string(range.dims));
  bool empty = false;
  for (int d = 0; d < kernel.dims; ++d) {
    if (range.begin[d] < 0)
      throw Error(label() + " runs index ranges from 0 up; kernel '" + kernel.name +
                  "' was given a range starting at " + std::to_string(range.begin[d]) + " in dimension " +
                  std::to_string(d));
    empty = empty || range.end[d] <= range.begin[d];
  }
  return !empty;
}

// Sets the arguments of `entry` as the kernel ABI says (jit/c_source.hpp).
void OpenCLDevice::set_arguments(const OpenCLProgram& program, cl_kernel entry, const std::vector<KernelArg>& args,
                                 const Range& range) {
  const ir::Kernel& kernel = program.kernel();
  cl_uint next = 0;
  auto set = [&](std::size_t size, const void* value) {
    check(api_->clSetKernelArg(entry, next, size, value),
          "setting argument " + std::to_string(next) + " of kernel '" + kernel.name + "'", label());
    ++next;
  };
  const std::size_t group = reduction_work_group(program);
  for (std::size_t p = 0; p < args.size(); ++p) {
    const ir::Param& param = kernel.params[p];
    if (param.is_array()) {
      const auto& array = std::get<ArrayArg>(args[p]);
      cl_mem memory = static_cast<cl_mem>(array.data);
      set(sizeof memory, &memory);
      for (int d = 0; d < param.rank; ++d) {
        const cl_long extent = array.extents[static_cast<std::size_t>(d)];
        set(sizeof extent, &extent);
      }
      const cl_long first = array.first;
      set(sizeof first, &first);
    } else if (param.is_scalar()) {
      const auto bytes = scalar_bytes(param.type, std::get<ScalarArg>(args[p]));
      set(bytes.size(), bytes.data());
    } else {
      set(sizeof(cl_mem), &program.partials_[p]);
      set(group * ir::size_of(param.type), nullptr);  // the work-group's scratch
    }
  }
  // The range: ends only where the global offset carries the begins.
  for (int d = 0; d < kernel.dims; ++d) {
    const cl_long begin = range.begin[d], end = range.end[d];
    if (!program.edges_) set(sizeof begin, &begin);
    set(sizeof end, &end);
  }
}

// A work-group size for a reduction: a power of two the kernel, the device
// and its local memory allow.
std::size_t OpenCLDevice::reduction_work_group(const OpenCLProgram& program) const {
  std::size_t scratch_per_item = 0;
  for (const auto& param : program.kernel().params)
    if (param.is_reduction()) scratch_per_item += ir::size_of(param.type);
  std::size_t size = std::min({static_cast<std::size_t>(traits_.reduction_work_group_size), program.max_work_group_,
                               traits_.max_work_item_sizes[0]});
  if (scratch_per_item > 0 && traits_.local_memory > 0)
    size = std::min(size, std::max<std::size_t>(1, traits_.local_memory / scratch_per_item));
  return floor_pow2(std::max<std::size_t>(1, size));
}

// Work-group sizes per device dimension (0 is the last index): in one
// dimension the device's size whatever the range, so that a device that
// compiles per work-group size (PoCL) compiles once; in more, a power of two
// no larger than the range in each dimension, at most 64 along the fastest
// on accelerators. A CPU device gives the whole group to the fastest
// dimension: its work-group function vectorises along it, and flat groups
// ran PoCL's 2-D stencils 3-8x faster than 64x16 tiles.
std::array<std::size_t, 3> OpenCLDevice::point_work_group(const OpenCLProgram& program, const Range& range) const {
  std::array<std::size_t, 3> local{1, 1, 1};
  std::size_t budget = floor_pow2(
      std::max<std::size_t>(1, std::min(static_cast<std::size_t>(traits_.work_group_size), program.max_work_group_)));
  const int dims = range.dims;
  for (int e = 0; e < dims; ++e) {
    const auto extent = static_cast<std::size_t>(range.end[dims - 1 - e] - range.begin[dims - 1 - e]);
    std::size_t size = std::min(budget, floor_pow2(traits_.max_work_item_sizes[static_cast<std::size_t>(e)]));
    if (dims > 1) size = std::min({size, floor_pow2(extent), e == 0 && !traits_.is_cpu ? std::size_t{64} : size});
    local[static_cast<std::size_t>(e)] = std::max<std::size_t>(1, size);
    budget = std::max<std::size_t>(1, budget / local[static_cast<std::size_t>(e)]);
  }
  return local;
}

// The whole work-groups inside the piece run the kernel's unchecked entry;
// the rest runs the checked one in at most one launch per dimension: the
// tail of dimension e, with every point before it in lower dimensions and
// only whole groups in higher ones, so that the launches are disjoint. A
// one-dimensional piece that writes more than the streaming threshold runs
// its whole groups of aligned vectors through the streaming entry instead,
// and the points before and after them as above.
void OpenCLDevice::launch_points(const OpenCLProgram& program, const std::vector<KernelArg>& args, const Range& range) {
  cl_event last = nullptr;
  auto enqueue = [&](cl_kernel entry, int dims, const std::size_t* offset, const std::size_t* global,
                     const std::size_t* local) {
    cl_event event = nullptr;
    check(api_->clEnqueueNDRangeKernel(queue_, entry, static_cast<cl_uint>(dims), offset, global, local, 0, nullptr,
                                       &event),
          "clEnqueueNDRangeKernel for kernel '" + program.kernel().name + "'", label());
    if (last) api_->clReleaseEvent(last);
    last = event;
  };
  // Points of `piece` through the entry and the edges (arguments set once per entry).
  auto run_points = [&](const Range& piece) {
    const int dims = piece.dims;
    const auto local = point_work_group(program, piece);
    std::array<std::size_t, 3> begin{}, extent{}, whole{};
    for (int e = 0; e < dims; ++e) {
      const auto d = static_cast<std::size_t>(dims - 1 - e);
      begin[e] = static_cast<std::size_t>(piece.begin[d]);
      extent[e] = static_cast<std::size_t>(piece.end[d] - piece.begin[d]);
      whole[e] = extent[e] / local[e] * local[e];
    }
    bool arguments_set[2] = {false, false};
    auto launch = [&](cl_kernel entry, std::array<std::size_t, 3> offset, std::array<std::size_t, 3> global) {
      for (int e = 0; e < dims; ++e)
        if (global[e] == 0) return;
      if (bool& set = arguments_set[entry == program.edges_ ? 1 : 0]; !set) {
        set_arguments(program, entry, args, piece);
        set = true;
      }
      enqueue(entry, dims, offset.data(), global.data(), local.data());
    };
    launch(program.entry_, begin, whole);
    for (int e = 0; e < dims; ++e) {
      if (whole[e] == extent[e]) continue;
      std::array<std::size_t, 3> offset = begin, global = whole;
      for (int f = 0; f < e; ++f) global[f] = (extent[f] + local[f] - 1) / local[f] * local[f];
      offset[e] = begin[e] + whole[e];
      global[e] = local[e];
      launch(program.edges_, offset, global);
    }
  };
  try {
    std::vector<Range> rest{range};
    if (program.stream_ && range.dims == 1) {
      const ir::Kernel& kernel = program.kernel();
      std::size_t written = 0;
      for (const auto& param : kernel.params)
        if (param.writes()) written += ir::size_of(param.type);
      // Its arrays are all of the kernel's rank, one element per point.
      const std::size_t passed = bytes_passed(kernel, range.points(), std::vector<std::int64_t>{});
      const std::int64_t width = program.source_.stream_width, b = range.begin[0], e = range.end[0];
      const std::size_t group = floor_pow2(std::max<std::size_t>(
          1, std::min(static_cast<std::size_t>(traits_.work_group_size) / static_cast<std::size_t>(width),
                      program.max_work_group_)));
      const std::int64_t first = (b + width - 1) / width, vectors = e / width - first;
      const std::int64_t whole =
          vectors > 0 ? vectors / static_cast<std::int64_t>(group) * static_cast<std::int64_t>(group) : 0;
      if (whole > 0 &&
          takes_streaming_stores(written * static_cast<std::size_t>(e - b), passed, traits_.streaming_threshold)) {
        set_arguments(program, program.stream_, args, range);
        const auto offset = static_cast<std::size_t>(first), global = static_cast<std::size_t>(whole);
        enqueue(program.stream_, 1, &offset, &global, &group);
        Range head = range, tail = range;
        head.end[0] = first * width;
        tail.begin[0] = (first + whole) * width;
        rest.clear();
        for (const Range& part : {head, tail})
          if (part.end[0] > part.begin[0]) rest.push_back(part);
      }
    }
    for (const Range& piece : rest) run_points(piece);
  } catch (...) {
    if (last) wait(last, "a kernel");
    throw;
  }
  // The queue runs in order: the last launch ends after the others.
  if (last) wait(last, "a kernel");
}

std::vector<ReductionValue> OpenCLDevice::launch_reduction(const OpenCLProgram& program, const Range& range) {
  const ir::Kernel& kernel = program.kernel();
  const std::size_t group = reduction_work_group(program);
  const auto points = static_cast<std::size_t>(range.points());
  const std::size_t groups = std::max<std::size_t>(
      1, std::min(static_cast<std::size_t>(traits_.reduction_groups), (points + group - 1) / group));
  const std::size_t global = groups * group;
  check(api_->clEnqueueNDRangeKernel(queue_, program.entry_, 1, nullptr, &global, &group, 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel for kernel '" + kernel.name + "'", label());
  // The queue runs in order: the blocking reads wait for the kernel.
  std::vector<ReductionValue> results;
  for (std::size_t p = 0; p < kernel.params.size(); ++p) {
    const ir::Param& param = kernel.params[p];
    if (!param.is_reduction()) continue;
    const std::size_t size = ir::size_of(param.type);
    std::vector<unsigned char> partials(groups * size);
    check(api_->clEnqueueReadBuffer(queue_, program.partials_[p], CL_TRUE, 0, partials.size(), partials.data(), 0,
                                    nullptr, nullptr),
          "reading the partial results of kernel '" + kernel.name + "'", label());
    ReductionValue total = identity_value(param.reduce, param.type);
    for (std::size_t g = 0; g < groups; ++g)
      total = combine(param.reduce, total, partial_value(param.type, partials.data() + g * size));
    results.push_back(total);
  }
  return results;
}

// ---- discovery --------------------------------------------------------------

namespace {

std::vector<cl_platform_id> platforms_of(const Api& api, std::string& problem) {
  cl_uint count = 0;
  const cl_int status = api.clGetPlatformIDs(0, nullptr, &count);
  if (status == CL_PLATFORM_NOT_FOUND_KHR || (status == CL_SUCCESS && count == 0)) {
    problem = "no OpenCL platform: the ICD loader '" + api.library +
              "' found none (install a driver such as pocl-opencl-icd; the loader lists them in /etc/OpenCL/vendors)";
    return {};
  }
  if (status != CL_SUCCESS) {
    problem = "clGetPlatformIDs failed: " + error_name(status);
    return {};
  }
  std::vector<cl_platform_id> platforms(count);
  if (api.clGetPlatformIDs(count, platforms.data(), nullptr) != CL_SUCCESS) platforms.clear();
  return platforms;
}

std::vector<cl_device_id> devices_of(const Api& api, cl_platform_id platform) {
  cl_uint count = 0;
  if (api.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count) != CL_SUCCESS || count == 0) return {};
  std::vector<cl_device_id> devices(count);
  if (api.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, devices.data(), nullptr) != CL_SUCCESS) return {};
  return devices;
}

}  // namespace

BackendDevices discover_opencl(const OpenCLOptions& options) {
  // One discovery at a time in the process: two Runtimes starting OpenCL at
  // once (one launching, the other compiling ahead in the background) made
  // PoCL crash in clGetDeviceInfo, or report no available device.
  static std::mutex discovering;
  std::lock_guard lock(discovering);
  BackendDevices found;
  found.backend = "opencl";
  const std::string library = options.library.empty() ? default_library() : options.library;
  const LoadedApi& loaded = load_api(library);
  if (!loaded.api) {
    found.absent_reason = loaded.absent_reason;
    return found;
  }
  const Api& api = *loaded.api;
  std::string problems;
  const auto platforms = platforms_of(api, problems);
  std::vector<std::string> platform_names;
  for (cl_platform_id platform : platforms) {
    platform_names.push_back(platform_string(api, platform, CL_PLATFORM_NAME));
    for (cl_device_id device : devices_of(api, platform)) {
      if (!device_value<cl_bool>(api, device, CL_DEVICE_AVAILABLE, CL_FALSE)) continue;
      try {
        const int index = static_cast<int>(found.devices.size());
        found.devices.push_back(std::make_shared<OpenCLDevice>(loaded.api, platform, device, index, options));
      } catch (const std::exception& error) {
        problems += std::string(problems.empty() ? "" : "; ") + error.what();
      }
    }
  }
  if (found.devices.empty() && problems.empty()) {
    problems = "no OpenCL device: the platforms found (";
    for (std::size_t p = 0; p < platform_names.size(); ++p) problems += (p ? ", " : "") + platform_names[p];
    problems += ") offer no available device";
  }
  if (found.devices.empty()) found.absent_reason = problems;
  return found;
}

}  // namespace canopy::backends::opencl
