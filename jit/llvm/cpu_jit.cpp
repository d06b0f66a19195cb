#include "internal/cpu_jit.hpp"

#include <atomic>

#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/Support/MemoryBuffer.h>

#include <canopy/ir/error.hpp>

#include "internal/cpu_target.hpp"
#include "internal/host_math.hpp"

namespace canopy::jit {

CpuJit::CpuJit() {
  HostTarget::get();  // initializes LLVM's native target
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit) throw Error("Canopy cannot start LLVM's JIT on this machine: " + llvm::toString(jit.takeError()));
  jit_ = std::move(*jit);
}

CpuJit& CpuJit::instance() {
  // Never destroyed: code it linked may run until the very end of the process.
  static CpuJit* const jit = new CpuJit();
  return *jit;
}

llvm::orc::JITDylib& CpuJit::create_library(const std::string& name_hint) {
  static std::atomic<int> next_number{0};
  auto library = jit_->createJITDylib(name_hint + "." + std::to_string(next_number++));
  if (!library) throw Error("Canopy's JIT cannot create a library: " + llvm::toString(library.takeError()));
  auto process =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit_->getDataLayout().getGlobalPrefix());
  if (!process) throw Error("Canopy's JIT cannot see the process's symbols: " + llvm::toString(process.takeError()));
  library->addGenerator(std::move(*process));
  // Canopy's own math functions (host_math.hpp), whoever loads the library.
  const auto callable = llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable;
  llvm::orc::SymbolMap own;
  own[jit_->mangleAndIntern(kHostSinF64)] =
      llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(&host_sin_f64), callable);
  own[jit_->mangleAndIntern(kHostCosF64)] =
      llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(&host_cos_f64), callable);
  if (auto error = library->define(llvm::orc::absoluteSymbols(std::move(own))))
    throw Error("Canopy's JIT cannot define its math functions: " + llvm::toString(std::move(error)));
  return *library;
}

void* CpuJit::link(llvm::orc::JITDylib& library, std::string_view object, const std::string& symbol) {
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()), symbol);
  if (auto error = jit_->addObjectFile(library, std::move(buffer)))
    throw Error("Canopy's JIT cannot load the object file of " + symbol + ": " + llvm::toString(std::move(error)));
  auto address = jit_->lookup(library, symbol);
  if (!address)
    throw Error("Canopy's JIT cannot find " + symbol + " after loading it: " + llvm::toString(address.takeError()));
  return address->toPtr<void*>();
}

void* CpuJit::lookup(llvm::orc::JITDylib& library, const std::string& symbol) {
  auto address = jit_->lookup(library, symbol);
  if (!address) {
    llvm::consumeError(address.takeError());
    return nullptr;
  }
  return address->toPtr<void*>();
}

}  // namespace canopy::jit
