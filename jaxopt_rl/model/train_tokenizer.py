"""Train the project's byte-level BPE tokenizer on local code, deterministically.

    python -m jaxopt_rl.model.train_tokenizer                      # rewrite the shipped assets
    python -m jaxopt_rl.model.train_tokenizer --out /tmp/tok --vocab-size 8192 --include src/

Corpus (nothing is downloaded): the ``.py`` sources of the running interpreter's standard library
(without ``test``/``tests``, ``idlelib``, ``lib2to3``, ``site-packages``), plus any ``--include``
folders (their ``.py`` and ``.md`` files), read in sorted path order. The same interpreter version
and arguments give a byte-identical ``tokenizer.json``; ``tokenizer_manifest.json`` records the
corpus (file count, bytes, SHA-256) so a rebuild can be checked against the shipped file, which
was trained with CPython 3.11.7's standard library.

Choices: the pre-tokenizer splits like Qwen2's (letters, single digits, punctuation runs, newline
runs, whitespace runs), then maps bytes to printable characters (GPT-2 byte level), so any text
round-trips; vocabulary 4096 including the special tokens `SPECIAL_TOKENS`; NFC normalisation.
The files are written in Hugging Face layout (``tokenizer.json`` + ``tokenizer_config.json``
with a ChatML ``chat_template``, ``generation_config.json`` with the stop ids), so
`transformers.AutoTokenizer` can read them too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import sysconfig
from collections.abc import Iterator, Sequence
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from jaxopt_rl.model.tokenizer import (
    ASSETS_DIR,
    BOS_TOKEN,
    CHATML_JINJA,
    ENDOFTEXT_TOKEN,
    EOS_TOKEN,
    PAD_TOKEN,
    SPECIAL_TOKENS,
)

DEFAULT_VOCAB_SIZE = 4096
_SKIPPED_STDLIB_DIRS = {"test", "tests", "idlelib", "lib2to3", "site-packages", "__pycache__"}
# Qwen2-style split: contractions, letter runs with one leading non-letter, single digits,
# punctuation runs, newline runs, trailing whitespace, whitespace.
_SPLIT_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def stdlib_sources() -> list[Path]:
    """The interpreter's standard-library ``.py`` files (sorted), minus tests and tooling."""
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(
        path
        for path in root.rglob("*.py")
        if not _SKIPPED_STDLIB_DIRS & set(path.relative_to(root).parts[:-1])
    )


def folder_sources(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise FileNotFoundError(f"--include {folder}: not a folder")
    return sorted(p for p in folder.rglob("*") if p.suffix in (".py", ".md") and p.is_file())


def read_corpus(files: Sequence[Path]) -> Iterator[str]:
    """Each file's text (undecodable bytes replaced, so one odd file cannot stop training)."""
    for path in files:
        yield path.read_bytes().decode("utf-8", errors="replace")


def build_tokenizer() -> Tokenizer:
    tokenizer = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_SPLIT_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def train(files: Sequence[Path], vocab_size: int = DEFAULT_VOCAB_SIZE) -> Tokenizer:
    """Train on `files` in the given order; special tokens take ids 0..len(SPECIAL_TOKENS)-1."""
    if vocab_size < 256 + len(SPECIAL_TOKENS):
        raise ValueError(
            f"vocab_size {vocab_size} is smaller than the byte alphabet plus special tokens"
        )
    tokenizer = build_tokenizer()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        show_progress=sys.stderr.isatty(),
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(read_corpus(files), trainer=trainer, length=len(files))
    return tokenizer


def corpus_manifest(files: Sequence[Path], roots: Sequence[Path]) -> dict:
    digest = hashlib.sha256()
    total = 0
    for path in files:
        data = path.read_bytes()
        total += len(data)
        digest.update(_relative(path, roots).encode() + b"\0" + data)
    return {
        "python": sys.version.split()[0],
        "files": len(files),
        "bytes": total,
        "sha256": digest.hexdigest(),
    }


def write_assets(tokenizer: Tokenizer, out: Path, manifest: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(out / "tokenizer.json"), pretty=True)
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS_TOKEN,
        "eos_token": EOS_TOKEN,
        "pad_token": PAD_TOKEN,
        "additional_special_tokens": [
            t for t in SPECIAL_TOKENS if t not in (BOS_TOKEN, EOS_TOKEN, PAD_TOKEN)
        ],
        "add_bos_token": False,
        "model_max_length": 4096,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHATML_JINJA,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    stop_ids = [tokenizer.token_to_id(EOS_TOKEN), tokenizer.token_to_id(ENDOFTEXT_TOKEN)]
    (out / "generation_config.json").write_text(
        json.dumps({"eos_token_id": stop_ids}, indent=2) + "\n"
    )
    (out / "tokenizer_manifest.json").write_text(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=ASSETS_DIR, help="output folder (default: shipped assets)"
    )
    parser.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB_SIZE)
    parser.add_argument(
        "--include", type=Path, action="append", default=[], help="extra folder of .py/.md"
    )
    parser.add_argument("--no-stdlib", action="store_true", help="train on --include folders only")
    args = parser.parse_args(argv)

    files = [] if args.no_stdlib else stdlib_sources()
    roots = [Path(sysconfig.get_paths()["stdlib"])]
    for folder in args.include:
        files += folder_sources(folder)
        roots.append(folder)
    if not files:
        parser.error("empty corpus: drop --no-stdlib or add --include folders")
    manifest = corpus_manifest(files, roots) | {"vocab_size": args.vocab_size}
    print(
        f"training BPE (vocab {args.vocab_size}) on {manifest['files']} files, "
        f"{manifest['bytes']:,} bytes"
    )
    tokenizer = train(files, args.vocab_size)
    write_assets(tokenizer, args.out, manifest)
    print(
        f"wrote {args.out}/tokenizer.json (vocab {tokenizer.get_vocab_size()}), "
        f"sha256 of corpus {manifest['sha256']}"
    )
    return 0


def _relative(path: Path, roots: Sequence[Path]) -> str:
    for root in roots:
        if path.is_relative_to(root):
            return path.relative_to(root).as_posix()
    return path.as_posix()


if __name__ == "__main__":
    raise SystemExit(main())
