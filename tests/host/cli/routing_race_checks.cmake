# The checks `tgemm tune-gmm` and `tgemm tune-fmoe` share (gmm_no_gpu.cmake, fmoe_no_gpu.cmake):
# both race a key on two routings (tools/cli/race_cli.h) and take their problems, options and
# output the same way. Included after cli_common.cmake, whose tgemm_run and expect_* they use.

# expect_tune_exits_without_gpu(<family> <output file name> args...): `tgemm tune-<family> args...
# -o <output>` exits with status 2 naming the missing GPU and writes nothing.
function(expect_tune_exits_without_gpu family output)
  tgemm_run(t tune-${family} ${ARGN} -o "${SCRATCH}/${output}")
  expect_eq("exit status of tgemm tune-${family} without a GPU" "${t_RC}" "2")
  expect_contains("tgemm tune-${family} stderr" "${t_ERR}" "no CUDA GPU")
  if(EXISTS "${SCRATCH}/${output}")
    message(FATAL_ERROR "tgemm tune-${family} without a GPU wrote ${SCRATCH}/${output}")
  endif()
endfunction()

# expect_tune_input_refusals(<family> <untuned csv> <suite>): a missing -i file, -i with --suite
# (CLI11's ExcludesError) and a --filter that leaves no problem are refused before any GPU work.
function(expect_tune_input_refusals family untuned suite)
  set(cmd tune-${family})
  tgemm_run(tm ${cmd} -i "${SCRATCH}/missing.csv")
  expect_eq("exit status of tgemm ${cmd} -i missing.csv" "${tm_RC}" "1")
  expect_contains("tgemm ${cmd} -i missing.csv stderr" "${tm_ERR}" "missing.csv' cannot be opened")
  tgemm_run(tx ${cmd} -i "${untuned}" --suite "${suite}")
  expect_eq("exit status of tgemm ${cmd} -i with --suite (CLI11's ExcludesError)" "${tx_RC}" "108")
  expect_contains("tgemm ${cmd} -i --suite stderr" "${tx_ERR}" "excludes")
  tgemm_run(tf ${cmd} --suite "${suite}" --filter no-such-problem)
  expect_eq("exit status of tgemm ${cmd} on no problem" "${tf_RC}" "1")
  expect_contains("tgemm ${cmd} --filter stderr" "${tf_ERR}" "no problem to tune")
endfunction()

# expect_tune_refuses_other_table(<family> <suite>): an output that is not a <family> table is
# refused before anything is raced: the merge would drop its lines.
function(expect_tune_refuses_other_table family suite)
  file(WRITE "${SCRATCH}/not_${family}.csv" "arch,sm_count,M,N,K,dtype,libtype,kernelName\n")
  tgemm_run(to tune-${family} --suite "${suite}" --max-problems 1 -o "${SCRATCH}/not_${family}.csv")
  expect_eq("exit status of tgemm tune-${family} -o on another table" "${to_RC}" "1")
  expect_contains("tgemm tune-${family} -o stderr" "${to_ERR}" "has lines that are not ${family} rows")
endfunction()
