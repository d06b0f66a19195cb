// An environment variable set (or cleared, with null) for one scope, for the
// tests of Canopy's settings: Canopy reads its variables when a Runtime is
// made (ir/settings.hpp), so the settings are read again on entry and on
// exit. A value the settings refuse leaves the settings in force as they were
// (the test then expects the error from the Runtime it makes, or from
// Settings::from_environment()).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>

namespace canopy::testing {

class ScopedSetting {
 public:
  ScopedSetting(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    put(value);
  }
  ~ScopedSetting() { put(old_ ? old_->c_str() : nullptr); }
  ScopedSetting(const ScopedSetting&) = delete;
  ScopedSetting& operator=(const ScopedSetting&) = delete;

 private:
  void put(const char* value) {
    value ? ::setenv(name_, value, 1) : ::unsetenv(name_);
    try {
      reload_settings();
    } catch (const Error&) {
    }
  }

  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace canopy::testing
