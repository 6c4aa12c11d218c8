# Helpers of the `tgemm` command tests (tests/host/cli/*.cmake, run as `cmake -P`; registered in
# tests/host/CMakeLists.txt). Each script gets:
#   TGEMM       the built tgemm executable
#   SOURCE_DIR  the project source directory (configs, shape suite)
#   SCRATCH     a directory of its own, emptied here; left behind for inspection after a failure
#
# Every GPU is hidden from the command (CUDA_VISIBLE_DEVICES=-1: the CUDA runtime shows only the
# devices listed before the first invalid ordinal, so none), so these tests see the same
# no-GPU machine in CI and on a GPU box: a GPU machine neither skips them nor starts timing
# kernels. The environment variables that redirect tables or capture shapes are cleared so a
# developer's shell cannot change the outcome.
cmake_minimum_required(VERSION 3.25)

foreach(var TGEMM SOURCE_DIR SCRATCH)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "${CMAKE_CURRENT_LIST_FILE}: -D${var}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE "${SCRATCH}")
file(MAKE_DIRECTORY "${SCRATCH}")

set(ENV{CUDA_VISIBLE_DEVICES} "-1")
foreach(var TGEMM_CONFIG_DIR TGEMM_CONFIG_GEMM_BF16 TGEMM_UNTUNED_GEMM_BF16 TGEMM_TUNE_GEMM
            TGEMM_LOG_TUNED_CONFIG TGEMM_COMMIT)
  unset(ENV{${var}})
endforeach()

# tgemm_run(<prefix> args...): runs `tgemm args...` in SCRATCH; sets <prefix>_RC, <prefix>_OUT
# (stdout) and <prefix>_ERR (stderr) in the caller, and prints all three for the test log.
function(tgemm_run prefix)
  execute_process(COMMAND "${TGEMM}" ${ARGN}
                  WORKING_DIRECTORY "${SCRATCH}"
                  RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out
                  ERROR_VARIABLE err
                  TIMEOUT 50)
  string(REPLACE ";" " " shown "${ARGN}")
  message("$ tgemm ${shown}\n-- exit status: ${rc}\n-- stdout:\n${out}-- stderr:\n${err}")
  set(${prefix}_RC "${rc}" PARENT_SCOPE)
  set(${prefix}_OUT "${out}" PARENT_SCOPE)
  set(${prefix}_ERR "${err}" PARENT_SCOPE)
endfunction()

# expect_eq(<what> <actual> <expected>)
function(expect_eq what actual expected)
  if(NOT "${actual}" STREQUAL "${expected}")
    message(FATAL_ERROR "${what}:\n-- expected:\n${expected}\n-- actual:\n${actual}")
  endif()
endfunction()

# expect_contains(<what> <text> <part>)
function(expect_contains what text part)
  string(FIND "${text}" "${part}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: '${part}' not found in:\n${text}")
  endif()
endfunction()

# expect_not_contains(<what> <text> <part>)
function(expect_not_contains what text part)
  string(FIND "${text}" "${part}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${what}: '${part}' must not appear in:\n${text}")
  endif()
endfunction()

# expect_file(<path> <expected contents>)
function(expect_file path expected)
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "${path} was not written")
  endif()
  file(READ "${path}" actual)
  expect_eq("contents of ${path}" "${actual}" "${expected}")
endfunction()

# The untuned CSV header `tgemm shapes` writes (AITER's column order).
set(UNTUNED_HEADER "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue")
# The tuned CSV header `tgemm merge` and `tgemm show --rows` write.
set(TUNED_HEADER "arch,sm_count,M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,libtype,solidx,splitK,us,kernelName,err_ratio,tflops,bw,epilogue,M_lo,M_hi")
