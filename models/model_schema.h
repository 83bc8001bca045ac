// The scenario schema's `model` section (docs/design.md section 4), defined here because models/
// knows the architectures: the family and activation names come from model_spec.h's name tables
// and every upper bound from its kMax constants, the same ones check_spec() applies, so the
// schema and the model checks cannot disagree. models/register_model_schema.cc hands it to the
// scenario stage (core/scenario/scenario.h, register_model_schema).
#pragma once

#include "core/scenario/schema.h"

namespace dtsim::models {

// The map `model`: preset, family and the fields that override or complete them.
SchemaNode model_schema();

}  // namespace dtsim::models
