// Tests of the settings module (ir/settings.hpp): every variable is read in
// one place, a bad value is refused the same way for every variable, and
// README.md's table documents exactly the variables Canopy reads.
#include <doctest/doctest.h>
#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "scoped_setting.hpp"

namespace {

using canopy::Settings;
using canopy::testing::ScopedSetting;

const std::filesystem::path kSourceRoot = std::filesystem::path(CANOPY_TEST_SOURCE_DIR).parent_path();

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string error_of_reading() {
  try {
    Settings::from_environment();
  } catch (const canopy::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("settings: README.md's table documents exactly the CANOPY_* variables Canopy reads") {
  const std::string readme = read_file(kSourceRoot / "README.md");
  REQUIRE_FALSE(readme.empty());
  std::set<std::string> documented;
  std::istringstream lines(readme);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("| `CANOPY_", 0) == 0) documented.insert(line.substr(3, line.find('`', 3) - 3));
  std::set<std::string> read;
  for (auto name : canopy::setting_names())
    if (name.rfind("CANOPY_", 0) == 0) read.emplace(name);
  CHECK(documented == read);
}

TEST_CASE("settings: nothing in the library reads the environment but the settings module") {
  std::vector<std::string> readers;
  for (const char* folder : {"ir", "dsl", "jit", "backends", "runtime"})
    for (const auto& entry : std::filesystem::recursive_directory_iterator(kSourceRoot / folder)) {
      const auto extension = entry.path().extension();
      if (extension != ".cpp" && extension != ".hpp") continue;
      if (read_file(entry.path()).find("getenv(") != std::string::npos)
        readers.push_back(entry.path().lexically_relative(kSourceRoot).string());
    }
  CHECK(readers == std::vector<std::string>{"ir/settings.cpp"});
}

TEST_CASE("settings: a bad value is an error naming the variable, the value and what is allowed") {
  struct Bad {
    const char* name;
    const char* value;
    const char* allowed;
  };
  const Bad cases[] = {
      {"CANOPY_CACHE_SHARED", "everyone", "'group' to trust"},
      {"CANOPY_DUMP", "ir,asembly", "a comma-separated list of ir, llvm, asm"},
      {"CANOPY_STREAMING_STORES", "maybe", "auto, on or off"},
      {"CANOPY_SIMD", "yes", "auto, on or off"},
      {"CANOPY_PREFETCH", "on", "auto or off"},
      {"CANOPY_HUGE_PAGES", "2M", "auto, on or off"},
      {"CANOPY_SIMD_WIDTH", "3", "a power of two from 2 to 64"},
      {"CANOPY_SIMD_WIDTH", "128", "a power of two from 2 to 64"},
      {"CANOPY_SIMD_WIDTH", "1", "a power of two from 2 to 64"},
      {"CANOPY_SIMD_WIDTH", "-8", "a power of two from 2 to 64"},
      {"CANOPY_ADAPTIVE_DEAD_BAND", "2", "a number in [0, 1]"},
      {"CANOPY_ADAPTIVE_DAMPING", "0", "a number in (0, 1]"},
      {"CANOPY_ADAPTIVE_PROBE", "yes", "0 or 1"},
      {"CANOPY_CHECK", "all", "bounds (check every array index"},
      {"CANOPY_SPLIT_WRITES", "never", "auto (merge where it pays)"},
  };
  for (const Bad& bad : cases) {
    ScopedSetting setting(bad.name, bad.value);
    const std::string message = error_of_reading();
    INFO(message);
    CHECK(message.rfind(std::string(bad.name) + "='" + bad.value + "' is not allowed; use " + bad.allowed, 0) == 0);
  }
  CHECK(error_of_reading().empty());
}

TEST_CASE("settings: read when reloaded, and the same snapshot while the environment is unchanged") {
  ScopedSetting cleared("CANOPY_SPLIT_WRITES", nullptr);
  const Settings& before = canopy::reload_settings();
  CHECK(&canopy::reload_settings() == &before);
  CHECK(before.split_writes.empty());
  {
    ScopedSetting merge("CANOPY_SPLIT_WRITES", "merge");
    CHECK(canopy::settings().split_writes == "merge");
    CHECK(before.split_writes.empty());  // an earlier snapshot never changes
  }
  CHECK(canopy::settings().split_writes.empty());
  {
    // A refused value leaves the settings in force as they were.
    ScopedSetting bad("CANOPY_SPLIT_WRITES", "sometimes");
    CHECK_THROWS_AS(canopy::reload_settings(), canopy::Error);
    CHECK(canopy::settings().split_writes.empty());
  }
}

TEST_CASE("settings: which dumps CANOPY_DUMP asks for") {
  Settings s;
  s.dump = "ir,cost";
  CHECK(s.dumps("ir"));
  CHECK(s.dumps("cost"));
  CHECK_FALSE(s.dumps("llvm"));
  s.dump = "all";
  CHECK(s.dumps("spirv"));
  s.dump = "";
  CHECK_FALSE(s.dumps("ir"));
}

TEST_CASE("settings: Gecko's GECKO_POLICY is read when CANOPY_POLICY is not set, and CANOPY_POLICY wins") {
  ScopedSetting no_canopy("CANOPY_POLICY", nullptr);
  {
    ScopedSetting gecko("GECKO_POLICY", "percentage:[30,70]");
    CHECK(canopy::settings().policy == "percentage:[30,70]");
    CHECK(canopy::settings().policy_variable == "GECKO_POLICY");
    ScopedSetting canopy_policy("CANOPY_POLICY", "static");
    CHECK(canopy::settings().policy == "static");
    CHECK(canopy::settings().policy_variable == "CANOPY_POLICY");
    // Empty is unset, as for every other variable: Gecko's is read.
    ScopedSetting empty("CANOPY_POLICY", "");
    CHECK(canopy::settings().policy == "percentage:[30,70]");
    CHECK(canopy::settings().policy_variable == "GECKO_POLICY");
  }
  ScopedSetting no_gecko("GECKO_POLICY", nullptr);
  CHECK(canopy::settings().policy.empty());
  CHECK(canopy::settings().policy_variable == "CANOPY_POLICY");
}
