# `tgemm shapes --model_dir`: the untuned CSV of a model's config.json, M = tokens (x the experts'
# share for MoE rows), rows in --nsets order, the dtype taken from torch_dtype.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

set(configs "${SOURCE_DIR}/tests/data/configs")
set(bf16 "False,torch.bfloat16,torch.bfloat16,False,False,none")

# Llama-3-70B at tp 8, M in {1, 16}: exactly the suite's four llama3-70b-tp8 GEMMs per M.
set(expected_70b "${UNTUNED_HEADER}
1,1280,8192,${bf16}
1,8192,1024,${bf16}
1,7168,8192,${bf16}
1,8192,3584,${bf16}
16,1280,8192,${bf16}
16,8192,1024,${bf16}
16,7168,8192,${bf16}
16,8192,3584,${bf16}
")
tgemm_run(f shapes --model_dir "${configs}/llama3-70b.json" --tp 8 --nsets 1,16 -o "${SCRATCH}/70b.csv")
expect_eq("exit status" "${f_RC}" "0")
expect_file("${SCRATCH}/70b.csv" "${expected_70b}")
expect_contains("stdout" "${f_OUT}" "wrote 8 problems")

# A directory holding config.json is read the same way.
file(MAKE_DIRECTORY "${SCRATCH}/llama3-70b")
file(COPY_FILE "${configs}/llama3-70b.json" "${SCRATCH}/llama3-70b/config.json")
tgemm_run(d shapes --model_dir "${SCRATCH}/llama3-70b" --tp 8 --nsets 1,16 -o "${SCRATCH}/70b_dir.csv")
expect_eq("exit status (directory)" "${d_RC}" "0")
expect_file("${SCRATCH}/70b_dir.csv" "${expected_70b}")

# Mixtral: expert GEMMs see tokens * 2 / 8 (rounded up), the attention GEMMs all tokens.
tgemm_run(x shapes --model_dir "${configs}/mixtral-8x7b.json" --nsets 1,16 -o "${SCRATCH}/mixtral.csv")
expect_eq("exit status (mixtral)" "${x_RC}" "0")
expect_file("${SCRATCH}/mixtral.csv" "${UNTUNED_HEADER}
1,6144,4096,${bf16}
1,4096,4096,${bf16}
1,28672,4096,${bf16}
1,4096,14336,${bf16}
16,6144,4096,${bf16}
16,4096,4096,${bf16}
4,28672,4096,${bf16}
4,4096,14336,${bf16}
")
expect_contains("stdout (mixtral)" "${x_OUT}" "(M = tokens x 0.2500)")

# --batch_size multiplies the tokens; --lm_head appends the LM head; --dtype/--outdtype/--bias
# override the row's type columns.
tgemm_run(o shapes --model_dir "${configs}/llama3-8b.json" --nsets 3 --batch_size 2 --lm_head
          --dtype fp16 --outdtype fp32 --bias -o "${SCRATCH}/8b.csv")
expect_eq("exit status (options)" "${o_RC}" "0")
set(f16 "True,torch.float16,torch.float32,False,False,none")
expect_file("${SCRATCH}/8b.csv" "${UNTUNED_HEADER}
6,6144,4096,${f16}
6,4096,4096,${f16}
6,28672,4096,${f16}
6,4096,14336,${f16}
6,128256,4096,${f16}
")

# A --tp that does not divide the heads: exit 1, the message names --tp, no file written.
tgemm_run(e shapes --model_dir "${configs}/llama3-8b.json" --tp 3 -o "${SCRATCH}/bad.csv")
expect_eq("exit status (--tp 3)" "${e_RC}" "1")
expect_contains("stderr (--tp 3)" "${e_ERR}" "--tp 3")
expect_contains("stderr (--tp 3)" "${e_ERR}" "num_attention_heads")
if(EXISTS "${SCRATCH}/bad.csv")
  message(FATAL_ERROR "tgemm shapes wrote ${SCRATCH}/bad.csv although it failed")
endif()

# A missing config: exit 1, the message names the path.
tgemm_run(m shapes --model_dir "${SCRATCH}/no-such-model" -o "${SCRATCH}/missing.csv")
expect_eq("exit status (missing config)" "${m_RC}" "1")
expect_contains("stderr (missing config)" "${m_ERR}" "no-such-model")
