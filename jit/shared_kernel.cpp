#include "internal/shared_kernel.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include <canopy/ir/settings.hpp>

namespace canopy::jit {

namespace {

bool write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

/// True when `bytes` start with a 64-bit ELF header of type `type`.
bool is_elf(std::string_view bytes, int type) {
  if (bytes.size() < sizeof(Elf64_Ehdr) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) return false;
  Elf64_Ehdr header;
  std::memcpy(&header, bytes.data(), sizeof header);
  return header.e_ident[EI_CLASS] == ELFCLASS64 && header.e_type == type;
}

/// The first executable `name` in the folders of `search_path` (a PATH:
/// folders between colons, an empty one the current folder), or "".
std::string find_program(const std::string& name, const std::string& search_path) {
  std::size_t from = 0;
  for (;;) {
    const std::size_t colon = search_path.find(':', from);
    std::string folder = search_path.substr(from, colon == std::string::npos ? std::string::npos : colon - from);
    if (folder.empty()) folder = ".";
    const std::string candidate = folder + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string::npos) return "";
    from = colon + 1;
  }
}

}  // namespace

bool is_shared_object(std::string_view bytes) { return is_elf(bytes, ET_DYN); }

bool is_relocatable_object(std::string_view bytes) { return is_elf(bytes, ET_REL); }

std::optional<std::string> link_shared_object(std::string_view object, std::string& why) {
  // TMPDIR and PATH as the settings' snapshot read them, not the environment
  // as it is now: this runs on the compiler's writer thread, while another
  // thread may be changing the environment (getenv beside setenv crashed a
  // sanitized test whose main thread set a variable meanwhile).
  const Settings& now = settings();
  std::string pattern = (now.temp_dir.empty() ? std::string("/tmp") : now.temp_dir) + "/canopy-link-XXXXXX";
  const std::string search_path = now.search_path.empty() ? "/usr/bin:/bin" : now.search_path;
  const std::string linker = find_program("ld", search_path);
  if (linker.empty()) {
    why = "no system linker (ld) on the PATH";
    return std::nullopt;
  }
  if (!::mkdtemp(pattern.data())) {
    why = "cannot make a temporary folder in " + pattern.substr(0, pattern.rfind('/'));
    return std::nullopt;
  }
  const std::string folder = pattern, input = folder + "/kernel.o", output = folder + "/kernel.so";
  std::optional<std::string> shared;
  if (write_file(input, object)) {
    std::string ld = "ld", shared_flag = "-shared", z = "-z", noexecstack = "noexecstack", o = "-o";
    char* argv[] = {ld.data(),
                    shared_flag.data(),
                    z.data(),
                    noexecstack.data(),
                    o.data(),
                    const_cast<char*>(output.c_str()),
                    const_cast<char*>(input.c_str()),
                    nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    // The linker gets the search path and nothing else of the environment.
    std::string path_variable = "PATH=" + search_path;
    char* environment[] = {path_variable.data(), nullptr};
    pid_t pid = 0;
    const int spawned = ::posix_spawn(&pid, linker.c_str(), &actions, nullptr, argv, environment);
    posix_spawn_file_actions_destroy(&actions);
    int status = 0;
    if (spawned != 0) {
      why = "the system linker (" + linker + ") could not be started";
    } else if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      why = "the system linker (" + linker + ") failed";
    } else {
      std::ifstream in(output, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (is_shared_object(bytes))
        shared = std::move(bytes);
      else
        why = "the system linker (" + linker + ") wrote no shared object";
    }
  } else {
    why = "cannot write " + input;
  }
  std::error_code ignored;
  std::filesystem::remove_all(folder, ignored);
  return shared;
}

void* load_shared_object(const std::string& path, const std::string& symbol, std::string& why) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* error = ::dlerror();
    why = error ? error : "dlopen failed";
    return nullptr;
  }
  void* address = ::dlsym(handle, symbol.c_str());
  if (!address) why = path + " does not define " + symbol;
  return address;
}

const std::string& host_identity() {
  static const std::string identity = [] {
    std::string text;
    utsname name{};
    if (::uname(&name) == 0) text += std::string("machine ") + name.machine + "\n";
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    static const char* const kept[] = {
        "vendor_id",       "cpu family",       "model",       "model name", "stepping",     "flags", "Features",
        "CPU implementer", "CPU architecture", "CPU variant", "CPU part",   "CPU revision", "isa",   "uarch"};
    while (std::getline(cpuinfo, line)) {
      if (line.empty()) break;  // the first processor only
      const std::string field = line.substr(0, line.find_first_of("\t:"));
      for (const char* k : kept)
        if (field == k) text += line + "\n";
    }
    return text;
  }();
  return identity;
}

}  // namespace canopy::jit
