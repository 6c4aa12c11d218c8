# The M grid on the command line: `tgemm shapes --m-grid` writes every (N, K) over the grid in
# M-major order (a layer's grid ends at the M it sees: experts at their share of the tokens);
# the grid it prints is bench/torch_bench.py's m_grid() (one definition, two languages; checked
# where -DPYTHON names an interpreter); `tgemm bench --m-grid` parses and stops at the GPU check
# like any bench; the options that exclude or need each other are refused.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

# grid_of(<out> <stdout>): the comma list `tgemm shapes --m-grid` printed.
function(grid_of out text)
  string(REGEX MATCH "M grid \\([0-9]+ tokens at most\\): ([0-9,]+)" matched "${text}")
  if(NOT matched)
    message(FATAL_ERROR "no 'M grid (...): ...' line in:\n${text}")
  endif()
  set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

# python_grid(<out> <max>): bench/torch_bench.py's m_grid(max), comma-separated.
function(python_grid out max_m)
  execute_process(COMMAND "${PYTHON}" -c "import sys; sys.path.insert(0, sys.argv[1]); import torch_bench; \
print(','.join(map(str, torch_bench.m_grid(int(sys.argv[2])))), end='')" "${SOURCE_DIR}/bench" "${max_m}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE grid ERROR_VARIABLE err)
  expect_eq("torch_bench.m_grid(${max_m}) exit status (${err})" "${rc}" "0")
  set(${out} "${grid}" PARENT_SCOPE)
endfunction()

set(suite "${SOURCE_DIR}/bench/shapes/llm_shapes.csv")
set(bf16 "False,torch.bfloat16,torch.bfloat16,False,False,none")

# The suite over the default grid: 1 ... 16384, every suite (N, K) at every grid M.
tgemm_run(s shapes --suite "${suite}" --m-grid -o "${SCRATCH}/suite_grid.csv")
expect_eq("exit status" "${s_RC}" "0")
grid_of(grid "${s_OUT}")
string(REPLACE "," ";" grid_list "${grid}")
list(LENGTH grid_list grid_count)
list(GET grid_list 0 first)
list(GET grid_list -1 last)
expect_eq("first grid M" "${first}" "1")
expect_eq("last grid M" "${last}" "16384")
if(grid_count LESS 48)
  message(FATAL_ERROR "the grid has ${grid_count} values, fewer than 48: ${grid}")
endif()
file(STRINGS "${suite}" suite_lines)
list(POP_FRONT suite_lines)
list(LENGTH suite_lines suite_count)
set(expected "${UNTUNED_HEADER}\n")
foreach(m IN LISTS grid_list)
  foreach(line IN LISTS suite_lines)
    string(REGEX MATCH "^[^,]+,[^,]+,([0-9]+),([0-9]+)$" matched "${line}")
    string(APPEND expected "${m},${CMAKE_MATCH_1},${CMAKE_MATCH_2},${bf16}\n")
  endforeach()
endforeach()
expect_file("${SCRATCH}/suite_grid.csv" "${expected}")
math(EXPR problems "${grid_count} * ${suite_count}")
expect_contains("stdout" "${s_OUT}" "wrote ${problems} problems")

# Another largest M ends the grid there.
tgemm_run(g shapes --suite "${suite}" --m-grid --m-grid-max 5000 -o "${SCRATCH}/suite_5000.csv")
expect_eq("exit status (--m-grid-max 5000)" "${g_RC}" "0")
grid_of(grid_5000 "${g_OUT}")
string(REGEX MATCH ",5000$" ends "${grid_5000}")
expect_eq("the grid to 5000 ends at 5000 (${grid_5000})" "${ends}" ",5000")

# The C++ grid and bench/torch_bench.py's are the same values.
if(DEFINED PYTHON AND NOT PYTHON STREQUAL "")
  python_grid(py_grid 16384)
  expect_eq("tgemm's grid against torch_bench.m_grid()" "${grid}" "${py_grid}")
  python_grid(py_grid_5000 5000)
  expect_eq("tgemm's grid to 5000 against torch_bench.m_grid(5000)" "${grid_5000}" "${py_grid_5000}")
endif()

# A model: Mixtral's attention GEMMs see every token, its experts a quarter (top 2 of 8), so at
# --m-grid-max 64 the experts' grid ends at M = 16 (1 ... 16) and the others' at 64.
tgemm_run(x shapes --model_dir "${SOURCE_DIR}/tests/data/configs/mixtral-8x7b.json" --m-grid --m-grid-max 64
          -o "${SCRATCH}/mixtral_grid.csv")
expect_eq("exit status (mixtral)" "${x_RC}" "0")
grid_of(grid_64 "${x_OUT}")
string(REPLACE "," ";" grid_64_list "${grid_64}")
set(expected "${UNTUNED_HEADER}\n")
foreach(m IN LISTS grid_64_list)
  string(APPEND expected "${m},6144,4096,${bf16}\n${m},4096,4096,${bf16}\n")
  if(m LESS_EQUAL 16)
    string(APPEND expected "${m},28672,4096,${bf16}\n${m},4096,14336,${bf16}\n")
  endif()
endforeach()
expect_file("${SCRATCH}/mixtral_grid.csv" "${expected}")

# --batch_size multiplies the largest token count: 8 tokens x 2 = M up to 16.
tgemm_run(bs shapes --model_dir "${SOURCE_DIR}/tests/data/configs/llama3-8b.json" --m-grid --m-grid-max 8
          --batch_size 2 -o "${SCRATCH}/batch.csv")
expect_eq("exit status (--batch_size)" "${bs_RC}" "0")
file(STRINGS "${SCRATCH}/batch.csv" batch_rows)
list(GET batch_rows -1 last_row)
expect_eq("last row (--batch_size 2)" "${last_row}" "16,4096,14336,${bf16}")
expect_contains("stdout (--batch_size)" "${bs_OUT}" "wrote 64 problems")

# Refused: --m-grid with --nsets, --m-grid-max without --m-grid or below 1; nothing written.
foreach(case "nsets;--m-grid;--nsets;1,16" "needs;--m-grid-max;64" "zero;--m-grid;--m-grid-max;0")
  list(POP_FRONT case name)
  tgemm_run(r shapes --suite "${suite}" ${case} -o "${SCRATCH}/refused_${name}.csv")
  if(r_RC EQUAL 0)
    message(FATAL_ERROR "tgemm shapes ${case}: exit status 0, expected a usage error")
  endif()
  expect_contains("stderr (shapes ${case})" "${r_ERR}" "--m-grid")
  if(EXISTS "${SCRATCH}/refused_${name}.csv")
    message(FATAL_ERROR "tgemm shapes ${case} wrote a file although it was refused")
  endif()
endforeach()

# `tgemm bench --m-grid` takes the no-GPU exit (status 2) after parsing; the same refusals.
tgemm_run(b bench --suite "${suite}" --m-grid --m-grid-max 300 --max-problems 1 --replays 1 --no-check --json -)
expect_eq("exit status of tgemm bench --m-grid without a GPU" "${b_RC}" "2")
expect_contains("tgemm bench --m-grid stderr" "${b_ERR}" "no CUDA GPU")
foreach(case "-m;1;--m-grid" "--m-grid-max;64" "--m-grid;--m-grid-max;0" "--remeasure-below;-1")
  tgemm_run(br bench ${case} --json -)
  if(br_RC EQUAL 0 OR br_RC EQUAL 2)
    message(FATAL_ERROR "tgemm bench ${case}: exit status ${br_RC}, expected a usage error")
  endif()
endforeach()
