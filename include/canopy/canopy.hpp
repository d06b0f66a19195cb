// Canopy in one include: the kernel DSL and the runtime.
//
//   #include <canopy/canopy.hpp>
//   using namespace canopy;
//
//   Runtime rt;
//   auto a = rt.array<double>(n), b = rt.array<double>(n);
//   Kernel scale("scale", [](Out<double> a, In<double> b, Val<double> s) {
//     Idx i = index(0);
//     a[i] = s * b[i];
//   });
//   rt.region(scale).over(n).launch(a, b, 2.0);
//   rt.pause();
#pragma once

#include <canopy/dsl/dsl.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/runtime/runtime.hpp>
