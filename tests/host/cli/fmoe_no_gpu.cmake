# `tgemm bench --family fmoe` and `tgemm tune-fmoe` on a machine without a usable GPU: their inputs
# and options are checked first (exit 1, naming the option, file and line), then the early exit
# (status 2, nothing run, nothing written). The GPU is hidden by cli_common.cmake.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/routing_race_checks.cmake")

set(suite "${SOURCE_DIR}/bench/shapes/fmoe_shapes.csv")
tgemm_run(b bench --family fmoe --max-problems 1 --replays 1 --no-check --json - --suite "${suite}")
expect_eq("exit status of tgemm bench --family fmoe without a GPU" "${b_RC}" "2")
expect_contains("tgemm bench --family fmoe stderr" "${b_ERR}" "no CUDA GPU")
expect_eq("tgemm bench --family fmoe stdout (nothing may be timed)" "${b_OUT}" "")

tgemm_run(ba bench --family fmoe --activation relu --json - --suite "${suite}")
expect_eq("exit status of tgemm bench --family fmoe --activation relu" "${ba_RC}" "1")
expect_contains("tgemm bench --family fmoe --activation relu stderr" "${ba_ERR}"
                "--activation must be silu or gelu, got 'relu'")
tgemm_run(bd bench --family fmoe --dtype fp32 --json - --suite "${suite}")
expect_eq("exit status of tgemm bench --family fmoe --dtype fp32" "${bd_RC}" "1")
expect_contains("tgemm bench --family fmoe --dtype fp32 stderr" "${bd_ERR}" "--dtype must be bf16 or fp16, got 'fp32'")
tgemm_run(bm bench --family fmoe -m 0 --json - --suite "${suite}")
expect_eq("exit status of tgemm bench --family fmoe -m 0" "${bm_RC}" "1")
expect_contains("tgemm bench --family fmoe -m 0 stderr" "${bm_ERR}" "token counts must lie in [1, ")

expect_tune_exits_without_gpu(fmoe tuned_fmoe.csv --suite "${suite}" --tokens 8 --max-problems 1)

file(WRITE "${SCRATCH}/untuned_fmoe.csv" "T,E,topk,H,I,dtype,quant,activation\n"
                                         "64,8,2,128,96,torch.bfloat16,none,silu\n"
                                         "64,8,2,128,96,torch.bfloat16,fp8_block,silu\n")
tgemm_run(tq tune-fmoe -i "${SCRATCH}/untuned_fmoe.csv" -o "${SCRATCH}/tuned_fmoe.csv")
expect_eq("exit status of tgemm tune-fmoe on an fp8_block row" "${tq_RC}" "1")
expect_contains("tgemm tune-fmoe -i stderr" "${tq_ERR}"
                "untuned_fmoe.csv:3: quant fp8_block: fused_moe takes no quantized weights")
file(WRITE "${SCRATCH}/untuned_topk.csv" "T,E,topk,H,I,dtype\n8,4,5,128,96,torch.bfloat16\n")
tgemm_run(tk tune-fmoe -i "${SCRATCH}/untuned_topk.csv" -o "${SCRATCH}/tuned_fmoe.csv")
expect_eq("exit status of tgemm tune-fmoe on topk > E" "${tk_RC}" "1")
expect_contains("tgemm tune-fmoe topk > E stderr" "${tk_ERR}" "untuned_topk.csv:2: topk (5) exceeds the experts (4)")
file(WRITE "${SCRATCH}/untuned_header.csv" "T,E,topk,H,dtype\n8,8,2,128,torch.bfloat16\n")
tgemm_run(th tune-fmoe -i "${SCRATCH}/untuned_header.csv" -o "${SCRATCH}/tuned_fmoe.csv")
expect_eq("exit status of tgemm tune-fmoe on a header without I" "${th_RC}" "1")
expect_contains("tgemm tune-fmoe header stderr" "${th_ERR}" "untuned_header.csv:1: the header has no column I")
expect_tune_input_refusals(fmoe "${SCRATCH}/untuned_fmoe.csv" "${suite}")
tgemm_run(tt tune-fmoe --suite "${suite}" --tokens 8,x)
expect_eq("exit status of tgemm tune-fmoe --tokens 8,x" "${tt_RC}" "1")
expect_contains("tgemm tune-fmoe --tokens stderr" "${tt_ERR}" "--tokens")
tgemm_run(tb tune-fmoe --suite "${suite}" --tie-band 2)
expect_eq("exit status of tgemm tune-fmoe --tie-band 2 (CLI11's range check)" "${tb_RC}" "105")

expect_tune_refuses_other_table(fmoe "${suite}")

tgemm_run(tp tune-fmoe --suite "${suite}" --mp 0)
expect_eq("exit status of tgemm tune-fmoe --mp 0 (CLI11's range check)" "${tp_RC}" "105")
tgemm_run(tp2 tune-fmoe --suite "${suite}" --mp 2 -o "${SCRATCH}/tuned_mp.csv")
expect_eq("exit status of tgemm tune-fmoe --mp 2 without a GPU" "${tp2_RC}" "2")
if(EXISTS "${SCRATCH}/tuned_mp.csv")
  message(FATAL_ERROR "tgemm tune-fmoe --mp 2 without a GPU wrote ${SCRATCH}/tuned_mp.csv")
endif()
