# `tgemm bench --family sparse` and `tgemm tune-sparse` on a machine without a usable GPU: their
# pattern, dtype, density and block-size options are checked first (exit 1, naming the option),
# then the early exit (status 2, nothing run). The GPU is hidden by cli_common.cmake.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

tgemm_run(b bench --family sparse --suite "${SOURCE_DIR}/bench/shapes/llm_shapes.csv" -m 1 --max-problems 1
          --replays 1 --no-check --json -)
expect_eq("exit status of tgemm bench --family sparse without a GPU" "${b_RC}" "2")
expect_contains("tgemm bench --family sparse stderr" "${b_ERR}" "no CUDA GPU")
expect_eq("tgemm bench --family sparse stdout (nothing may be timed)" "${b_OUT}" "")

tgemm_run(bp bench --family sparse --pattern diagonal --json -)
expect_eq("exit status of tgemm bench --family sparse --pattern diagonal" "${bp_RC}" "1")
expect_contains("tgemm bench --pattern diagonal stderr" "${bp_ERR}" "--pattern must be 2:4, csr or block, got 'diagonal'")
tgemm_run(bd bench --family sparse --pattern csr --dtype fp8 --json -)
expect_eq("exit status of tgemm bench --family sparse --pattern csr --dtype fp8" "${bd_RC}" "1")
expect_contains("tgemm bench --pattern csr --dtype fp8 stderr" "${bd_ERR}"
                "--dtype must be bf16 or fp16 (or fp8 with --pattern 2:4), got 'fp8'")
tgemm_run(bx bench --family sparse --pattern block --density 0.2,1.5 --json -)
expect_eq("exit status of tgemm bench --family sparse --density 0.2,1.5" "${bx_RC}" "1")
expect_contains("tgemm bench --density 0.2,1.5 stderr" "${bx_ERR}" "--density takes densities in (0, 1], got '1.5'")

tgemm_run(t tune-sparse --pattern csr --density 0.01 -m 1 --max-problems 1 -o "${SCRATCH}/sparse.csv")
expect_eq("exit status of tgemm tune-sparse without a GPU" "${t_RC}" "2")
expect_contains("tgemm tune-sparse stderr" "${t_ERR}" "no CUDA GPU")
if(EXISTS "${SCRATCH}/sparse.csv")
  message(FATAL_ERROR "tgemm tune-sparse without a GPU wrote ${SCRATCH}/sparse.csv")
endif()
tgemm_run(tb tune-sparse --pattern block --block-size 0)
expect_eq("exit status of tgemm tune-sparse --block-size 0" "${tb_RC}" "1")
expect_contains("tgemm tune-sparse --block-size 0 stderr" "${tb_ERR}" "--block-size must be positive, got 0")
tgemm_run(td tune-sparse --dtype fp8)
expect_eq("exit status of tgemm tune-sparse --dtype fp8 (2:4) without a GPU" "${td_RC}" "2")
