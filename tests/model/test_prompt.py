"""Prompt rendering and program extraction (the last closed fenced Python block)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.config import ConfigError
from jaxopt_rl.model import PromptTemplate, build_prompt, extract_program
from jaxopt_rl.model.prompt import fenced_blocks


def test_chatml_prompt_is_exact():
    template = PromptTemplate(system="S.", instruction="Do it.")
    assert build_prompt("  Sum a and b.\n", template) == (
        "<|im_start|>system\nS.<|im_end|>\n"
        "<|im_start|>user\nSum a and b.\n\nDo it.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    no_system = PromptTemplate(system="", instruction="Do it.")
    assert build_prompt("P", no_system).startswith("<|im_start|>user\nP\n\nDo it.")


def test_llama3_and_plain_prompts():
    llama = PromptTemplate(
        style="llama3", system="S.", instruction="Do it.", bos="<|begin_of_text|>"
    )
    assert build_prompt("P", llama) == (
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nP\n\nDo it.<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )
    plain = PromptTemplate(style="plain", system="", instruction="Do it.")
    assert build_prompt("P", plain) == "### Problem\nP\n\nDo it.\n\n### Answer\n"


def test_default_prompt_asks_for_a_fast_program_in_a_python_block():
    prompt = build_prompt("Sort the numbers.")
    assert "```python" in prompt and "standard input" in prompt and "efficient" in prompt


def test_bad_prompt_input():
    with pytest.raises(ValueError, match="statement is empty"):
        build_prompt("  \n")
    with pytest.raises(ConfigError, match="instruction"):
        PromptTemplate(instruction=" ")


@pytest.mark.parametrize(
    "completion, program",
    [
        ("Idea...\n```python\nprint(1)\n```\nDone.", "print(1)\n"),
        ("```python\nprint(1)\n```\nBetter:\n```py\nprint(2)\n```\n", "print(2)\n"),
        ("```python\nprint(1)\n```\n```cpp\nint main(){}\n```", "print(1)\n"),
        ("```Python3 \nx = 1\ny = 2\n```", "x = 1\ny = 2\n"),
        ("```python\nprint(1)\n```\n```python\nprint(2)\n", "print(1)\n"),  # last block cut off
        ("~~~python\nprint('~')\n~~~", "print('~')\n"),
        ("````python\ns = '''\n```\n'''\n````", "s = '''\n```\n'''\n"),  # inner shorter fence
        ("   ```python\nprint(3)\n   ```", "print(3)\n"),
        ("```python\n```", None),
        ("```python\n   \n```", None),
        ("no code at all", None),
        ("```\nprint(1)\n```", None),  # untagged is not Python
        (
            "    ```python\nprint(1)\n    ```",
            None,
        ),  # four spaces: an indented code line, not a fence
    ],
)
def test_extract_program_cases(completion, program):
    assert extract_program(completion) == program


def test_extract_program_any_language_and_info_strings():
    assert extract_program("```\nprint(1)\n```", languages=None) == "print(1)\n"
    assert fenced_blocks("```python title=a.py\nx\n```") == [("python", "x\n")]
    assert (
        fenced_blocks("``` `odd`\nx\n```") == []
    )  # backtick fences may not have backticks in the info


_line = st.text(
    st.characters(blacklist_characters="\n`~\r", blacklist_categories=("Cs",)), max_size=30
)


@given(
    st.lists(_line, min_size=1, max_size=8),
    st.lists(_line, max_size=4),
    st.lists(_line, max_size=4),
)
def test_program_embedded_in_prose_comes_back_exactly(code_lines, before, after):
    code = "\n".join(code_lines)
    completion = "\n".join([*before, "```python", code, "```", *after])
    expected = code + "\n" if code.strip() else None
    assert extract_program(completion) == expected
