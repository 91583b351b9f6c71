# BUG: reduces products and sums but not differences, so a negative value is printed as-is instead of modulo 1e9+7.
import re
import sys

MOD = 10**9 + 7
PRIORITY = {"+": 1, "-": 1, "*": 2}


def apply(values, op):
    b = values.pop()
    a = values.pop()
    if op == "+":
        values.append((a + b) % MOD)
    elif op == "-":
        values.append(a - b)
    else:
        values.append(a * b % MOD)


def main():
    values, ops = [], []
    for tok in re.findall(r"\d+|[-+*()]", sys.stdin.read()):
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
