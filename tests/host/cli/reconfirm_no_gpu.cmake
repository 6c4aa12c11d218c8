# `tgemm reconfirm`: its arguments and the table are checked first (exit status 1, the message
# names the option or the file); then, without a usable GPU (cli_common.cmake hides it), exit
# status 2, nothing run and the table untouched.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

set(table "${SCRATCH}/tuned.csv")
file(COPY_FILE "${SOURCE_DIR}/configs/bf16_tuned_gemm.csv" "${table}")
file(SHA256 "${table}" before)

# A refused option: exit status 1, the message naming the option, the expectation and the value.
function(expect_refused label message)
  tgemm_run(x reconfirm "${table}" ${ARGN})
  expect_eq("${label} exit status" "${x_RC}" "1")
  expect_contains("${label}" "${x_ERR}" "${message}")
endfunction()
expect_refused("0 rounds" "--rounds must be >= 1, got 0" --rounds 0)
expect_refused("margin 1.5" "--margin must be in [0, 1), got 1.5" --margin 1.5)
expect_refused("sustained margin 1.5" "--sustained_margin must be in [0, 1), got 1.5" --sustained_margin 1.5)
expect_refused("placement tolerance 0.6" "--placement_tolerance must be in [0, 0.5), got 0.6" --placement_tolerance 0.6)
expect_refused("0 rotation sets" "--min_rotation_sets must be in [1, 32], got 0" --min_rotation_sets 0)
expect_refused("17 alternatives" "--alternatives must be in [0, 16], got 17" --alternatives 17)
expect_refused("alternatives without a profile" "--alternatives 2 needs --profile (the tune's --profile_file), got none"
               --alternatives 2)
expect_refused("choice band 0.2" "--choice_band must be in [0, 0.1), got 0.2" --choice_band 0.2)
expect_refused("missing profile" "cannot open the --profile file '${SCRATCH}/missing_prof.csv'" --alternatives 2
               --profile "${SCRATCH}/missing_prof.csv")
tgemm_run(f reconfirm "${SCRATCH}/missing.csv")
expect_eq("missing table exit status" "${f_RC}" "1")
expect_contains("missing table" "${f_ERR}" "cannot open the tuned file '${SCRATCH}/missing.csv'")

tgemm_run(g reconfirm "${table}" -o "${SCRATCH}/out.csv")
expect_eq("no GPU exit status" "${g_RC}" "2")
expect_contains("no GPU" "${g_ERR}" "tgemm reconfirm: no CUDA GPU is usable on this machine")
# The slot flags (short slots on by default) and the options `tgemm tune` passes
# (its confirmation rule) parse; the GPU check follows.
foreach(flag --short_slots --no-short_slots "--rounds;12" "--margin;0.01" "--sustained_margin;0.01"
             "--placement_tolerance;0.01" "--min_rotation_sets;2" "--alternatives;0")
  tgemm_run(s reconfirm "${table}" ${flag} -o "${SCRATCH}/out.csv")
  expect_eq("no GPU exit status (${flag})" "${s_RC}" "2")
endforeach()
if(EXISTS "${SCRATCH}/out.csv")
  message(FATAL_ERROR "no GPU: reconfirm wrote ${SCRATCH}/out.csv")
endif()
file(SHA256 "${table}" after)
expect_eq("no GPU: the table is untouched" "${after}" "${before}")
