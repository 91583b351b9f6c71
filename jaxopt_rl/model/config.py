"""`ModelConfig`: the architecture of one decoder, and its mapping to and from `transformers`.

One frozen dataclass describes every supported family:

* ``qwen2`` (Qwen2 / Qwen2.5): bias on q/k/v, none on the output projection or the MLP;
* ``qwen3``: RMSNorm on each query and key head before RoPE, ``attention_bias`` on all four
  attention projections (off in released checkpoints);
* ``llama`` (Llama 3 / 3.1 / 3.2): ``attention_bias`` on all four projections, ``mlp_bias`` on the
  MLP, and optional "llama3" RoPE frequency scaling.

The bias / norm switches default from the family (``None`` means "what the family does") and are
checked against it, so every valid `ModelConfig` can be written back as a Hugging Face
``config.json`` that `transformers` loads into the same architecture.

Choices: ``param_dtype`` is the storage dtype of the weights and ``compute_dtype`` the dtype of
activations and matmuls; RMSNorm statistics, softmax, RoPE angles and log-probabilities are always
computed in float32. Sliding-window attention (``use_sliding_window: true`` in Qwen configs) and
RoPE types other than "default" and "llama3" are rejected rather than silently ignored.

Execution. The last fields say how the same weights run, never what they compute (each leaner
form equals the plain one within float tolerance, tested on CPU): the attention kernel of full
forward passes over packed rows (``attention``), rematerialisation of each decoder layer in the
backward pass (``remat``, a `jax.checkpoint_policies` name), whether the layer stack runs as
one `lax.scan` (``scan_layers``: compile time independent of depth) and the token chunk of the
log-prob and entropy computation (``logprob_chunk``: the ``[rows, tokens, vocabulary]`` logits
never exist whole). Each defaults to ``auto``, resolved by `for_platform` for the backend the
model is compiled for (`EXECUTION_DEFAULTS`): the plain forms on CPU, where rows are short and
memory is not the limit, the lean ones on TPU and GPU. They are not part of a checkpoint.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal

from jaxopt_rl.config import ConfigError, require

Family = Literal["qwen2", "qwen3", "llama"]
DTypeName = Literal["float32", "bfloat16"]
AttentionName = Literal["auto", "dense", "blockwise", "splash"]
RematName = Literal[
    "auto", "none", "nothing_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable"
]

# The execution forms each backend gets for "auto": the plain forms on CPU (short rows, where
# the dense kernels are fastest and the tests compare against them), the lean forms elsewhere.
# TPU runs Pallas splash attention; GPU the blockwise form (cuDNN through
# `jax.nn.dot_product_attention` takes causal masks and per-row lengths but not the segment ids
# of packed rows). Full remat: a layer keeps only its input for the backward pass.
EXECUTION_DEFAULTS: dict[str, dict[str, Any]] = {
    "cpu": {"attention": "dense", "remat": "none", "scan_layers": False, "logprob_chunk": 0},
    "tpu": {"attention": "splash", "remat": "nothing_saveable", "scan_layers": True,
            "logprob_chunk": 1024},
    "gpu": {"attention": "blockwise", "remat": "nothing_saveable", "scan_layers": True,
            "logprob_chunk": 1024},
}
_PLATFORM_ALIASES = {"cuda": "gpu", "rocm": "gpu"}

# model_type in config.json -> our family, and the class name transformers registers for it.
HF_ARCHITECTURES: dict[str, str] = {
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "llama": "LlamaForCausalLM",
}


@dataclass(frozen=True)
class RopeScaling:
    """Llama 3.1 ("llama3" rope_type) scaling of the RoPE inverse frequencies."""

    factor: float = 8.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position_embeddings: int = 8192

    def __post_init__(self) -> None:
        require(self.factor > 0, "factor", f"must be > 0, got {self.factor}")
        require(
            self.high_freq_factor > self.low_freq_factor > 0,
            "high_freq_factor",
            f"need high_freq_factor > low_freq_factor > 0, got {self.high_freq_factor} "
            f"and {self.low_freq_factor}",
        )
        require(
            self.original_max_position_embeddings > 0,
            "original_max_position_embeddings",
            "must be > 0",
        )


@dataclass(frozen=True)
class ModelConfig:
    """Architecture and dtypes of a decoder-only transformer (see the module docstring)."""

    family: Family = "qwen2"
    vocab_size: int = 4096
    hidden_size: int = 256
    intermediate_size: int = 768
    num_layers: int = 4
    num_heads: int = 4
    num_kv_heads: int = 2
    head_dim: int | None = None  # None: hidden_size // num_heads
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: RopeScaling | None = None
    max_position_embeddings: int = 4096
    tie_word_embeddings: bool = True
    qkv_bias: bool | None = None  # None: the family's default (True for qwen2)
    out_bias: bool | None = None  # None: same as qkv_bias, except qwen2 (False)
    mlp_bias: bool | None = None  # None: False
    qk_norm: bool | None = None  # None: True for qwen3
    initializer_range: float = 0.02
    param_dtype: DTypeName = "float32"
    compute_dtype: DTypeName = "float32"
    bos_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()
    pad_token_id: int | None = None
    # execution (see the module docstring); "auto" / None: the backend's default
    attention: AttentionName = "auto"  # kernel of full forward passes (training, scoring)
    attention_block: int = 512  # query/key block of the blockwise and splash kernels
    remat: RematName = "auto"  # jax.checkpoint policy of each decoder layer ("none": off)
    scan_layers: bool | None = None  # run the layers as one lax.scan
    logprob_chunk: int | None = None  # tokens per log-prob chunk (0: the whole row at once)
    # the backend `for_platform` resolved the "auto" fields for; splash on "cpu" runs in Pallas'
    # interpreter (the CPU equality tests)
    platform: str | None = None  # backend the execution fields were resolved for

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "num_layers",
            "num_heads",
            "num_kv_heads",
        ):
            require(getattr(self, name) > 0, name, f"must be > 0, got {getattr(self, name)}")
        require(
            self.num_heads % self.num_kv_heads == 0,
            "num_kv_heads",
            f"must divide num_heads ({self.num_heads}), got {self.num_kv_heads}",
        )
        if self.head_dim is None:
            require(
                self.hidden_size % self.num_heads == 0,
                "head_dim",
                f"not given and hidden_size ({self.hidden_size}) is not a multiple of "
                f"num_heads ({self.num_heads})",
            )
            object.__setattr__(self, "head_dim", self.hidden_size // self.num_heads)
        require(
            self.head_dim > 0 and self.head_dim % 2 == 0,
            "head_dim",
            f"must be even and > 0 (RoPE), got {self.head_dim}",
        )
        require(math.isfinite(self.rms_norm_eps) and self.rms_norm_eps > 0, "rms_norm_eps",
                f"must be finite and > 0, got {self.rms_norm_eps}")
        require(math.isfinite(self.rope_theta) and self.rope_theta > 0, "rope_theta",
                f"must be finite and > 0, got {self.rope_theta}")
        require(math.isfinite(self.initializer_range) and self.initializer_range >= 0,
                "initializer_range", f"must be finite and >= 0, got {self.initializer_range}")
        require(self.max_position_embeddings > 0, "max_position_embeddings",
                f"must be > 0, got {self.max_position_embeddings}")
        for name in ("bos_token_id", "pad_token_id"):
            value = getattr(self, name)
            require(
                value is None or 0 <= value < self.vocab_size,
                name,
                f"{value} is outside the vocabulary",
            )
        for token in self.eos_token_ids:
            require(
                0 <= token < self.vocab_size, "eos_token_ids", f"{token} is outside the vocabulary"
            )

        require(self.attention_block >= 1, "attention_block", "must be >= 1")
        require(
            self.logprob_chunk is None or self.logprob_chunk >= 0,
            "logprob_chunk",
            f"must be >= 0 (0: no chunking), got {self.logprob_chunk}",
        )
        require(
            self.attention in ("auto", "dense", "blockwise", "splash"),
            "attention",
            f"must be auto, dense, blockwise or splash, got {self.attention!r}",
        )
        require(
            self.remat in _REMAT_NAMES,
            "remat",
            f"must be one of {', '.join(_REMAT_NAMES)}, got {self.remat!r}",
        )
        defaults = _family_defaults(self.family)
        for name, value in defaults.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        self._check_family()

    def _check_family(self) -> None:
        family = self.family
        if family == "qwen2":
            require(self.qkv_bias, "qkv_bias", "qwen2 always has q/k/v bias")
            require(not self.out_bias, "out_bias", "qwen2 has no output-projection bias")
        else:
            require(
                self.out_bias == self.qkv_bias,
                "out_bias",
                f"{family} has one attention_bias switch for q/k/v/o; "
                "qkv_bias and out_bias must agree",
            )
        require(family == "llama" or not self.mlp_bias, "mlp_bias", f"{family} has no MLP bias")
        require(
            self.qk_norm == (family == "qwen3"),
            "qk_norm",
            "q/k RMSNorm is what distinguishes qwen3",
        )
        require(
            self.rope_scaling is None or family == "llama",
            "rope_scaling",
            f"llama3 RoPE scaling is only supported for the llama family, not {family}",
        )

    @property
    def num_params(self) -> int:
        """Number of scalar parameters (tied embeddings counted once)."""
        d, h, f = self.hidden_size, self.head_dim, self.intermediate_size
        q_out, kv_out = self.num_heads * h, self.num_kv_heads * h
        attention = d * q_out + 2 * d * kv_out + q_out * d
        attention += (q_out + 2 * kv_out) * bool(self.qkv_bias) + d * bool(self.out_bias)
        attention += 2 * h * bool(self.qk_norm)
        mlp = 3 * d * f + (2 * f + d) * bool(self.mlp_bias)
        per_layer = attention + mlp + 2 * d
        embeddings = self.vocab_size * d * (1 if self.tie_word_embeddings else 2)
        return self.num_layers * per_layer + embeddings + d

    def replace(self, **changes: Any) -> ModelConfig:
        return dataclasses.replace(self, **changes)

    def for_platform(self, platform: str) -> ModelConfig:
        """This config with every "auto" execution field set to `platform`'s default ("cpu",
        "tpu", "gpu"; "cuda" and "rocm" count as "gpu") and `platform` recorded; explicit
        choices are kept."""
        platform = _PLATFORM_ALIASES.get(platform, platform)
        if platform not in EXECUTION_DEFAULTS:
            raise ConfigError(
                f"no execution defaults for platform {platform!r}; known: "
                f"{', '.join(EXECUTION_DEFAULTS)}"
            )
        defaults = EXECUTION_DEFAULTS[platform]
        changes = {
            name: value
            for name, value in defaults.items()
            if getattr(self, name) in ("auto", None)
        }
        changes["platform"] = platform
        return dataclasses.replace(self, **changes)

    @property
    def execution_resolved(self) -> bool:
        return self.platform is not None

    # ----------------------------------------------------------------------------- transformers

    @classmethod
    def from_hf(cls, hf_config: Any, **overrides: Any) -> ModelConfig:
        """Build from a `transformers` config object (Qwen2Config, Qwen3Config, LlamaConfig).

        Raises `ConfigError` naming the offending key for anything this model cannot represent.
        `overrides` (e.g. ``param_dtype="bfloat16"``) replace fields after conversion.
        """
        model_type = getattr(hf_config, "model_type", None)
        if model_type not in HF_ARCHITECTURES:
            raise ConfigError(
                f"model_type: {model_type!r} is not supported; "
                f"supported: {', '.join(HF_ARCHITECTURES)}"
            )
        act = getattr(hf_config, "hidden_act", "silu")
        if act != "silu":
            raise ConfigError(f"hidden_act: {act!r} is not supported (SwiGLU needs 'silu')")
        if getattr(hf_config, "use_sliding_window", False):
            raise ConfigError("use_sliding_window: sliding-window attention is not supported")
        rope_theta, rope_scaling = _rope_from_hf(hf_config)
        bias = bool(getattr(hf_config, "attention_bias", False))
        eos = getattr(hf_config, "eos_token_id", None)
        fields: dict[str, Any] = dict(
            family=model_type,
            vocab_size=hf_config.vocab_size,
            hidden_size=hf_config.hidden_size,
            intermediate_size=hf_config.intermediate_size,
            num_layers=hf_config.num_hidden_layers,
            num_heads=hf_config.num_attention_heads,
            num_kv_heads=getattr(hf_config, "num_key_value_heads", None)
            or hf_config.num_attention_heads,
            head_dim=getattr(hf_config, "head_dim", None),
            rms_norm_eps=float(hf_config.rms_norm_eps),
            rope_theta=rope_theta,
            rope_scaling=rope_scaling,
            max_position_embeddings=hf_config.max_position_embeddings,
            tie_word_embeddings=bool(getattr(hf_config, "tie_word_embeddings", False)),
            qkv_bias=True if model_type == "qwen2" else bias,
            out_bias=False if model_type == "qwen2" else bias,
            mlp_bias=bool(getattr(hf_config, "mlp_bias", False)),
            qk_norm=model_type == "qwen3",
            initializer_range=float(getattr(hf_config, "initializer_range", 0.02)),
            bos_token_id=getattr(hf_config, "bos_token_id", None),
            eos_token_ids=tuple(eos)
            if isinstance(eos, list | tuple)
            else (() if eos is None else (eos,)),
            pad_token_id=getattr(hf_config, "pad_token_id", None),
        )
        fields.update(overrides)
        return cls(**fields)

    def to_hf_dict(self) -> dict[str, Any]:
        """The keyword arguments of the matching `transformers` config class (see `to_hf`)."""
        rope: dict[str, Any] = {"rope_type": "default", "rope_theta": self.rope_theta}
        if self.rope_scaling is not None:
            rope = {
                "rope_type": "llama3",
                "rope_theta": self.rope_theta,
                **dataclasses.asdict(self.rope_scaling),
            }
        eos = (
            list(self.eos_token_ids)
            if len(self.eos_token_ids) > 1
            else (self.eos_token_ids or (None,))[0]
        )
        kwargs: dict[str, Any] = dict(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            intermediate_size=self.intermediate_size,
            num_hidden_layers=self.num_layers,
            num_attention_heads=self.num_heads,
            num_key_value_heads=self.num_kv_heads,
            head_dim=self.head_dim,
            hidden_act="silu",
            rms_norm_eps=self.rms_norm_eps,
            rope_parameters=rope,
            max_position_embeddings=self.max_position_embeddings,
            tie_word_embeddings=self.tie_word_embeddings,
            initializer_range=self.initializer_range,
            bos_token_id=self.bos_token_id,
            eos_token_id=eos,
            pad_token_id=self.pad_token_id,
            architectures=[HF_ARCHITECTURES[self.family]],
            dtype=self.param_dtype,
        )
        if self.family in ("qwen3", "llama"):
            kwargs["attention_bias"] = bool(self.qkv_bias)
        if self.family == "llama":
            kwargs["mlp_bias"] = bool(self.mlp_bias)
        else:
            kwargs["use_sliding_window"] = False
        return kwargs

    def to_hf(self) -> Any:
        """The equivalent `transformers` config object (imports transformers; no network)."""
        import transformers

        config_class = {
            "qwen2": transformers.Qwen2Config,
            "qwen3": transformers.Qwen3Config,
            "llama": transformers.LlamaConfig,
        }[self.family]
        return config_class(**self.to_hf_dict())


_REMAT_NAMES = (
    "auto", "none", "nothing_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable"
)


def _family_defaults(family: str) -> dict[str, bool]:
    if family == "qwen2":
        return {"qkv_bias": True, "out_bias": False, "mlp_bias": False, "qk_norm": False}
    return {"qkv_bias": False, "out_bias": False, "mlp_bias": False, "qk_norm": family == "qwen3"}


def _rope_from_hf(hf_config: Any) -> tuple[float, RopeScaling | None]:
    """(theta, scaling) from either transformers-5 `rope_parameters` or the legacy keys."""
    params = getattr(hf_config, "rope_parameters", None)
    if params is None:  # transformers 4.x style
        params = dict(getattr(hf_config, "rope_scaling", None) or {})
        params.setdefault("rope_theta", getattr(hf_config, "rope_theta", 10000.0))
    if params and all(isinstance(value, dict) for value in params.values()):
        raise ConfigError("rope_parameters: per-layer-type RoPE parameters are not supported")
    rope_type = params.get("rope_type", params.get("type", "default"))
    theta = float(params.get("rope_theta", getattr(hf_config, "rope_theta", 10000.0)))
    if params.get("partial_rotary_factor", 1.0) != 1.0:
        raise ConfigError("rope_parameters.partial_rotary_factor: partial RoPE is not supported")
    if rope_type == "default":
        return theta, None
    if rope_type == "llama3":
        try:
            scaling = RopeScaling(
                factor=float(params["factor"]),
                low_freq_factor=float(params["low_freq_factor"]),
                high_freq_factor=float(params["high_freq_factor"]),
                original_max_position_embeddings=int(params["original_max_position_embeddings"]),
            )
        except KeyError as err:
            raise ConfigError(
                f"rope_parameters.{err.args[0]}: required for rope_type 'llama3'"
            ) from None
        except ConfigError as err:
            raise ConfigError(f"rope_parameters.{err}") from None
        return theta, scaling
    raise ConfigError(
        f"rope_parameters.rope_type: {rope_type!r} is not supported "
        "(supported: 'default', 'llama3')"
    )
