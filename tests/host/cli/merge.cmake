# `tgemm merge a.csv b.csv -o out.csv`: rows with the same key and M keep the lowest `us` (across
# and within files; with --later-wins, the later file's row across files); the result is rewritten sorted by arch, sm_count, dtype, outdtype, bias, N,
# K, M. Rows are written in the table's canonical number format, so the output lines equal the
# winning input lines.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

set(bf16 "torch.bfloat16,torch.bfloat16,False,False")
set(a_16_4096 "sm_90a,132,16,4096,4096,False,${bf16},cublaslt,3,0,10.5,lt_a1,0,1.25,0.5,none,,")
set(a_1_4096 "sm_90a,132,1,4096,4096,False,${bf16},cublaslt,4,0,5,lt_a2,0,0.125,2.5,none,,")
set(a_1_1024 "sm_90a,132,1,1024,4096,False,${bf16},skinny,0,0,7,skinny_a3,0.001,0.5,1.5,none,,")
set(a_fp16 "sm_90a,132,1,64,64,False,torch.float16,torch.float16,False,False,cublaslt,1,0,2,lt_a4,0,0.01,0.02,none,,")
set(b_16_4096 "sm_90a,132,16,4096,4096,False,${bf16},skinny,0,0,8.25,skinny_b1,0,1.5,0.75,none,,")
set(b_1_4096 "sm_90a,132,1,4096,4096,False,${bf16},cublaslt,9,0,6,lt_b2,0,0.1,2,none,,")
set(b_sm114 "sm_90a,114,1,4096,4096,False,${bf16},cublaslt,2,0,9,lt_b3,0,0.1,2,none,,")
set(b_bias "sm_90a,132,1,4096,4096,True,${bf16},cublaslt,5,0,4,lt_b4,0,0.2,3,none,,")
set(b_64_slow "sm_90a,132,64,4096,4096,False,${bf16},cublaslt,6,0,20,lt_b5,0,3,4,none,,")
set(b_64_fast "sm_90a,132,64,4096,4096,False,${bf16},cublaslt,7,0,15,lt_b6,0,4,5,none,,")

file(WRITE "${SCRATCH}/a.csv" "${TUNED_HEADER}\n${a_16_4096}\n${a_1_4096}\n${a_1_1024}\n${a_fp16}\n")
file(WRITE "${SCRATCH}/b.csv"
     "${TUNED_HEADER}\n${b_16_4096}\n${b_1_4096}\n${b_sm114}\n${b_bias}\n${b_64_slow}\n${b_64_fast}\n")

tgemm_run(m merge "${SCRATCH}/a.csv" "${SCRATCH}/b.csv" -o "${SCRATCH}/out.csv")
expect_eq("exit status" "${m_RC}" "0")
expect_contains("stdout" "${m_OUT}" "(7 rows)")
# Winners: b_16_4096 (8.25 < 10.5), a_1_4096 (5 < 6), b_64_fast (15 < 20, same file).
expect_file("${SCRATCH}/out.csv" "${TUNED_HEADER}
${b_sm114}
${a_1_1024}
${a_1_4096}
${b_16_4096}
${b_64_fast}
${b_bias}
${a_fp16}
")
expect_not_contains("merged table" "${m_ERR}" "warning")

# The order of the inputs does not change the winners.
tgemm_run(r merge "${SCRATCH}/b.csv" "${SCRATCH}/a.csv" -o "${SCRATCH}/out_reversed.csv")
expect_eq("exit status (reversed)" "${r_RC}" "0")
file(READ "${SCRATCH}/out.csv" forward)
expect_file("${SCRATCH}/out_reversed.csv" "${forward}")

# --later-wins: a later file's row replaces an earlier file's whatever its `us` (as the runtime
# layers a.csv:b.csv); within one file the lowest `us` still wins (b_64_fast).
tgemm_run(l merge --later-wins "${SCRATCH}/a.csv" "${SCRATCH}/b.csv" -o "${SCRATCH}/out_later.csv")
expect_eq("exit status (--later-wins)" "${l_RC}" "0")
expect_file("${SCRATCH}/out_later.csv" "${TUNED_HEADER}
${b_sm114}
${a_1_1024}
${b_1_4096}
${b_16_4096}
${b_64_fast}
${b_bias}
${a_fp16}
")
# With the inputs swapped, a's rows win where both have one.
tgemm_run(lr merge --later-wins "${SCRATCH}/b.csv" "${SCRATCH}/a.csv" -o "${SCRATCH}/out_later_r.csv")
expect_eq("exit status (--later-wins, swapped)" "${lr_RC}" "0")
expect_file("${SCRATCH}/out_later_r.csv" "${TUNED_HEADER}
${b_sm114}
${a_1_1024}
${a_1_4096}
${a_16_4096}
${b_64_fast}
${b_bias}
${a_fp16}
")

# A missing input: exit 1 naming it, nothing written.
tgemm_run(e merge "${SCRATCH}/a.csv" "${SCRATCH}/missing.csv" -o "${SCRATCH}/bad.csv")
expect_eq("exit status (missing input)" "${e_RC}" "1")
expect_contains("stderr (missing input)" "${e_ERR}" "missing.csv")
if(EXISTS "${SCRATCH}/bad.csv")
  message(FATAL_ERROR "tgemm merge wrote ${SCRATCH}/bad.csv although an input was missing")
endif()
