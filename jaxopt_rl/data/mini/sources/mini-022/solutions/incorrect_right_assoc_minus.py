# BUG: the grammar "expr := term (+|-) expr" makes minus right-associative, so 10-4-3 is read as 10-(4-3).
import re
import sys

MOD = 10**9 + 7


def main():
    tokens = re.findall(r"\d+|[-+*()]", sys.stdin.read())
    tokens.append("$")
    pos = 0

    def expression():
        nonlocal pos
        value = term()
        if tokens[pos] in ("+", "-"):
            op = tokens[pos]
            pos += 1
            rhs = expression()
            value = (value + rhs) % MOD if op == "+" else (value - rhs) % MOD
        return value

    def term():
        nonlocal pos
        value = factor()
        while tokens[pos] == "*":
            pos += 1
            value = value * factor() % MOD
        return value

    def factor():
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            value = expression()
            pos += 1
            return value
        return int(tok) % MOD

    sys.setrecursionlimit(1000000)
    print(expression())


main()
