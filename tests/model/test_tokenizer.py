"""The shipped tokenizer and `Tokenizer`: special ids, lossless round trips, code compression,
folder errors, and agreement with `transformers` on the assets (chat template included)."""

import inspect
import json
import shutil
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.model import PromptTemplate, Tokenizer, TokenizerError, build_prompt
from jaxopt_rl.model.tokenizer import ASSETS_DIR, SPECIAL_TOKENS


@pytest.fixture(scope="module")
def tokenizer():
    return Tokenizer.default()


def test_special_tokens_have_fixed_ids(tokenizer):
    assert tokenizer.vocab_size == 4096
    assert [tokenizer.token_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert (tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_ids) == (0, 1, (4, 2))
    assert tokenizer.encode("<|im_start|>user\n")[0] == 3
    assert tokenizer.encode("x", add_bos=True)[0] == 1
    with pytest.raises(TokenizerError, match="not in the vocabulary"):
        tokenizer.token_id("<|nope|>")


@given(st.text(max_size=200))
def test_any_text_round_trips(tokenizer, text):
    ids = tokenizer.encode(text)
    assert all(0 <= i < tokenizer.vocab_size for i in ids)
    assert tokenizer.decode(ids, skip_special_tokens=False) == unicodedata.normalize("NFC", text)


def test_python_code_compresses(tokenizer):
    source = inspect.getsource(json.decoder)
    assert len(source) / len(tokenizer.encode(source)) > 2.5  # a trained BPE, not bytes


def test_batch_methods_agree_with_single(tokenizer):
    texts = ["def f(x):\n    return x", "print(1)", ""]
    assert tokenizer.encode_batch(texts, add_bos=True) == [
        tokenizer.encode(t, add_bos=True) for t in texts
    ]
    assert tokenizer.decode_batch([[3, 5, 6], []]) == [tokenizer.decode([3, 5, 6]), ""]


def test_folder_errors_are_named(tmp_path):
    with pytest.raises(TokenizerError, match=r"tokenizer\.json: not found"):
        Tokenizer.from_folder(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{broken")
    with pytest.raises(TokenizerError, match=r"tokenizer\.json: cannot be read"):
        Tokenizer.from_folder(tmp_path)
    shutil.copy(ASSETS_DIR / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "tokenizer_config.json").write_text("[1, 2]")
    with pytest.raises(TokenizerError, match=r"tokenizer_config\.json: top level"):
        Tokenizer.from_folder(tmp_path)
    # a base model's folder: no pad token, pad with EOS; token given as {"content": ...}
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"eos_token": {"content": "<|endoftext|>"}})
    )
    base = Tokenizer.from_folder(tmp_path)
    assert (base.pad_id, base.eos_ids, base.bos_id) == (2, (2,), None)
    with pytest.raises(TokenizerError, match="no BOS"):
        base.encode("x", add_bos=True)


def test_transformers_reads_the_assets_and_its_chat_template_matches_ours(tokenizer):
    transformers = pytest.importorskip("transformers")
    hf = transformers.AutoTokenizer.from_pretrained(str(ASSETS_DIR))
    text = "def main():\n    n = int(input())  # ünïcode\n"
    assert hf.encode(text, add_special_tokens=False) == tokenizer.encode(text)
    template = PromptTemplate(system="Be brief.", instruction="Answer in Python.")
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Add two numbers.\n\nAnswer in Python."},
    ]
    rendered = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert rendered == build_prompt("Add two numbers.", template)


def test_a_checkpoint_uses_its_own_tokenizer_else_the_projects(tmp_path):
    from jaxopt_rl.model.tokenizer import TOKENIZER_FILES, copy_tokenizer, tokenizer_folder

    weights_only = tmp_path / "weights_only"
    weights_only.mkdir()
    assert tokenizer_folder(weights_only) == ASSETS_DIR
    assert tokenizer_folder(None) == ASSETS_DIR
    # a folder with its own tokenizer: a base model's (EOS only, padded with EOS) differs from
    # the project's ChatML one (pad 0, EOS <|im_end|> then <|endoftext|>)
    own = tmp_path / "own"
    own.mkdir()
    shutil.copy(ASSETS_DIR / "tokenizer.json", own / "tokenizer.json")
    (own / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}))
    assert tokenizer_folder(own) == own
    assert Tokenizer.for_checkpoint(own).eos_ids == (2,)
    assert Tokenizer.for_checkpoint(weights_only).eos_ids == (4, 2)
    # an exported folder gets the files its checkpoint used, and then loads on its own
    copy_tokenizer(weights_only, tmp_path / "export")
    assert sorted(p.name for p in (tmp_path / "export").iterdir()) == sorted(TOKENIZER_FILES)
    assert Tokenizer.for_checkpoint(tmp_path / "export").eos_ids == (4, 2)
    copy_tokenizer(own, tmp_path / "export_own")
    assert sorted(p.name for p in (tmp_path / "export_own").iterdir()) == [
        "tokenizer.json", "tokenizer_config.json"]
    assert Tokenizer.for_checkpoint(tmp_path / "export_own").eos_ids == (2,)
