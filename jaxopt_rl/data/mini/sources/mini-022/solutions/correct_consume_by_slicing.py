# O(L^2 / token length): the tokenizer slices each matched token off the front of the remaining text (a copy per token), then two-stack evaluation.
import re
import sys

MOD = 10**9 + 7
PRIORITY = {"+": 1, "-": 1, "*": 2}
TOKEN = re.compile(r"\s*(\d+|[-+*()])")


def apply(values, op):
    b = values.pop()
    a = values.pop()
    if op == "+":
        values.append((a + b) % MOD)
    elif op == "-":
        values.append((a - b) % MOD)
    else:
        values.append(a * b % MOD)


def main():
    rest = sys.stdin.read().strip()
    values, ops = [], []
    while rest:
        match = TOKEN.match(rest)
        tok = match.group(1)
        rest = rest[match.end() :]
        if tok == "(":
            ops.append(tok)
        elif tok == ")":
            while ops[-1] != "(":
                apply(values, ops.pop())
            ops.pop()
        elif tok in PRIORITY:
            while ops and ops[-1] != "(" and PRIORITY[ops[-1]] >= PRIORITY[tok]:
                apply(values, ops.pop())
            ops.append(tok)
        else:
            values.append(int(tok) % MOD)
    while ops:
        apply(values, ops.pop())
    print(values[0])


main()
