"""`Tokenizer`: text <-> token ids through a Hugging Face ``tokenizer.json`` (the `tokenizers`
library, no `transformers`), with the special tokens a sampler needs.

`Tokenizer.from_folder` reads a checkpoint folder: ``tokenizer.json``, the BOS/EOS/pad names from
``tokenizer_config.json`` and extra stop ids from ``generation_config.json`` (instruct models stop
on several ids, e.g. Qwen2.5's ``<|im_end|>`` and ``<|endoftext|>``). `Tokenizer.default()` is
the project's own BPE tokenizer (`train_tokenizer.py`, shipped in ``assets/``) for the tiny model.

Which tokenizer a checkpoint uses is decided here once (`tokenizer_folder`): the checkpoint's own
when it holds a ``tokenizer.json``, else the project's (the tiny model's exports carry none).
`Tokenizer.for_checkpoint` loads it and `copy_tokenizer` writes its files beside exported weights.

Choice: ``encode`` never adds BOS implicitly (``add_bos=True`` does); special-token strings in
the text (``<|im_start|>``) are parsed as their single special ids, which is how prompt templates
are written.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from tokenizers import Tokenizer as BackendTokenizer

ASSETS_DIR = Path(__file__).parent / "assets"

PAD_TOKEN = "<|pad|>"
BOS_TOKEN = "<|bos|>"
ENDOFTEXT_TOKEN = "<|endoftext|>"
IM_START_TOKEN = "<|im_start|>"
IM_END_TOKEN = "<|im_end|>"
EOS_TOKEN = IM_END_TOKEN  # a completion (an assistant turn) ends with <|im_end|>
SPECIAL_TOKENS = (PAD_TOKEN, BOS_TOKEN, ENDOFTEXT_TOKEN, IM_START_TOKEN, IM_END_TOKEN)
# The files of a tokenizer folder, in Hugging Face layout; only tokenizer.json is required.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "generation_config.json")

# The ChatML template, for `transformers.AutoTokenizer.apply_chat_template` users of our assets;
# `PromptTemplate(style="chatml")` renders the same text without Jinja.
CHATML_JINJA = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


class TokenizerError(ValueError):
    """A tokenizer folder is incomplete or names a token the vocabulary lacks."""


class Tokenizer:
    """A `tokenizers.Tokenizer` plus the ids of its BOS, EOS (one or more) and pad tokens."""

    def __init__(
        self,
        backend: BackendTokenizer,
        *,
        bos_token: str | None,
        eos_tokens: Sequence[str],
        pad_token: str | None,
        extra_eos_ids: Iterable[int] = (),
        source: str = "<memory>",
    ):
        self.backend = backend
        self.source = source
        self.bos_id = None if bos_token is None else self.token_id(bos_token)
        eos_ids = [self.token_id(token) for token in eos_tokens] + list(extra_eos_ids)
        self.eos_ids: tuple[int, ...] = tuple(dict.fromkeys(eos_ids))
        if pad_token is not None:
            self.pad_id = self.token_id(pad_token)
        elif self.eos_ids:  # common for base models: pad with EOS (pads are masked anyway)
            self.pad_id = self.eos_ids[0]
        else:
            raise TokenizerError(f"{source}: no pad token and no EOS token to pad with")

    @classmethod
    def from_folder(cls, folder: str | Path) -> Tokenizer:
        folder = Path(folder)
        tokenizer_path = folder / "tokenizer.json"
        if not tokenizer_path.is_file():
            raise TokenizerError(f"{tokenizer_path}: not found")
        try:
            backend = BackendTokenizer.from_file(str(tokenizer_path))
        except Exception as err:  # tokenizers raises a bare Exception subclass
            raise TokenizerError(f"{tokenizer_path}: cannot be read by tokenizers: {err}") from None
        config = _read_json(folder / "tokenizer_config.json")
        generation = _read_json(folder / "generation_config.json")
        eos = _token_name(config.get("eos_token"))
        extra = generation.get("eos_token_id")
        extra_ids = extra if isinstance(extra, list) else ([] if extra is None else [extra])
        return cls(
            backend,
            bos_token=_token_name(config.get("bos_token")),
            eos_tokens=[] if eos is None else [eos],
            pad_token=_token_name(config.get("pad_token")),
            extra_eos_ids=extra_ids,
            source=str(folder),
        )

    @classmethod
    def default(cls) -> Tokenizer:
        """The project's BPE tokenizer (ChatML; stops on ``<|im_end|>`` and ``<|endoftext|>``)."""
        return cls.from_folder(ASSETS_DIR)

    @classmethod
    def for_checkpoint(cls, checkpoint: str | Path | None) -> Tokenizer:
        """The tokenizer of a checkpoint folder (see `tokenizer_folder`); None: the project's."""
        return cls.from_folder(tokenizer_folder(checkpoint))

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def token_id(self, token: str) -> int:
        token_id = self.backend.token_to_id(token)
        if token_id is None:
            raise TokenizerError(f"{self.source}: token {token!r} is not in the vocabulary")
        return token_id

    def encode(self, text: str, *, add_bos: bool = False) -> list[int]:
        ids = self.backend.encode(text, add_special_tokens=False).ids
        if add_bos:
            if self.bos_id is None:
                raise TokenizerError(
                    f"{self.source}: add_bos=True but the tokenizer has no BOS token"
                )
            ids = [self.bos_id, *ids]
        return ids

    def encode_batch(self, texts: Sequence[str], *, add_bos: bool = False) -> list[list[int]]:
        encodings = self.backend.encode_batch(list(texts), add_special_tokens=False)
        prefix = [self.bos_id] if add_bos and self.bos_id is not None else []
        if add_bos and self.bos_id is None:
            raise TokenizerError(f"{self.source}: add_bos=True but the tokenizer has no BOS token")
        return [prefix + encoding.ids for encoding in encodings]

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = True) -> str:
        return self.backend.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def decode_batch(
        self, batch: Sequence[Sequence[int]], *, skip_special_tokens: bool = True
    ) -> list[str]:
        return self.backend.decode_batch(
            [list(ids) for ids in batch], skip_special_tokens=skip_special_tokens
        )


def tokenizer_folder(checkpoint: str | Path | None) -> Path:
    """The folder whose tokenizer a checkpoint uses: the checkpoint itself when it holds a
    ``tokenizer.json``, else the project's assets (None: the project's assets)."""
    if checkpoint is not None and (Path(checkpoint) / "tokenizer.json").is_file():
        return Path(checkpoint)
    return ASSETS_DIR


def copy_tokenizer(checkpoint: str | Path | None, out: str | Path) -> None:
    """Copy the tokenizer files of `checkpoint` (see `tokenizer_folder`) into the folder `out`,
    which then loads as a complete policy."""
    source, out = tokenizer_folder(checkpoint), Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copy(source / name, out / name)


def _read_json(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise TokenizerError(f"{path}: not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise TokenizerError(f"{path}: top level must be an object")
    return data


def _token_name(value: object) -> str | None:
    """tokenizer_config.json writes a token either as a string or as {"content": ...}."""
    if isinstance(value, dict):
        return value.get("content")
    return value if isinstance(value, str) else None
