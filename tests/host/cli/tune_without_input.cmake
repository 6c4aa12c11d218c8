# `tgemm tune` without -i/--input_file: a non-zero exit and a message naming the missing option.
# The GPU is hidden (cli_common.cmake), as on a CI machine or a login node: the arguments are
# checked before the GPU is asked for (the --worker path aside), as `tgemm shapes`/`merge` do.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

tgemm_run(t tune -o "${SCRATCH}/tuned.csv")
if(t_RC EQUAL 0)
  message(FATAL_ERROR "tgemm tune without -i exited 0")
endif()
expect_contains("tgemm tune without -i: stderr" "${t_ERR}" "--input_file")
if(EXISTS "${SCRATCH}/tuned.csv")
  message(FATAL_ERROR "tgemm tune without -i wrote ${SCRATCH}/tuned.csv")
endif()

tgemm_run(bare tune)
if(bare_RC EQUAL 0)
  message(FATAL_ERROR "tgemm tune without arguments exited 0")
endif()
expect_contains("tgemm tune without arguments: stderr" "${bare_ERR}" "--input_file")

# An a8w8 input (the capture's a8w8_untuned_gemm.csv) is read before the GPU is asked for: a row
# without its scale recipe is refused naming the file and line; a complete one reaches the GPU check.
set(a8w8_header "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue,scales")
file(WRITE "${SCRATCH}/a8w8_noscales.csv"
     "${a8w8_header}\n16,4096,4096,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,\n")
tgemm_run(noscales tune -i "${SCRATCH}/a8w8_noscales.csv" -o "${SCRATCH}/a8w8_tuned.csv")
if(noscales_RC EQUAL 0)
  message(FATAL_ERROR "tgemm tune of an a8w8 row without scales exited 0")
endif()
expect_contains("tgemm tune, a8w8 row without scales: stderr" "${noscales_ERR}" "a8w8_noscales.csv:2: ")
expect_contains("tgemm tune, a8w8 row without scales: stderr" "${noscales_ERR}" "needs a scales column")
file(WRITE "${SCRATCH}/a8w8_untuned.csv"
     "${a8w8_header}\n16,4096,4096,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,tensor\n"
     "16,4096,4096,False,torch.int8,torch.bfloat16,False,False,none,token_channel\n")
tgemm_run(a8w8 tune -i "${SCRATCH}/a8w8_untuned.csv" -o "${SCRATCH}/a8w8_tuned.csv")
if(a8w8_RC EQUAL 0)
  message(FATAL_ERROR "tgemm tune of an a8w8 input exited 0 without a GPU")
endif()
expect_contains("tgemm tune, a8w8 input: stderr" "${a8w8_ERR}" "no CUDA GPU")
if(EXISTS "${SCRATCH}/a8w8_tuned.csv")
  message(FATAL_ERROR "tgemm tune of an a8w8 input wrote ${SCRATCH}/a8w8_tuned.csv without a GPU")
endif()

# Out-of-range values are refused by the command line itself, naming the option: placement,
# finalist, round, try and iteration counts of 0, an error ratio outside [0, 1], a negative
# warm-up, count of final contenders (0 is allowed: none beyond the margin), graph-screen
# threshold or count of refined bases (0 is allowed: the backend's default), confirmation rounds
# (0 is allowed: no confirmation), a sustained round of 0 ms, a negative sustained margin or a
# confirmation margin above 0.5; a reconfirmation margin outside [0, 0.5], rounds outside [1, 64],
# placements outside [1, 16] or a placement tolerance outside [0, 0.49]; an order band outside
# [0, 0.1]; an --m-grid largest M outside [1, 2^31 - 1], factor outside [1.1, 4] or negative shrink
# steps.
foreach(case "confirm_placements;0" "final_placements;0" "finalists;0" "final_rounds;0" "confirm_tries;0"
             "min_accurate;0" "iters;0" "errRatio;1.5" "warmup;-1" "final_contenders;-1" "graph_screen;-1"
             "refine_bases;-1" "confirm_rounds;-1" "sustained_round_ms;0"
             "sustained_margin;-0.01" "confirm_margin;0.6" "placement_tolerance;0.5" "min_rotation_sets;0"
             "min_rotation_sets;33" "accurate_block;-1" "accurate_block;65" "reconfirm_margin;-1"
             "reconfirm_margin;0.6" "reconfirm_rounds;0" "reconfirm_rounds;65" "reconfirm_placements;0"
             "reconfirm_placements;17" "reconfirm_tolerance;-0.1" "reconfirm_tolerance;0.5"
             "order_band;-0.01" "order_band;0.2" "reconfirm_alternatives;-1" "reconfirm_alternatives;17"
             "m-grid-max;0" "m-grid-max;2147483648" "m-grid-factor;1.05" "m-grid-factor;5" "m-grid-shrink-steps;-1")
  list(GET case 0 opt)
  list(GET case 1 value)
  tgemm_run(${opt} tune -i "${SCRATCH}/missing.csv" -o "${SCRATCH}/tuned.csv" --${opt} ${value})
  if(${opt}_RC EQUAL 0)
    message(FATAL_ERROR "tgemm tune --${opt} ${value} exited 0")
  endif()
  expect_contains("tgemm tune --${opt} ${value}: stderr" "${${opt}_ERR}" "--${opt}")
endforeach()

# The tune's defaults (tuner/options.h, tune_race_defaults), shown by --help.
# CLI11 prints a default as "=4" (2.1, Debian 12/Ubuntu 22.04-24.04) or " [4]" (2.4, the GPU machine's): either counts.
tgemm_run(help tune --help)
foreach(entry "--final_placements INT:INT in [1 - 16]|4" "--min_accurate INT:INT in [1 - 100000]|48"
              "--graph_screen FLOAT:FLOAT in [0 - 1e+06]|50" "--final_contenders INT:INT in [0 - 64]|2"
              "--refine_bases INT:INT in [0 - 4096]|0" "--confirm_rounds INT:INT in [0 - 64]|2"
              "--sustained_round_ms FLOAT:FLOAT in [1 - 10000]|100" "--sustained_margin FLOAT:FLOAT in [0 - 0.5]|0.01"
              "--confirm_margin FLOAT:FLOAT in [0 - 0.5]|0.01" "--placement_tolerance FLOAT:FLOAT in [0 - 0.49]|0"
              "--min_rotation_sets INT:INT in [1 - 32]|1" "--accurate_block INT:INT in [0 - 64]|8"
              "--confirm_placements INT:INT in [1 - 16]|1" "--confirm_tries INT:INT in [1 - 16]|3"
              "--reconfirm_margin FLOAT:FLOAT in [0 - 0.5]|0.06" "--reconfirm_placements INT:INT in [1 - 16]|2"
              "--reconfirm_tolerance FLOAT:FLOAT in [0 - 0.49]|0.02")
  string(FIND "${entry}" "|" bar)
  string(SUBSTRING "${entry}" 0 ${bar} spec)
  math(EXPR after "${bar} + 1")
  string(SUBSTRING "${entry}" ${after} -1 default)
  string(FIND "${help_OUT}" "${spec}=${default}" at_old)
  string(FIND "${help_OUT}" "${spec} [${default}]" at_new)
  if(at_old EQUAL -1 AND at_new EQUAL -1)
    message(FATAL_ERROR "tgemm tune --help: neither '${spec}=${default}' nor '${spec} [${default}]' found in:\n${help_OUT}")
  endif()
endforeach()
# The options a user sets come first, at most ~15 of them; the race's knobs follow in groups marked
# "Expert".
string(FIND "${help_OUT}" "Expert:" expert_at)
if(expert_at EQUAL -1)
  message(FATAL_ERROR "tgemm tune --help: no Expert group in:\n${help_OUT}")
endif()
string(SUBSTRING "${help_OUT}" 0 ${expert_at} user_help)
string(REGEX MATCHALL "\n  -[-a-zA-Z]" user_options "${user_help}")
list(LENGTH user_options n_user)
if(n_user GREATER 16 OR n_user LESS 10)
  message(FATAL_ERROR "tgemm tune --help: ${n_user} options before the Expert groups, expected 10-16:\n${user_help}")
endif()
foreach(expert --final_margin --confirm_rounds --accurate_block --reconfirm_margin --graph_screen)
  string(FIND "${user_help}" "${expert}" early)
  if(NOT early EQUAL -1)
    message(FATAL_ERROR "tgemm tune --help: ${expert} is listed before the Expert groups:\n${user_help}")
  endif()
endforeach()
expect_contains("tgemm tune --help" "${help_OUT}" "--confirm_best,--no-confirm_best")
expect_contains("tgemm tune --help" "${help_OUT}" "--sustained_confirm_all,--no-sustained_confirm_all")
expect_contains("tgemm tune --help" "${help_OUT}" "--confirm_near_default")
expect_contains("tgemm tune --help" "${help_OUT}" "--reconfirm_margin FLOAT:FLOAT in [0 - 0.5]")
expect_contains("tgemm tune --help" "${help_OUT}" "--reconfirm_rounds INT:INT in [1 - 64]")
expect_contains("tgemm tune --help" "${help_OUT}" "--reconfirm_placements INT:INT in [1 - 16]")
expect_contains("tgemm tune --help" "${help_OUT}" "--reconfirm_tolerance FLOAT:FLOAT in [0 - 0.49]")
expect_contains("tgemm tune --help" "${help_OUT}" "--order_band FLOAT:FLOAT in [0 - 0.1]")
# --reconfirm_margin 0, --reconfirm_rounds 3, --reconfirm_placements 2 and --reconfirm_tolerance 0.02
# are accepted: the run gets as far as the missing input file.
tgemm_run(rcm tune -i "${SCRATCH}/missing.csv" -o "${SCRATCH}/tuned.csv" --reconfirm_margin 0 --reconfirm_rounds 3
          --reconfirm_placements 2 --reconfirm_tolerance 0.02)
if(rcm_RC EQUAL 0)
  message(FATAL_ERROR "tgemm tune of a missing input exited 0")
endif()
expect_contains("tgemm tune --reconfirm_*: stderr" "${rcm_ERR}" "missing.csv")
# --reconfirm_alternatives (3 by default) takes its alternatives from the profile: without
# --profile_file the tune writes a temporary one, so it gets as far as the missing input file.
# Asked for with --no-reconfirm, it is refused by name before the input is read; --no-reconfirm
# alone (the default's alternatives) is not refused.
tgemm_run(alt tune -i "${SCRATCH}/missing.csv" -o "${SCRATCH}/tuned.csv" --reconfirm_alternatives 3)
expect_eq("tgemm tune --reconfirm_alternatives without a profile: exit status" "${alt_RC}" "1")
expect_contains("tgemm tune --reconfirm_alternatives without a profile: stderr" "${alt_ERR}" "missing.csv")
tgemm_run(alt tune -i "${SCRATCH}/missing.csv" -o "${SCRATCH}/tuned.csv" --reconfirm_alternatives 3
          --profile_file "${SCRATCH}/prof.csv" --no-reconfirm)
expect_eq("tgemm tune --reconfirm_alternatives --no-reconfirm: exit status" "${alt_RC}" "1")
expect_contains("tgemm tune --reconfirm_alternatives --no-reconfirm" "${alt_ERR}"
                "--reconfirm_alternatives 3 needs the reconfirmation (the alternatives are timed there), got --no-reconfirm")
tgemm_run(alt tune -i "${SCRATCH}/missing.csv" -o "${SCRATCH}/tuned.csv" --no-reconfirm)
expect_eq("tgemm tune --no-reconfirm: exit status" "${alt_RC}" "1")
expect_contains("tgemm tune --no-reconfirm: stderr" "${alt_ERR}" "missing.csv")
tgemm_run(alt tune -i "${SCRATCH}/missing.csv" -o "${SCRATCH}/tuned.csv" --reconfirm_alternatives 3
          --profile_file "${SCRATCH}/prof.csv")
expect_contains("tgemm tune --reconfirm_alternatives --profile_file: stderr" "${alt_ERR}" "missing.csv")
tgemm_run(nsc tune -i "${SCRATCH}/missing.csv" -o "${SCRATCH}/tuned.csv" --no-sustained_confirm_all)
expect_eq("tgemm tune --no-sustained_confirm_all: exit status" "${nsc_RC}" "1")
expect_contains("tgemm tune --no-sustained_confirm_all: stderr" "${nsc_ERR}" "missing.csv")
# --no-confirm_best is accepted: the run gets as far as the missing input file.
tgemm_run(ncb tune -i "${SCRATCH}/missing.csv" -o "${SCRATCH}/tuned.csv" --no-confirm_best)
if(ncb_RC EQUAL 0)
  message(FATAL_ERROR "tgemm tune of a missing input exited 0")
endif()
expect_contains("tgemm tune --no-confirm_best: stderr" "${ncb_ERR}" "missing.csv")

# --m-grid: its options are checked before the GPU (the range cases above); --model_dir needs
# --m-grid and excludes -i; with both right, the model's keys at one token each are written beside
# the tuned file before the GPU is asked for.
tgemm_run(mdn tune --model_dir "${SOURCE_DIR}/tests/data/configs/llama3-8b.json" -o "${SCRATCH}/grid.csv")
if(mdn_RC EQUAL 0)
  message(FATAL_ERROR "tgemm tune --model_dir without --m-grid exited 0")
endif()
expect_contains("tgemm tune --model_dir without --m-grid: stderr" "${mdn_ERR}" "--model_dir requires --m-grid")
tgemm_run(mdi tune --model_dir "${SOURCE_DIR}/tests/data/configs/llama3-8b.json" -i "${SCRATCH}/in.csv" --m-grid
          -o "${SCRATCH}/grid.csv")
if(mdi_RC EQUAL 0)
  message(FATAL_ERROR "tgemm tune --model_dir -i exited 0")
endif()
expect_contains("tgemm tune --model_dir -i: stderr" "${mdi_ERR}" "excludes")
tgemm_run(md tune --model_dir "${SOURCE_DIR}/tests/data/configs/llama3-8b.json" --m-grid -o "${SCRATCH}/grid.csv")
expect_eq("tgemm tune --model_dir --m-grid without a GPU: exit status" "${md_RC}" "2")
expect_file("${SCRATCH}/grid.csv.model-keys" "${UNTUNED_HEADER}
1,6144,4096,False,torch.bfloat16,torch.bfloat16,False,False,none
1,4096,4096,False,torch.bfloat16,torch.bfloat16,False,False,none
1,28672,4096,False,torch.bfloat16,torch.bfloat16,False,False,none
1,4096,14336,False,torch.bfloat16,torch.bfloat16,False,False,none
")
if(EXISTS "${SCRATCH}/grid.csv")
  message(FATAL_ERROR "tgemm tune without a GPU wrote ${SCRATCH}/grid.csv")
endif()
