// The kernel DSL in one include: values, parameters, control flow, kernels.
#pragma once

#include <canopy/ir/error.hpp>

#include "control.hpp"
#include "kernel.hpp"
#include "params.hpp"
#include "value.hpp"
