# `tgemm show --rows`: the rows of the tables named by TGEMM_CONFIG_GEMM_BF16 (and not the shipped
# table), each with its file and line; -n/-k filter them. No GPU is needed to list tables.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

set(bf16 "torch.bfloat16,torch.bfloat16,False,False")
set(r1 "sm_90a,132,1,1280,8192,False,${bf16},cublaslt,3,0,4.5,lt_r1,0,4.66,2.33,none,,")
set(r2 "sm_90a,132,16,1280,8192,False,${bf16},skinny,0,0,5.25,skinny_r2,0,64,2,none,,")
set(r3 "sm_90a,132,16,8192,1024,False,${bf16},cublaslt,8,0,3,lt_r3,0,89.5,6.5,none,,")
set(r4 "sm_90a,114,1,7168,8192,True,${bf16},cublaslt,1,0,9,lt_r4,0,13,6.5,none,,")
file(WRITE "${SCRATCH}/one.csv" "${TUNED_HEADER}\n${r1}\n${r2}\n${r3}\n")
file(WRITE "${SCRATCH}/two.csv" "# a comment line\n${TUNED_HEADER}\n${r4}\n")

set(ENV{TGEMM_CONFIG_GEMM_BF16} "${SCRATCH}/one.csv:${SCRATCH}/two.csv")
tgemm_run(s show --rows)
expect_eq("exit status" "${s_RC}" "0")
expect_contains("stdout" "${s_OUT}" "  ${SCRATCH}/one.csv\n")
expect_contains("stdout" "${s_OUT}" "  ${SCRATCH}/two.csv\n")
expect_contains("stdout" "${s_OUT}" "\n4 rows\n")
expect_contains("stdout" "${s_OUT}" "\n${TUNED_HEADER}\n")
expect_contains("stdout" "${s_OUT}" "\n${r1}   # ${SCRATCH}/one.csv:2\n")
expect_contains("stdout" "${s_OUT}" "\n${r2}   # ${SCRATCH}/one.csv:3\n")
expect_contains("stdout" "${s_OUT}" "\n${r3}   # ${SCRATCH}/one.csv:4\n")
expect_contains("stdout" "${s_OUT}" "\n${r4}   # ${SCRATCH}/two.csv:3\n")
expect_not_contains("stdout" "${s_OUT}" "bf16_tuned_gemm.csv")
expect_not_contains("stdout" "${s_OUT}" "warning")

# -n keeps the rows of that N only (the row count still counts the whole table).
tgemm_run(n show --rows -n 1280)
expect_eq("exit status (-n)" "${n_RC}" "0")
expect_contains("stdout (-n)" "${n_OUT}" "${r1}   #")
expect_contains("stdout (-n)" "${n_OUT}" "${r2}   #")
expect_not_contains("stdout (-n)" "${n_OUT}" "lt_r3")
expect_not_contains("stdout (-n)" "${n_OUT}" "lt_r4")

# -k likewise.
tgemm_run(k show --rows -k 1024)
expect_eq("exit status (-k)" "${k_RC}" "0")
expect_contains("stdout (-k)" "${k_OUT}" "${r3}   #")
expect_not_contains("stdout (-k)" "${k_OUT}" "lt_r1")

# Without --rows only the summary is printed.
tgemm_run(q show)
expect_eq("exit status (no --rows)" "${q_RC}" "0")
expect_contains("stdout (no --rows)" "${q_OUT}" "4 rows")
expect_not_contains("stdout (no --rows)" "${q_OUT}" "lt_r1")

# A table that cannot be opened is reported, not fatal.
set(ENV{TGEMM_CONFIG_GEMM_BF16} "${SCRATCH}/absent.csv")
tgemm_run(a show --rows)
expect_eq("exit status (absent table)" "${a_RC}" "0")
expect_contains("stdout (absent table)" "${a_OUT}" "absent.csv: cannot be opened")
expect_contains("stdout (absent table)" "${a_OUT}" "0 rows")

# The shipped directory (TGEMM_CONFIG_DIR, no TGEMM_CONFIG_GEMM_BF16): the per-card tables
# present are listed (configs/<card>/bf16_tuned_gemm.csv, each in place of the shared table on
# its card); an env list of tables has none.
unset(ENV{TGEMM_CONFIG_GEMM_BF16})
file(MAKE_DIRECTORY "${SCRATCH}/cfg/h200" "${SCRATCH}/cfg/empty")
file(WRITE "${SCRATCH}/cfg/bf16_tuned_gemm.csv" "${TUNED_HEADER}\n${r1}\n")
file(WRITE "${SCRATCH}/cfg/h200/bf16_tuned_gemm.csv" "${TUNED_HEADER}\n${r2}\n")
set(ENV{TGEMM_CONFIG_DIR} "${SCRATCH}/cfg")
tgemm_run(o show)
expect_eq("exit status (card tables)" "${o_RC}" "0")
expect_contains("stdout (card tables)" "${o_OUT}" "  ${SCRATCH}/cfg/bf16_tuned_gemm.csv\n")
expect_contains("stdout (card tables)" "${o_OUT}"
                "per-card tables (on a device of that card, in place of the above): ${SCRATCH}/cfg/h200/bf16_tuned_gemm.csv\n")
set(ENV{TGEMM_CONFIG_GEMM_BF16} "${SCRATCH}/one.csv")
tgemm_run(e show)
expect_not_contains("stdout (env list)" "${e_OUT}" "per-card tables")
unset(ENV{TGEMM_CONFIG_DIR})
