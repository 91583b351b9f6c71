"""The prompt for a code problem, and the program inside a completion.

`build_prompt(statement, template)` renders the text the model continues: a system message, the
problem statement followed by the instruction, and the opening of the assistant turn, in the
chat format of the model family (ChatML for Qwen and our tiny model, the Llama 3 header format,
or plain text for base models). `problem_prompt(record, template)` is the same for a data set
problem (anything with `.statement` and `.title`): the one place training, SFT and evaluation
turn a problem into a prompt, so they can never disagree. `extract_program(completion)` returns the program the sandbox
runs: the last *closed* fenced code block tagged as Python.

Choices: the instruction asks for a correct *and* fast program reading stdin and writing stdout
and for the final program in one ```python block (the papers' protocol: the last fenced block is
the answer). A block still open when the completion ends (cut by `max_new_tokens`) is not a
program: truncated code would only fail in the sandbox. Fences follow CommonMark: up to three
spaces of indentation, three or more backticks or tildes, closed by a fence of the same
character at least as long. Tags ``python``, ``py``, ``python3`` (any case) count as Python.
``problem_text="title"`` puts the problem's title where the statement goes: for the tiny CPU
demo, whose 4 M-parameter model memorises the solutions of the problems it trains on and cannot
read a statement; a 600-token statement would only make every step slower.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from jaxopt_rl.config import require

DEFAULT_SYSTEM = (
    "You are an expert competitive programmer. You write Python programs that are correct first "
    "and then as fast as possible."
)
DEFAULT_INSTRUCTION = (
    "Write a Python 3 program that reads the input from standard input and prints the answer to "
    "standard output. Think about the time limit and pick an efficient algorithm. End your answer "
    "with the complete program in a single ```python code block."
)
PYTHON_TAGS = ("python", "py", "python3")


@dataclass(frozen=True)
class PromptTemplate:
    """How a problem statement becomes a prompt (see the module docstring)."""

    style: Literal["chatml", "llama3", "plain"] = "chatml"
    system: str = DEFAULT_SYSTEM  # empty: no system message
    instruction: str = DEFAULT_INSTRUCTION
    bos: str = ""  # text prepended verbatim, e.g. "<|begin_of_text|>" for Llama 3
    problem_text: Literal["statement", "title"] = "statement"  # what of a problem is shown

    def __post_init__(self) -> None:
        require(bool(self.instruction.strip()), "instruction", "must not be empty")
        require(self.problem_text in ("statement", "title"), "problem_text",
                f"must be 'statement' or 'title', got {self.problem_text!r}")


def build_prompt(statement: str, template: PromptTemplate = PromptTemplate()) -> str:
    """The prompt text for one problem statement (tokenise it with `Tokenizer.encode`)."""
    if not statement.strip():
        raise ValueError("build_prompt: the problem statement is empty")
    user = f"{statement.strip()}\n\n{template.instruction}"
    system = template.system
    if template.style == "chatml":
        head = f"<|im_start|>system\n{system}<|im_end|>\n" if system else ""
        return f"{template.bos}{head}<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
    if template.style == "llama3":
        header = "<|start_header_id|>{}<|end_header_id|>\n\n"
        head = f"{header.format('system')}{system}<|eot_id|>" if system else ""
        user_turn = f"{header.format('user')}{user}<|eot_id|>"
        return f"{template.bos}{head}{user_turn}{header.format('assistant')}"
    head = f"{system}\n\n" if system else ""
    return f"{template.bos}{head}### Problem\n{user}\n\n### Answer\n"


def problem_prompt(record, template: PromptTemplate = PromptTemplate()) -> str:
    """The prompt for a data set problem (`record.statement` or `record.title`, per template)."""
    text = record.title if template.problem_text == "title" else record.statement
    return build_prompt(text, template)


_FENCE_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n]*)$")


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Every closed fenced code block as ``(language tag, code)``, in order of appearance."""
    blocks = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        opening = _FENCE_OPEN.match(lines[index])
        if opening is None or (opening["fence"][0] == "`" and "`" in opening["info"]):
            index += 1
            continue
        fence = opening["fence"]
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end = next((j for j in range(index + 1, len(lines)) if closing.match(lines[j])), None)
        if end is None:  # unclosed: runs to the end of the completion, so it is not a block
            break
        tag = opening["info"].split()[0].lower() if opening["info"].strip() else ""
        code = "\n".join(lines[index + 1 : end])
        blocks.append((tag, code + "\n" if code else ""))
        index = end + 1
    return blocks


def extract_program(completion: str, languages: tuple[str, ...] | None = PYTHON_TAGS) -> str | None:
    """The last closed fenced block tagged with one of `languages` (any tag when None), or None
    when there is none or it is blank."""
    for tag, code in reversed(fenced_blocks(completion)):
        if languages is None or tag in languages:
            return code if code.strip() else None
    return None
