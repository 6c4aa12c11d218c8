# `tgemm shapes --suite`: every (N, K) of the shared shape suite for every default M, in M-major
# order: 7 token counts x 16 suite shapes = 112 rows.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

set(suite "${SOURCE_DIR}/bench/shapes/llm_shapes.csv")
tgemm_run(s shapes --suite "${suite}" -o "${SCRATCH}/suite.csv")
expect_eq("exit status" "${s_RC}" "0")
expect_contains("stdout" "${s_OUT}" "wrote 112 problems")

# The expected file, built from the suite itself.
file(STRINGS "${suite}" suite_lines)
list(POP_FRONT suite_lines suite_header)
expect_eq("suite header" "${suite_header}" "model,layer,N,K")
list(LENGTH suite_lines suite_count)
expect_eq("suite shapes" "${suite_count}" "16")
set(expected "${UNTUNED_HEADER}\n")
foreach(m 1 16 64 128 512 2048 8192)
  foreach(line IN LISTS suite_lines)
    string(REGEX MATCH "^[^,]+,[^,]+,([0-9]+),([0-9]+)$" matched "${line}")
    if(NOT matched)
      message(FATAL_ERROR "unexpected suite line '${line}'")
    endif()
    string(APPEND expected "${m},${CMAKE_MATCH_1},${CMAKE_MATCH_2},False,torch.bfloat16,torch.bfloat16,False,False,none\n")
  endforeach()
endforeach()
expect_file("${SCRATCH}/suite.csv" "${expected}")

file(STRINGS "${SCRATCH}/suite.csv" rows)
list(LENGTH rows row_count)
expect_eq("lines of suite.csv (header + 112 rows)" "${row_count}" "113")
