#pragma once
// The register sizing pass: slots of the registers between pipeline stages.
#include "plan/plan.hpp"

namespace weir::internal {

/// A register read on another device than its producer's is a pipeline-stage boundary: two slots, so
/// that the producer works on the next call while the consumer works on this one. Registers of
/// control edges, variables, and registers that already have several slots stay as they are.
void SizePipelineRegisters(Plan& plan);

}  // namespace weir::internal
