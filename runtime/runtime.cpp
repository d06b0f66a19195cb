#include "runtime.hpp"

namespace canopy {

Runtime::Runtime() : engine_(std::make_unique<runtime::Engine>()) {}

Runtime::~Runtime() = default;

void Runtime::pause() { engine_->pause(); }

std::string Runtime::describe() const { return engine_->describe(); }

}  // namespace canopy
