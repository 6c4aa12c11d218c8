# `tgemm bench --family gmm` and `tgemm tune-gmm` on a machine without a usable GPU: their inputs
# and options are checked first (exit 1, naming the option, file and line), then the early exit
# (status 2, nothing run, nothing written). The GPU is hidden by cli_common.cmake.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/routing_race_checks.cmake")

tgemm_run(b bench --family gmm --max-problems 1 --replays 1 --no-check --json -
          --suite "${SOURCE_DIR}/bench/shapes/moe_shapes.csv")
expect_eq("exit status of tgemm bench --family gmm without a GPU" "${b_RC}" "2")
expect_contains("tgemm bench --family gmm stderr" "${b_ERR}" "no CUDA GPU")
expect_eq("tgemm bench --family gmm stdout (nothing may be timed)" "${b_OUT}" "")

tgemm_run(br bench --family gmm --rhs nk --json - --suite "${SOURCE_DIR}/bench/shapes/moe_shapes.csv")
expect_eq("exit status of tgemm bench --family gmm --rhs nk" "${br_RC}" "1")
expect_contains("tgemm bench --family gmm --rhs nk stderr" "${br_ERR}" "--rhs must be gnk ([G, N, K]) or gkn ([G, K, N]), got 'nk'")
tgemm_run(bd bench --family gmm --dtype fp32 --json - --suite "${SOURCE_DIR}/bench/shapes/moe_shapes.csv")
expect_eq("exit status of tgemm bench --family gmm --dtype fp32" "${bd_RC}" "1")
expect_contains("tgemm bench --family gmm --dtype fp32 stderr" "${bd_ERR}" "--dtype must be bf16 or fp16, got 'fp32'")
tgemm_run(bo bench --family gmm --out-dtype fp16 --json - --suite "${SOURCE_DIR}/bench/shapes/moe_shapes.csv")
expect_eq("exit status of tgemm bench --family gmm --out-dtype fp16 (bf16 inputs)" "${bo_RC}" "1")
expect_contains("tgemm bench --family gmm --out-dtype fp16 stderr" "${bo_ERR}" "--out-dtype must be --dtype's or fp32")

expect_tune_exits_without_gpu(gmm tuned_gmm.csv --suite "${SOURCE_DIR}/bench/shapes/moe_shapes.csv" --max-problems 1)

file(WRITE "${SCRATCH}/untuned_gmm.csv" "G,M,N,K,rhs,dtype,outdtype,bias\n8,64,256,128,gnk,torch.bfloat16,,False\n"
                                        "8,64,256,128,gnk,torch.float32,,False\n")
tgemm_run(tu tune-gmm -i "${SCRATCH}/untuned_gmm.csv" -o "${SCRATCH}/tuned_gmm.csv")
expect_eq("exit status of tgemm tune-gmm on a float32 row" "${tu_RC}" "1")
expect_contains("tgemm tune-gmm -i stderr" "${tu_ERR}" "untuned_gmm.csv:3: dtype must be torch.bfloat16 or torch.float16")
expect_tune_input_refusals(gmm "${SCRATCH}/untuned_gmm.csv" "${SOURCE_DIR}/bench/shapes/moe_shapes.csv")

expect_tune_refuses_other_table(gmm "${SOURCE_DIR}/bench/shapes/moe_shapes.csv")
