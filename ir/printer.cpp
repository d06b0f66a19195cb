#include "printer.hpp"

#include "error.hpp"

namespace canopy::ir {
// Placeholder until the printer lands.
std::string print(const Kernel& kernel) { return "kernel " + kernel.name; }
std::string print(const Expr&, const Kernel&) { return "<expr>"; }
std::string print(const Stmt&, const Kernel&, int) { return "<stmt>"; }
std::ostream& operator<<(std::ostream& out, const Kernel& kernel) { return out << print(kernel); }
}  // namespace canopy::ir
