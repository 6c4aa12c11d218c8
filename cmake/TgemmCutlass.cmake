# CUTLASS 4.2 headers for the CUTLASS backend, in TGEMM_CUTLASS_DIR (default .deps/cutlass, where
# scripts/setup puts them). When the default directory is empty, configure runs
# scripts/fetch-cutlass, so a fresh clone builds (`cmake --preset`, `pip install .`) without a setup
# step first: it unpacks the pinned nvidia-cutlass wheel, from .deps/wheels/ or else from PyPI.
set(TGEMM_CUTLASS_DIR "${PROJECT_SOURCE_DIR}/.deps/cutlass" CACHE PATH
  "CUTLASS 4.2 headers: <dir>/include (cutlass/, cute/) and <dir>/util_include")
option(TGEMM_FETCH_CUTLASS "Unpack the pinned CUTLASS headers into .deps/cutlass when absent" ON)

if(TGEMM_FETCH_CUTLASS AND NOT EXISTS "${TGEMM_CUTLASS_DIR}/include/cutlass/cutlass.h"
   AND TGEMM_CUTLASS_DIR STREQUAL "${PROJECT_SOURCE_DIR}/.deps/cutlass")
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  message(STATUS "tgemm: no CUTLASS headers in .deps/cutlass: running scripts/fetch-cutlass")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env "PYTHON=${Python3_EXECUTABLE}" bash scripts/fetch-cutlass
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
    RESULT_VARIABLE TGEMM_FETCH_CUTLASS_RESULT)
  if(NOT TGEMM_FETCH_CUTLASS_RESULT EQUAL 0)
    message(FATAL_ERROR "scripts/fetch-cutlass failed (${TGEMM_FETCH_CUTLASS_RESULT}): it needs pip and PyPI, "
      "or the nvidia-cutlass wheel in .deps/wheels/; or point -DTGEMM_CUTLASS_DIR at a directory "
      "holding include/cutlass/cutlass.h")
  endif()
endif()
