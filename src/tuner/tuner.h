// The tuner module (src/tuner/): everything `tgemm tune`, `tgemm reconfirm` and `tgemm compare
// --measure` call. Host-only parts: options.h (per-stage options, defaults), select.h (selection,
// tie bands), alternatives.h (the profile's next-best candidates). Needing CUDA: data.h (operands,
// rotation, placements, checks), timing.h (accurate and paired timing), race.h (the four stages,
// tuner/stages.h), reconfirm.h.
#pragma once

#include "tuner/alternatives.h"
#include "tuner/data.h"
#include "tuner/options.h"
#include "tuner/race.h"
#include "tuner/reconfirm.h"
#include "tuner/select.h"
#include "tuner/timing.h"
