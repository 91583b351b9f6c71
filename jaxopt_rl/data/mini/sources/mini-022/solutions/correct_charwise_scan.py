# O(L) with per-character work: scans the text one character at a time (numbers built digit by digit) with two stacks.
import sys

MOD = 10**9 + 7
PRIORITY = {"+": 1, "-": 1, "*": 2}


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
    text = sys.stdin.readline()
    values, ops = [], []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isdigit():
            number = 0
            while i < n and text[i].isdigit():
                number = number * 10 + (ord(text[i]) - 48)
                i += 1
            values.append(number % MOD)
            continue
        if ch == "(":
            ops.append(ch)
        elif ch == ")":
            while ops[-1] != "(":
                apply(values, ops.pop())
            ops.pop()
        elif ch in PRIORITY:
            while ops and ops[-1] != "(" and PRIORITY[ops[-1]] >= PRIORITY[ch]:
                apply(values, ops.pop())
            ops.append(ch)
        i += 1
    while ops:
        apply(values, ops.pop())
    print(values[0])


main()
