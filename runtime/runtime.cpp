#include "runtime.hpp"

#include "machine_model.hpp"

#include <canopy/ir/dump.hpp>

namespace canopy {

Runtime::Runtime() : Runtime(runtime::RuntimeOptions{}) {}

Runtime::Runtime(const runtime::RuntimeOptions& options) : engine_(std::make_shared<runtime::Engine>(options)) {
  // The adaptive and any policies calibrate (or read) the machine model when first used.
  engine_->set_machine_model_source([this] { return MachineModel::load_or_calibrate(*this); });
}

Runtime::~Runtime() = default;

void Runtime::fuse(bool on) { engine_->set_fusion(on); }

bool Runtime::fusing() const { return engine_->fusion(); }

void Runtime::pause() { engine_->pause(); }

void Runtime::pause(const std::string& location) { engine_->pause(location); }

Hierarchy Runtime::hierarchy() const { return engine_->hierarchy(); }

void Runtime::load_config(const std::string& path) { engine_->load_config(path); }

void Runtime::configure(const std::string& lines) { engine_->apply_config(lines); }

void Runtime::add_location(std::string name, LocationKind kind, LocationTraits traits, const std::string& parent) {
  engine_->check_leaf(name, kind, traits);
  engine_->reconfigure([&](Hierarchy& h) {
    // One leaf per device, as a configuration file binds them (a second leaf
    // on opencl:0 had been taken without a word).
    if (is_device(kind) && h.root())
      for (const Location* leaf : h.leaves(*h.root()))
        if (leaf->kind() == kind && leaf->traits().device == traits.device)
          throw Error("location '" + name + "' (" + std::string(name_of(kind)) + ") names device '" + traits.device +
                      "', which leaf '" + leaf->name() +
                      "' runs already; a device runs one leaf: remove that leaf first, or give another device");
    h.add(std::move(name), kind, std::move(traits), parent);
  });
}

void Runtime::add_location(const std::string& name, const std::string& type, const std::string& parent) {
  for (const std::string* field : {&name, &type, &parent})
    if (field->empty() || field->find_first_of(";,\n\r#") != std::string::npos)
      throw Error("add_location(\"" + name + "\", \"" + type + "\", \"" + parent +
                  "\"): a name or type is empty or holds one of ; , # or a line break; expected plain names");
  configure("location;name," + name + ";type," + type + "\nhierarchy;children,+," + name + ";parent," + parent);
}

void Runtime::remove_location(const std::string& name) {
  engine_->reconfigure([&](Hierarchy& h) { h.remove(name); });
}

void Runtime::move_location(const std::string& name, const std::string& new_parent) {
  engine_->reconfigure([&](Hierarchy& h) { h.move(name, new_parent); });
}

Stats Runtime::stats() const { return engine_->stats(); }

const NodeInventory& Runtime::node() const { return engine_->inventory(); }

std::string Runtime::describe() const { return engine_->describe(); }

}  // namespace canopy
