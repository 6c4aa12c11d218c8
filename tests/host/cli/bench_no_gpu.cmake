# `tgemm bench` on a machine without a usable GPU: exit status 2 and a message that says so,
# before any work. The GPU is hidden by cli_common.cmake, so this holds on GPU machines too. The
# options cap the work at one tiny problem: if the GPU check ever let the run through, the test
# fails fast on "exit status 0" rather than timing the whole suite.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

tgemm_run(b bench --suite "${SOURCE_DIR}/bench/shapes/llm_shapes.csv" -m 1 --max-problems 1
          --replays 1 --no-check --json -)
expect_eq("exit status of tgemm bench without a GPU" "${b_RC}" "2")
expect_contains("tgemm bench stderr" "${b_ERR}" "no CUDA GPU")
expect_contains("tgemm bench stderr" "${b_ERR}" "Nothing was run")
expect_eq("tgemm bench stdout (nothing may be timed)" "${b_OUT}" "")

# --data: fan_in parses (and takes the same exit); anything else is refused by the command line,
# naming the option.
tgemm_run(fd bench --suite "${SOURCE_DIR}/bench/shapes/llm_shapes.csv" -m 1 --max-problems 1 --data fan_in
          --replays 1 --no-check --json -)
expect_eq("exit status of tgemm bench --data fan_in without a GPU" "${fd_RC}" "2")
tgemm_run(bd bench --data normal --json -)
if(bd_RC EQUAL 0 OR bd_RC EQUAL 2)
  message(FATAL_ERROR "tgemm bench --data normal: exit status ${bd_RC}, expected a usage error")
endif()
expect_contains("tgemm bench --data normal stderr" "${bd_ERR}" "--data")

# --family a8w8: the same early exit; its --dtype and --scales are checked first (exit 1, naming
# the option), and an unknown family is a usage error.
tgemm_run(a bench --family a8w8 --suite "${SOURCE_DIR}/bench/shapes/llm_shapes.csv" -m 1 --max-problems 1
          --replays 1 --no-check --json -)
expect_eq("exit status of tgemm bench --family a8w8 without a GPU" "${a_RC}" "2")
expect_contains("tgemm bench --family a8w8 stderr" "${a_ERR}" "no CUDA GPU")
tgemm_run(ad bench --family a8w8 --dtype bf16 --json -)
expect_eq("exit status of tgemm bench --family a8w8 --dtype bf16" "${ad_RC}" "1")
expect_contains("tgemm bench --family a8w8 --dtype bf16 stderr" "${ad_ERR}" "--family a8w8 takes --dtype fp8 or int8")
tgemm_run(as bench --family a8w8 --dtype int8 --scales rowwise --json -)
expect_eq("exit status of tgemm bench --family a8w8 --scales rowwise" "${as_RC}" "1")
expect_contains("tgemm bench --scales rowwise stderr" "${as_ERR}" "--scales must be tensor, token, channel or token_channel")
# --family a8w8_blockscale: the same early exit; FP8 only, checked first.
tgemm_run(bs bench --family a8w8_blockscale --suite "${SOURCE_DIR}/bench/shapes/llm_shapes.csv" -m 1
          --max-problems 1 --replays 1 --no-check --json -)
expect_eq("exit status of tgemm bench --family a8w8_blockscale without a GPU" "${bs_RC}" "2")
expect_contains("tgemm bench --family a8w8_blockscale stderr" "${bs_ERR}" "no CUDA GPU")
tgemm_run(bi bench --family a8w8_blockscale --dtype int8 --json -)
expect_eq("exit status of tgemm bench --family a8w8_blockscale --dtype int8" "${bi_RC}" "1")
expect_contains("tgemm bench --family a8w8_blockscale --dtype int8 stderr" "${bi_ERR}"
                "--family a8w8_blockscale takes --dtype fp8, got 'int8'")
tgemm_run(af bench --family a4w4 --json -)
if(af_RC EQUAL 0 OR af_RC EQUAL 2)
  message(FATAL_ERROR "tgemm bench --family a4w4: exit status ${af_RC}, expected a usage error")
endif()
expect_contains("tgemm bench --family a4w4 stderr" "${af_ERR}" "--family")

# --family batched: its suite (name,B,M,N,K,transpose_a,transpose_b) and --dtype are read first
# (exit 1, naming them), then the same early exit.
tgemm_run(bt bench --family batched --suite "${SOURCE_DIR}/bench/shapes/batched_shapes.csv" --max-problems 1
          --replays 1 --no-check --json -)
expect_eq("exit status of tgemm bench --family batched without a GPU" "${bt_RC}" "2")
expect_contains("tgemm bench --family batched stderr" "${bt_ERR}" "no CUDA GPU")
tgemm_run(btd bench --family batched --suite "${SOURCE_DIR}/bench/shapes/batched_shapes.csv" --dtype int8 --json -)
expect_eq("exit status of tgemm bench --family batched --dtype int8" "${btd_RC}" "1")
expect_contains("tgemm bench --family batched --dtype int8 stderr" "${btd_ERR}" "--family batched takes --dtype bf16 or fp16")
tgemm_run(bts bench --family batched --suite "${SOURCE_DIR}/bench/shapes/llm_shapes.csv" --json -)
expect_eq("exit status of tgemm bench --family batched on an a16w16 suite" "${bts_RC}" "1")
expect_contains("tgemm bench --family batched --suite llm_shapes stderr" "${bts_ERR}"
                "header needs name,B,M,N,K,transpose_a,transpose_b")
# --family batched_a8w8: the batched suite by default; --dtype (fp8 by default) and --scales are
# checked first (exit 1, naming them), then the same early exit.
tgemm_run(ba bench --family batched_a8w8 --suite "${SOURCE_DIR}/bench/shapes/batched_shapes.csv" --max-problems 1 --replays 1 --no-check --json -)
expect_eq("exit status of tgemm bench --family batched_a8w8 without a GPU" "${ba_RC}" "2")
expect_contains("tgemm bench --family batched_a8w8 stderr" "${ba_ERR}" "no CUDA GPU")
tgemm_run(bad bench --family batched_a8w8 --dtype bf16 --json -)
expect_eq("exit status of tgemm bench --family batched_a8w8 --dtype bf16" "${bad_RC}" "1")
expect_contains("tgemm bench --family batched_a8w8 --dtype bf16 stderr" "${bad_ERR}"
                "--family batched_a8w8 takes --dtype fp8 or int8, got 'bf16'")
tgemm_run(bab bench --family batched_a8w8 --dtype int8 --scales block --json -)
expect_eq("exit status of tgemm bench --family batched_a8w8 --scales block" "${bab_RC}" "1")
expect_contains("tgemm bench --family batched_a8w8 --scales block stderr" "${bab_ERR}"
                "--family batched_a8w8 takes --scales tensor, token, channel or token_channel, got 'block'")

# --overhead takes the same early exit.
tgemm_run(o bench --overhead --overhead-calls 128 --json -)
expect_eq("exit status of tgemm bench --overhead without a GPU" "${o_RC}" "2")
expect_contains("tgemm bench --overhead stderr" "${o_ERR}" "no CUDA GPU")

# So does lt-space, the other command that needs a device for everything it does.
tgemm_run(l lt-space -m 1 -n 64 -k 64)
expect_eq("exit status of tgemm lt-space without a GPU" "${l_RC}" "2")
expect_contains("tgemm lt-space stderr" "${l_ERR}" "no CUDA GPU")
