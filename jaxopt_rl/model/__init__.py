"""Flax NNX decoder (Qwen2 / Qwen3 / Llama 3), Hugging Face checkpoint import/export, tokenizer,
prompt template and partition rules.

    model = load_pretrained("/ckpt/Qwen2.5-7B", dtype="bfloat16", mesh=make_mesh(fsdp=-1))
    logits_BLV = model(input_ids_BL)
    save_pretrained(model, "/out/step-1000")

The tiny CPU setup: ``init_model(load_config(ModelConfig, "configs/model/tiny.yaml"))`` with
``Tokenizer.default()``.
"""

from jaxopt_rl.model.checkpoint import (
    CheckpointError,
    load_pretrained,
    read_config,
    save_pretrained,
)
from jaxopt_rl.model.config import ModelConfig, RopeScaling
from jaxopt_rl.model.partitioning import (
    DEFAULT_RULES,
    SAMPLING_RULES,
    ShardingRules,
    make_mesh,
    param_shardings,
)
from jaxopt_rl.model.prompt import PromptTemplate, build_prompt, extract_program, problem_prompt
from jaxopt_rl.model.tokenizer import Tokenizer, TokenizerError
from jaxopt_rl.model.transformer import KVCache, Transformer, init_model

__all__ = [
    "DEFAULT_RULES",
    "SAMPLING_RULES",
    "CheckpointError",
    "KVCache",
    "ModelConfig",
    "PromptTemplate",
    "RopeScaling",
    "ShardingRules",
    "Tokenizer",
    "TokenizerError",
    "Transformer",
    "build_prompt",
    "extract_program",
    "init_model",
    "load_pretrained",
    "make_mesh",
    "param_shardings",
    "problem_prompt",
    "read_config",
    "save_pretrained",
]
