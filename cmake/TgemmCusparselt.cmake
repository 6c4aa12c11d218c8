# cuSPARSELt for the 2:4 backend of sparse_gemm. The library is built against its header alone and
# loads libcusparseLt.so.0 at run time (dlopen), so libtgemm.so, the CLI and the tests carry no
# link dependency on it. Searched in this order, the first directory holding
# include/cusparseLt.h and lib/libcusparseLt.so.0 wins:
#   1. TGEMM_CUSPARSELT_DIR (cache variable, or the environment variable of that name);
#   2. .deps/cusparselt (scripts/setup unpacks the pinned nvidia-cusparselt-cu13 wheel there);
#   3. the nvidia.cusparselt package of the build's python, or of the python3 first on PATH (a
#      torch venv ships the same pinned wheel: how the GPU machine's builds find it).
# Without one, the 2:4 backend is left out; sparse_gemm on a 2:4 weight then throws tgemm::Error.
set(TGEMM_CUSPARSELT_DIR "$ENV{TGEMM_CUSPARSELT_DIR}" CACHE PATH
  "cuSPARSELt: <dir>/include/cusparseLt.h and <dir>/lib/libcusparseLt.so.0")

set(_tgemm_cslt_candidates)
if(TGEMM_CUSPARSELT_DIR)
  list(APPEND _tgemm_cslt_candidates "${TGEMM_CUSPARSELT_DIR}")
endif()
list(APPEND _tgemm_cslt_candidates "${PROJECT_SOURCE_DIR}/.deps/cusparselt")
# The interpreter CMake found and the python3 first on PATH (a venv's, where it is not activated
# and FindPython prefers another): either may hold the package.
find_package(Python3 COMPONENTS Interpreter)
find_program(TGEMM_PATH_PYTHON3 python3)
foreach(python IN ITEMS "${Python3_EXECUTABLE}" "${TGEMM_PATH_PYTHON3}")
  if(NOT python)
    continue()
  endif()
  # nvidia/ is a namespace package: its __path__, not __file__, names the directory.
  execute_process(
    COMMAND "${python}" -c "import nvidia.cusparselt as m; print(list(m.__path__)[0])"
    OUTPUT_VARIABLE _tgemm_cslt_python OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
    RESULT_VARIABLE _tgemm_cslt_python_result)
  if(_tgemm_cslt_python_result EQUAL 0 AND _tgemm_cslt_python)
    list(APPEND _tgemm_cslt_candidates "${_tgemm_cslt_python}")
  endif()
endforeach()

set(TGEMM_CUSPARSELT_FOUND_DIR "")
foreach(dir IN LISTS _tgemm_cslt_candidates)
  if(EXISTS "${dir}/include/cusparseLt.h" AND EXISTS "${dir}/lib/libcusparseLt.so.0")
    set(TGEMM_CUSPARSELT_FOUND_DIR "${dir}")
    break()
  endif()
endforeach()
if(TGEMM_CUSPARSELT_FOUND_DIR)
  message(STATUS "tgemm: cuSPARSELt in ${TGEMM_CUSPARSELT_FOUND_DIR}: the 2:4 sparse backend is built")
else()
  message(STATUS "tgemm: no cuSPARSELt found (TGEMM_CUSPARSELT_DIR, .deps/cusparselt, python's "
    "nvidia.cusparselt): the 2:4 sparse backend is left out (scripts/setup fetches it)")
endif()
