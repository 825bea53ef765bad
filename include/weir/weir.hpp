#pragma once
/// \file Everything a Weir user includes.
#include "weir/dtype.hpp"
#include "weir/checkpoint.hpp"
#include "weir/data.hpp"
#include "weir/initializers.hpp"
#include "weir/job.hpp"
#include "weir/layers.hpp"
#include "weir/lr_schedule.hpp"
#include "weir/ops.hpp"
#include "weir/optimizers.hpp"
#include "weir/session.hpp"
#include "weir/shape.hpp"
#include "weir/tensor.hpp"
