# Bad inputs and failed writes of `tgemm shapes`, `tune -i`, `merge` and `compare`: each exits 1
# with a message naming the value (and file:line for a CSV line), writes nothing it should not,
# and leaves no temporary file behind.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

# expect_error(<prefix> <part>...): the run <prefix> exited 1 and its stderr holds every part.
function(expect_error prefix)
  expect_eq("${prefix}: exit status" "${${prefix}_RC}" "1")
  foreach(part IN LISTS ARGN)
    expect_contains("${prefix}: stderr" "${${prefix}_ERR}" "${part}")
  endforeach()
endfunction()

# --- tgemm shapes: config values out of range, each named with its value; no CSV written.
file(READ "${SOURCE_DIR}/tests/data/configs/llama3-8b.json" llama)
file(READ "${SOURCE_DIR}/tests/data/configs/mixtral-8x7b.json" mixtral)
foreach(case "llama;head_dim;0" "llama;head_dim;-128" "llama;hidden_size;-4096" "llama;intermediate_size;0"
             "llama;hidden_size;9223372036854775807" "mixtral;num_experts_per_tok;9")
  list(GET case 0 model)
  list(GET case 1 key)
  list(GET case 2 value)
  string(JSON cfg SET "${${model}}" "${key}" "${value}")
  file(WRITE "${SCRATCH}/${key}_${value}.json" "${cfg}")
  tgemm_run(c shapes --model_dir "${SCRATCH}/${key}_${value}.json" -o "${SCRATCH}/${key}_${value}.csv")
  expect_error(c "'${key}'" "${value}")
  if(EXISTS "${SCRATCH}/${key}_${value}.csv")
    message(FATAL_ERROR "tgemm shapes wrote a CSV for ${key} = ${value}")
  endif()
endforeach()

# --- tgemm shapes: token counts of 0, overflowing ones, none, and products past 2^31 - 1.
set(llama_json "${SOURCE_DIR}/tests/data/configs/llama3-8b.json")
foreach(case "--nsets;0;--nsets value 0" "--nsets;1,99999999999999999999;--nsets"
             "--nsets;,;at least one token count"
             "--nsets;2147483647,1;2147483647")
  list(GET case 0 opt)
  list(GET case 1 value)
  list(GET case 2 named)
  tgemm_run(n shapes --model_dir "${llama_json}" ${opt} "${value}" --batch_size 2 -o "${SCRATCH}/n.csv")
  expect_error(n "${named}")
endforeach()
tgemm_run(nb shapes --model_dir "${llama_json}" --nsets 1 --batch_size 0 -o "${SCRATCH}/n.csv")
expect_error(nb "--batch_size must be in [1, 2147483647], got 0")
if(EXISTS "${SCRATCH}/n.csv")
  message(FATAL_ERROR "tgemm shapes wrote ${SCRATCH}/n.csv for a bad token count")
endif()

# --- Writes that fail: the full device, a directory.
tgemm_run(sf shapes --model_dir "${llama_json}" --nsets 1 -o /dev/full)
expect_error(sf "-o '/dev/full'" "failed")

set(row "sm_90a,132,1,4096,4096,False,torch.bfloat16,torch.bfloat16,False,False,cublaslt,4,0,5,lt_a,0,0.125,2.5,none,,")
file(WRITE "${SCRATCH}/a.csv" "${TUNED_HEADER}\n${row}\n")
tgemm_run(mf merge "${SCRATCH}/a.csv" -o /dev/full)
expect_error(mf "/dev/full" "not a regular file")
file(MAKE_DIRECTORY "${SCRATCH}/outdir")
tgemm_run(md merge "${SCRATCH}/a.csv" -o "${SCRATCH}/outdir")
expect_error(md "${SCRATCH}/outdir" "not a regular file")
file(GLOB left "${SCRATCH}/outdir.*" "${SCRATCH}/outdir/*")
expect_eq("files left by merge -o DIR" "${left}" "")

tgemm_run(cf compare "${SCRATCH}/a.csv" "${SCRATCH}/a.csv" --json /dev/full)
expect_error(cf "--json '/dev/full'" "failed")

# merge into a file that works: the lock file beside it, no temporary file.
tgemm_run(mo merge "${SCRATCH}/a.csv" -o "${SCRATCH}/merged.csv")
expect_eq("merge: exit status" "${mo_RC}" "0")
expect_file("${SCRATCH}/merged.csv" "${TUNED_HEADER}\n${row}\n")
file(GLOB left "${SCRATCH}/merged.csv.tmp*")
expect_eq("temporary files left by merge" "${left}" "")

# --- tgemm tune -i: every malformed untuned line is an error naming file:line and the value,
# before a GPU is asked for (none is visible here: a parsed file would exit 2, not 1).
set(good "1,4096,4096,False,torch.bfloat16,torch.bfloat16,False,False,none")
foreach(case "M=0;0,4096,4096,False,torch.bfloat16,torch.bfloat16,False,False,none;M must be an integer"
             "M text;abc,4096,4096,False,torch.bfloat16,torch.bfloat16,False,False,none;'abc'"
             "K huge;1,4096,99999999999,False,torch.bfloat16,torch.bfloat16,False,False,none;'99999999999'"
             "bias;1,4096,4096,maybe,torch.bfloat16,torch.bfloat16,False,False,none;bias must be True or False, got 'maybe'"
             "scaleAB;1,4096,4096,False,torch.bfloat16,torch.bfloat16,yes,False,none;scaleAB must be True or False"
             "dtype;1,4096,4096,False,torch.float32,torch.float32,False,False,none;dtype must be torch.bfloat16"
             "unknown dtype;1,4096,4096,False,torch.bf16x,torch.bfloat16,False,False,none;unknown dtype 'torch.bf16x'"
             "epilogue;1,4096,4096,False,torch.bfloat16,torch.bfloat16,False,False,gelu2;unknown epilogue 'gelu2'"
             "extra field;${good},extra;10 fields where the header has 9"
             "missing field;1,4096,4096,False,torch.bfloat16;5 fields where the header has 9")
  list(GET case 0 what)
  list(GET case 1 line)
  list(GET case 2 named)
  string(MAKE_C_IDENTIFIER "${what}" id)
  file(WRITE "${SCRATCH}/${id}.csv" "${UNTUNED_HEADER}\n${good}\n${line}\n")
  tgemm_run(t tune -i "${SCRATCH}/${id}.csv" -o "${SCRATCH}/tuned_${id}.csv")
  expect_error(t "${SCRATCH}/${id}.csv:3" "${named}")
endforeach()
file(WRITE "${SCRATCH}/dup.csv" "M,N,K,N\n1,2,3,4\n")
tgemm_run(td tune -i "${SCRATCH}/dup.csv" -o "${SCRATCH}/tuned.csv")
expect_error(td "dup.csv:1" "column 'N' twice")
file(WRITE "${SCRATCH}/empty.csv" "${UNTUNED_HEADER}\n")
tgemm_run(te tune -i "${SCRATCH}/empty.csv" -o "${SCRATCH}/tuned.csv")
expect_error(te "empty.csv" "holds no problem")
if(EXISTS "${SCRATCH}/tuned.csv")
  message(FATAL_ERROR "tgemm tune wrote ${SCRATCH}/tuned.csv for a bad input")
endif()

# The same file without the bad line parses: the tune gets as far as asking for the GPU.
file(WRITE "${SCRATCH}/good.csv" "${UNTUNED_HEADER}\n${good}\n1,64,64,,,,,,\n")
tgemm_run(tg tune -i "${SCRATCH}/good.csv" -o "${SCRATCH}/tuned.csv")
expect_eq("tune with a valid input: exit status" "${tg_RC}" "2")
expect_contains("tune with a valid input: stderr" "${tg_ERR}" "no CUDA GPU")
