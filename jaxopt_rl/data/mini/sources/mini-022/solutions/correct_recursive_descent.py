# O(L): recursive-descent parser (expression -> term -> factor) over a token list; recursion depth follows the nesting.
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
        while tokens[pos] in ("+", "-"):
            op = tokens[pos]
            pos += 1
            rhs = term()
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
            pos += 1  # the matching ")"
            return value
        return int(tok) % MOD

    sys.setrecursionlimit(100000)
    print(expression())


main()
