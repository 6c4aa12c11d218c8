# `tgemm run`: its arguments are checked first (exit status 1, the message names the option and
# the value); then, without a usable GPU (cli_common.cmake hides it), exit status 2 and nothing run.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

tgemm_run(e run --epilogue silu)
expect_eq("bad epilogue exit status" "${e_RC}" "1")
expect_contains("bad epilogue" "${e_ERR}" "--epilogue must be none, gelu, gelu_tanh or relu, got 'silu'")
tgemm_run(z run -m 0)
expect_eq("M = 0 exit status" "${z_RC}" "1")
expect_contains("M = 0" "${z_ERR}" "-m, -n and -k must be >= 1, got 0, 4096, 4096")
tgemm_run(i run --iters 0)
expect_eq("no iterations exit status" "${i_RC}" "1")
expect_contains("no iterations" "${i_ERR}" "--iters must be >= 1, got 0")
tgemm_run(d run --dtype int4)
expect_eq("bad dtype exit status" "${d_RC}" "1")
expect_contains("bad dtype" "${d_ERR}" "--dtype")

tgemm_run(g run -m 1 -n 576 -k 7168 --solution skinny:sm90_mma_wa_m8_n16_wn1_wk4_u8_sk8)
expect_eq("no GPU exit status" "${g_RC}" "2")
expect_contains("no GPU" "${g_ERR}" "tgemm run: no CUDA GPU is usable on this machine")
expect_eq("no GPU: nothing printed on stdout" "${g_OUT}" "")
