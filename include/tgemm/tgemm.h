// Umbrella header of the tgemm C++ API.
#pragma once

#include "tgemm/a8w8.h"
#include "tgemm/batched.h"
#include "tgemm/config.h"
#include "tgemm/error.h"
#include "tgemm/gemm.h"
#include "tgemm/gmm.h"
#include "tgemm/grouped.h"
#include "tgemm/grouped_fp8.h"
#include "tgemm/moe.h"
#include "tgemm/quant.h"
#include "tgemm/sparse.h"
#include "tgemm/tensor.h"
