"""The tokenizer trainer: deterministic, special tokens first, assets readable, stdlib corpus
filtered; the shipped manifest matches this interpreter's corpus when the versions agree."""

import json
import random
import re
import string
import sys

import pytest

from jaxopt_rl.model import Tokenizer
from jaxopt_rl.model.tokenizer import ASSETS_DIR, SPECIAL_TOKENS
from jaxopt_rl.model.train_tokenizer import corpus_manifest, main, stdlib_sources, train


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "src"
    folder.mkdir()
    rng = random.Random(0)
    words = [
        "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 7)))
        for _ in range(300)
    ]
    for i in range(6):
        body = "\n".join(
            f"def {rng.choice(words)}_{j}({rng.choice(words)}):\n"
            f"    return {rng.choice(words)} * {j} + {i}\n"
            for j in range(60)
        )
        (folder / f"m{i}.py").write_text(body)
    (folder / "README.md").write_text("# Title\n\nSome prose about the functions.\n" * 20)
    return folder


def test_training_is_deterministic_and_special_tokens_come_first(corpus):
    files = sorted(corpus.iterdir())
    first, second = train(files, vocab_size=400), train(files, vocab_size=400)
    assert first.to_str() == second.to_str()
    assert [first.token_to_id(t) for t in SPECIAL_TOKENS] == list(range(len(SPECIAL_TOKENS)))
    assert first.get_vocab_size() == 400
    with pytest.raises(ValueError, match="smaller than the byte alphabet"):
        train(files, vocab_size=100)


def test_cli_writes_assets_the_tokenizer_reads(corpus, tmp_path, capsys):
    out = tmp_path / "assets"
    assert (
        main(["--out", str(out), "--vocab-size", "400", "--no-stdlib", "--include", str(corpus)])
        == 0
    )
    assert "7 files" in capsys.readouterr().out
    tokenizer = Tokenizer.from_folder(out)
    assert tokenizer.eos_ids == (4, 2) and tokenizer.pad_id == 0
    text = "def function_9(value):\n    return value\n"
    assert tokenizer.decode(tokenizer.encode(text)) == text
    manifest = json.loads((out / "tokenizer_manifest.json").read_text())
    assert manifest["files"] == 7 and manifest["vocab_size"] == 400


def test_stdlib_corpus_skips_tests_and_matches_the_shipped_manifest():
    files = stdlib_sources()
    assert files and not any("test" in p.parts[-2:-1] or "site-packages" in p.parts for p in files)
    shipped = json.loads((ASSETS_DIR / "tokenizer_manifest.json").read_text())
    import sysconfig
    from pathlib import Path

    # version-independent: the manifest of this interpreter's stdlib is
    # deterministic and has the shipped manifest's form on any Python; the shipped assets'
    # own corpus is compared only on the Python they were trained on
    root = [Path(sysconfig.get_paths()["stdlib"])]
    manifest = corpus_manifest(files, root)
    assert manifest == corpus_manifest(stdlib_sources(), root)  # deterministic
    assert set(shipped) <= set(manifest) | {"vocab_size"}
    assert len(manifest["sha256"]) == len(shipped["sha256"]) == 64
    assert manifest["files"] == len(files) > 0 and shipped["files"] > 0
    assert re.fullmatch(r"3\.\d+\.\d+", shipped["python"])
    if shipped["python"] == sys.version.split()[0]:
        assert manifest["sha256"] == shipped["sha256"] and manifest["files"] == shipped["files"]
