# `tgemm merge` with M ranges (M_lo, M_hi): the merged table keeps each key's ranges disjoint, as
# the runtime does when it loads tables (src/core/table.h). Without --later-wins the inputs merge
# as one table: rows of the same M keep the lowest `us`, then a row whose range overlaps a
# lower-M row's is warned about (both files and lines) and skipped, whatever the inputs' order.
# With --later-wins a later file's row removes the earlier files' rows its range overlaps, as
# TGEMM_CONFIG_GEMM_BF16=a.csv:b.csv layers them (checked against `tgemm show --rows`).
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

set(key "sm_90a,132")
set(nk "4096,4096,False,torch.bfloat16,torch.bfloat16,False,False")
# <file>_<M>: M, range, us
set(a_16 "${key},16,${nk},skinny,0,0,5,skinny_a16,0,1,1,none,,")
set(a_256 "${key},256,${nk},cublaslt,1,0,20,lt_a256,0,1,1,none,200,400")
set(a_1024 "${key},1024,${nk},cublaslt,2,0,50,lt_a1024,0,1,1,none,900,1500")
set(b_16 "${key},16,${nk},skinny,0,0,6,skinny_b16,0,1,1,none,9,16")
set(b_512 "${key},512,${nk},cublaslt,3,0,30,lt_b512,0,1,1,none,350,700")
set(b_1024 "${key},1024,${nk},cublaslt,4,0,45,lt_b1024,0,1,1,none,,")
set(b_2048 "${key},2048,${nk},cublaslt,5,0,90,lt_b2048,0,1,1,none,1600,3000")
file(WRITE "${SCRATCH}/a.csv" "${TUNED_HEADER}\n${a_16}\n${a_256}\n${a_1024}\n")
file(WRITE "${SCRATCH}/b.csv" "${TUNED_HEADER}\n${b_16}\n${b_512}\n${b_1024}\n${b_2048}\n")

# One table: M=16 a (5 < 6 us), M=256 a, M=512 b overlaps a's [200, 400] and is skipped, M=1024 b
# (45 < 50 us; its range is its own M), M=2048 b.
set(one_table "${TUNED_HEADER}
${a_16}
${a_256}
${b_1024}
${b_2048}
")
tgemm_run(m merge "${SCRATCH}/a.csv" "${SCRATCH}/b.csv" -o "${SCRATCH}/out.csv")
expect_eq("exit status" "${m_RC}" "0")
expect_file("${SCRATCH}/out.csv" "${one_table}")
expect_contains("stdout" "${m_OUT}" "(4 rows)")
expect_contains("stdout" "${m_OUT}" "skipped: 1 row")
expect_contains("stderr" "${m_ERR}"
                "warning: ${SCRATCH}/b.csv:3 (M=512 [350, 700]): arch=sm_90a sm_count=132 N=4096 K=4096")
expect_contains("stderr" "${m_ERR}" "overlaps the range of the row at ${SCRATCH}/a.csv:3 (M=256 [200, 400]), row skipped")

# The inputs' order does not change the result.
tgemm_run(r merge "${SCRATCH}/b.csv" "${SCRATCH}/a.csv" -o "${SCRATCH}/out_reversed.csv")
expect_eq("exit status (reversed)" "${r_RC}" "0")
expect_file("${SCRATCH}/out_reversed.csv" "${one_table}")

# The merged table is disjoint: merging it alone changes nothing and warns about nothing; the
# runtime loads every row of it.
tgemm_run(i merge "${SCRATCH}/out.csv" -o "${SCRATCH}/again.csv")
expect_eq("exit status (merged table alone)" "${i_RC}" "0")
expect_file("${SCRATCH}/again.csv" "${one_table}")
expect_not_contains("stderr (merged table alone)" "${i_ERR}" "warning")
set(ENV{TGEMM_CONFIG_GEMM_BF16} "${SCRATCH}/out.csv")
tgemm_run(so show --rows)
expect_contains("show --rows (merged table)" "${so_OUT}" "\n4 rows\n")
expect_not_contains("show --rows (merged table)" "${so_OUT}" "warning")

# --later-wins: b's rows remove a's at M=16 (b's [9, 16] holds 16, though a's row is faster), at
# M=256 ([200, 400] against [350, 700]) and M=1024.
set(b_over_a "${TUNED_HEADER}
${b_16}
${b_512}
${b_1024}
${b_2048}
")
tgemm_run(l merge --later-wins "${SCRATCH}/a.csv" "${SCRATCH}/b.csv" -o "${SCRATCH}/later.csv")
expect_eq("exit status (--later-wins)" "${l_RC}" "0")
expect_file("${SCRATCH}/later.csv" "${b_over_a}")
expect_contains("stdout (--later-wins)" "${l_OUT}" "replaced: 3 rows")
expect_not_contains("stderr (--later-wins)" "${l_ERR}" "warning")
# The runtime layering the same files keeps the same rows.
set(ENV{TGEMM_CONFIG_GEMM_BF16} "${SCRATCH}/a.csv:${SCRATCH}/b.csv")
tgemm_run(sl show --rows)
expect_contains("show --rows (a:b)" "${sl_OUT}" "\n4 rows\n")
foreach(row b_16 b_512 b_1024 b_2048)
  expect_contains("show --rows (a:b)" "${sl_OUT}" "\n${${row}}   # ${SCRATCH}/b.csv:")
endforeach()

# Swapped: a's rows remove b's at M=16, 512 (a's [200, 400] overlaps it) and 1024; b's M=2048
# ([1600, 3000]) overlaps none of a's and stays.
set(a_over_b "${TUNED_HEADER}
${a_16}
${a_256}
${a_1024}
${b_2048}
")
tgemm_run(lr merge --later-wins "${SCRATCH}/b.csv" "${SCRATCH}/a.csv" -o "${SCRATCH}/later_r.csv")
expect_eq("exit status (--later-wins, swapped)" "${lr_RC}" "0")
expect_file("${SCRATCH}/later_r.csv" "${a_over_b}")
set(ENV{TGEMM_CONFIG_GEMM_BF16} "${SCRATCH}/b.csv:${SCRATCH}/a.csv")
tgemm_run(slr show --rows)
expect_contains("show --rows (b:a)" "${slr_OUT}" "\n4 rows\n")
foreach(row a_16 a_256 a_1024)
  expect_contains("show --rows (b:a)" "${slr_OUT}" "\n${${row}}   # ${SCRATCH}/a.csv:")
endforeach()
expect_contains("show --rows (b:a)" "${slr_OUT}" "\n${b_2048}   # ${SCRATCH}/b.csv:")
unset(ENV{TGEMM_CONFIG_GEMM_BF16})

# Overlapping ranges inside one later file: the higher-M row is skipped with a warning before the
# file is layered, so it removes nothing of the earlier file (layered, its [150, 320] would have
# removed a's M=256 row).
set(c_100 "${key},100,${nk},cublaslt,6,0,10,lt_c100,0,1,1,none,64,180")
set(c_300 "${key},300,${nk},cublaslt,7,0,12,lt_c300,0,1,1,none,150,320")
file(WRITE "${SCRATCH}/c.csv" "${TUNED_HEADER}\n${c_300}\n${c_100}\n")
tgemm_run(c merge --later-wins "${SCRATCH}/a.csv" "${SCRATCH}/c.csv" -o "${SCRATCH}/with_c.csv")
expect_eq("exit status (overlap within a file)" "${c_RC}" "0")
expect_contains("stderr (overlap within a file)" "${c_ERR}"
                "${SCRATCH}/c.csv:2 (M=300 [150, 320]): arch=sm_90a sm_count=132 N=4096 K=4096")
expect_contains("stderr (overlap within a file)" "${c_ERR}" "the row at ${SCRATCH}/c.csv:3 (M=100 [64, 180])")
expect_file("${SCRATCH}/with_c.csv" "${TUNED_HEADER}
${a_16}
${c_100}
${a_256}
${a_1024}
")
