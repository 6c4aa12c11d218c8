# `tgemm tune` without -i/--input_file: a non-zero exit and a message naming the missing option.
# The GPU is hidden (cli_common.cmake), as on a CI machine or a login node: the arguments are
# checked before the GPU is asked for (the --worker path aside), as `tgemm shapes`/`merge` do.
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

# Placement, finalist, round and try counts of 0 are refused by the command line itself, naming the option.
foreach(opt confirm_placements final_placements finalists final_rounds confirm_tries min_accurate iters)
  tgemm_run(${opt} tune -i "${SCRATCH}/missing.csv" -o "${SCRATCH}/tuned.csv" --${opt} 0)
  if(${opt}_RC EQUAL 0)
    message(FATAL_ERROR "tgemm tune --${opt} 0 exited 0")
  endif()
  expect_contains("tgemm tune --${opt} 0: stderr" "${${opt}_ERR}" "--${opt}")
endforeach()

# An error ratio outside [0, 1] and a negative warm-up are refused the same way.
tgemm_run(er tune -i "${SCRATCH}/missing.csv" -o "${SCRATCH}/tuned.csv" --errRatio 1.5)
if(er_RC EQUAL 0)
  message(FATAL_ERROR "tgemm tune --errRatio 1.5 exited 0")
endif()
expect_contains("tgemm tune --errRatio 1.5: stderr" "${er_ERR}" "--errRatio")
tgemm_run(wu tune -i "${SCRATCH}/missing.csv" -o "${SCRATCH}/tuned.csv" --warmup -1)
if(wu_RC EQUAL 0)
  message(FATAL_ERROR "tgemm tune --warmup -1 exited 0")
endif()
expect_contains("tgemm tune --warmup -1: stderr" "${wu_ERR}" "--warmup")

# A negative count of final contenders is refused the same way (0 is allowed: none beyond the margin).
tgemm_run(fc tune -i "${SCRATCH}/missing.csv" -o "${SCRATCH}/tuned.csv" --final_contenders -1)
if(fc_RC EQUAL 0)
  message(FATAL_ERROR "tgemm tune --final_contenders -1 exited 0")
endif()
expect_contains("tgemm tune --final_contenders -1: stderr" "${fc_ERR}" "--final_contenders")

# The defaults the shipped tables are tuned with (docs/design-choices.md, "Tuner defaults"), shown by --help.
tgemm_run(help tune --help)
foreach(line "--final_placements INT:INT in [1 - 16]=4" "--min_accurate INT:INT in [1 - 100000]=48"
             "--graph_screen FLOAT:FLOAT in [0 - 1e+06]=50" "--final_contenders INT:INT in [0 - 64]=2"
             "--confirm_best,--no-confirm_best")
  expect_contains("tgemm tune --help" "${help_OUT}" "${line}")
endforeach()
# --no-confirm_best is accepted: the run gets as far as the missing input file.
tgemm_run(ncb tune -i "${SCRATCH}/missing.csv" -o "${SCRATCH}/tuned.csv" --no-confirm_best)
if(ncb_RC EQUAL 0)
  message(FATAL_ERROR "tgemm tune of a missing input exited 0")
endif()
expect_contains("tgemm tune --no-confirm_best: stderr" "${ncb_ERR}" "missing.csv")

# A negative graph-screen threshold is refused the same way.
tgemm_run(gs tune -i "${SCRATCH}/missing.csv" -o "${SCRATCH}/tuned.csv" --graph_screen -1)
if(gs_RC EQUAL 0)
  message(FATAL_ERROR "tgemm tune --graph_screen -1 exited 0")
endif()
expect_contains("tgemm tune --graph_screen -1: stderr" "${gs_ERR}" "--graph_screen")
