# cmake -P script of the package.consumer test (tests/package/CMakeLists.txt): install, move,
# build the example against the moved prefix, run it, check what it prints.
# Inputs: BUILD_DIR SOURCE_DIR SCRATCH GENERATOR CXX_COMPILER CUDA_ROOT VERSION.
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${SCRATCH}")
set(staged "${SCRATCH}/staged")
set(prefix "${SCRATCH}/moved")

run_step("cmake --install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${staged}")
file(RENAME "${staged}" "${prefix}")

# Relocatable: no installed CMake file may name the directory it was installed to.
file(GLOB package_files "${prefix}/lib/cmake/tgemm/*.cmake")
if(NOT package_files)
  message(FATAL_ERROR "no CMake package files in ${prefix}/lib/cmake/tgemm")
endif()
foreach(f IN LISTS package_files)
  file(READ "${f}" text)
  string(FIND "${text}" "${staged}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${f} names the install prefix ${staged}: the package is not relocatable")
  endif()
endforeach()

set(cuda_arg "")
if(CUDA_ROOT)
  set(cuda_arg "-DCUDAToolkit_ROOT=${CUDA_ROOT}")
endif()
run_step("configuring examples/cpp_consumer"
  "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/examples/cpp_consumer" -B "${SCRATCH}/build" -G "${GENERATOR}"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_PREFIX_PATH=${prefix}" ${cuda_arg})
run_step("building examples/cpp_consumer" "${CMAKE_COMMAND}" --build "${SCRATCH}/build")
# Without the variables that name other tables, the library must find the moved prefix's own.
run_step("running tgemm_consumer"
  "${CMAKE_COMMAND}" -E env --unset=TGEMM_CONFIG_DIR --unset=TGEMM_CONFIG_GEMM_BF16 --unset=TGEMM_CONFIG_GEMM_FP16
  "${SCRATCH}/build/tgemm_consumer")
message(STATUS "tgemm_consumer printed:\n${step_output}")

if(NOT step_output MATCHES "version: ${VERSION}\n")
  message(FATAL_ERROR "expected 'version: ${VERSION}' (tgemmConfigVersion.cmake)")
endif()
if(NOT step_output MATCHES "error: gemm_a16w16: w\\.size\\(1\\) must equal x\\.size\\(-1\\)")
  message(FATAL_ERROR "expected the K-mismatch tgemm::Error")
endif()
if(NOT step_output MATCHES "config_dir: ([^\n]*)\n")
  message(FATAL_ERROR "expected a config_dir line")
endif()
file(REAL_PATH "${CMAKE_MATCH_1}" found_dir)
file(REAL_PATH "${prefix}/share/tgemm/configs" want_dir)
if(NOT found_dir STREQUAL want_dir)
  message(FATAL_ERROR "the library found its tables in ${found_dir}, not in the moved prefix's ${want_dir}")
endif()
if(NOT step_output MATCHES "table: ([^\n]*bf16_tuned_gemm\\.csv)\n")
  message(FATAL_ERROR "expected a table line naming bf16_tuned_gemm.csv")
endif()
file(REAL_PATH "${CMAKE_MATCH_1}" table)
# The shared table, or on a GPU whose card has its own (configs/<card>/, e.g. h200) that file alone.
file(RELATIVE_PATH table_rel "${want_dir}" "${table}")
if(NOT EXISTS "${table}" OR NOT table_rel MATCHES "^([a-z0-9]+/)?bf16_tuned_gemm\\.csv$")
  message(FATAL_ERROR "table ${table} is not the moved prefix's ${want_dir}/[<card>/]bf16_tuned_gemm.csv")
endif()
