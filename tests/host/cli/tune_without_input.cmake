# `tgemm tune` without -i/--input_file: a non-zero exit and a message naming the missing option.
# The GPU is hidden (cli_common.cmake), as on a CI machine or a login node.
#
# BUG (tools/cli/tune.cpp:295): run_tune calls require_gpu("tune") before checking its arguments,
# so without a GPU a missing -i is reported as "no CUDA GPU is usable" (exit 2); the user fixes
# that, and only then learns the command line was wrong. Arguments should be checked first (the
# --worker path aside), as `tgemm shapes`/`merge` do.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

tgemm_run(t tune -o "${SCRATCH}/tuned.csv")
if(t_RC EQUAL 0)
  message(FATAL_ERROR "tgemm tune without -i exited 0")
endif()
expect_contains("tgemm tune without -i: stderr" "${t_ERR}" "--input_file")
if(EXISTS "${SCRATCH}/tuned.csv")
  message(FATAL_ERROR "tgemm tune without -i wrote ${SCRATCH}/tuned.csv")
endif()

tgemm_run(bare tune)
if(bare_RC EQUAL 0)
  message(FATAL_ERROR "tgemm tune without arguments exited 0")
endif()
expect_contains("tgemm tune without arguments: stderr" "${bare_ERR}" "--input_file")
