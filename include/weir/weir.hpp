#pragma once
/// \file Everything a Weir user includes.
#include "weir/dtype.hpp"
#include "weir/job.hpp"
#include "weir/ops.hpp"
#include "weir/session.hpp"
#include "weir/shape.hpp"
#include "weir/tensor.hpp"
