# `tgemm bench --family gmm` and `tgemm tune-gmm` on a machine without a usable GPU: their inputs
# and options are checked first (exit 1, naming the option, file and line), then the early exit
# (status 2, nothing run, nothing written). The GPU is hidden by cli_common.cmake.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

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

tgemm_run(t tune-gmm --suite "${SOURCE_DIR}/bench/shapes/moe_shapes.csv" --max-problems 1 -o "${SCRATCH}/tuned_gmm.csv")
expect_eq("exit status of tgemm tune-gmm without a GPU" "${t_RC}" "2")
expect_contains("tgemm tune-gmm stderr" "${t_ERR}" "no CUDA GPU")
if(EXISTS "${SCRATCH}/tuned_gmm.csv")
  message(FATAL_ERROR "tgemm tune-gmm without a GPU wrote ${SCRATCH}/tuned_gmm.csv")
endif()

file(WRITE "${SCRATCH}/untuned_gmm.csv" "G,M,N,K,rhs,dtype,outdtype,bias\n8,64,256,128,gnk,torch.bfloat16,,False\n"
                                        "8,64,256,128,gnk,torch.float32,,False\n")
tgemm_run(tu tune-gmm -i "${SCRATCH}/untuned_gmm.csv" -o "${SCRATCH}/tuned_gmm.csv")
expect_eq("exit status of tgemm tune-gmm on a float32 row" "${tu_RC}" "1")
expect_contains("tgemm tune-gmm -i stderr" "${tu_ERR}" "untuned_gmm.csv:3: dtype must be torch.bfloat16 or torch.float16")
tgemm_run(tm tune-gmm -i "${SCRATCH}/missing.csv")
expect_eq("exit status of tgemm tune-gmm -i missing.csv" "${tm_RC}" "1")
expect_contains("tgemm tune-gmm -i missing.csv stderr" "${tm_ERR}" "missing.csv' cannot be opened")
tgemm_run(tx tune-gmm -i "${SCRATCH}/untuned_gmm.csv" --suite "${SOURCE_DIR}/bench/shapes/moe_shapes.csv")
expect_eq("exit status of tgemm tune-gmm -i with --suite (CLI11's ExcludesError)" "${tx_RC}" "108")
expect_contains("tgemm tune-gmm -i --suite stderr" "${tx_ERR}" "excludes")
tgemm_run(tf tune-gmm --suite "${SOURCE_DIR}/bench/shapes/moe_shapes.csv" --filter no-such-problem)
expect_eq("exit status of tgemm tune-gmm on no problem" "${tf_RC}" "1")
expect_contains("tgemm tune-gmm --filter stderr" "${tf_ERR}" "no problem to tune")

# An output that is not a gmm table is refused before anything is raced: the merge would drop it.
file(WRITE "${SCRATCH}/not_gmm.csv" "arch,sm_count,M,N,K,dtype,libtype,kernelName\n")
tgemm_run(to tune-gmm --suite "${SOURCE_DIR}/bench/shapes/moe_shapes.csv" --max-problems 1 -o "${SCRATCH}/not_gmm.csv")
expect_eq("exit status of tgemm tune-gmm -o on another table" "${to_RC}" "1")
expect_contains("tgemm tune-gmm -o stderr" "${to_ERR}" "has lines that are not gmm rows")
