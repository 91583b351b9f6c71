# O(L): one left-to-right pass keeping, per open parenthesis, a running sum and a pending product.
import re
import sys

MOD = 10**9 + 7


def main():
    tokens = re.findall(r"\d+|[-+*()]", sys.stdin.read())
    # Frame: [sum so far, sign of the current product, current product, pending operator].
    stack = []
    total, sign, product, pending = 0, 1, 1, "*"
    for tok in tokens:
        if tok == "(":
            stack.append((total, sign, product, pending))
            total, sign, product, pending = 0, 1, 1, "*"
        elif tok == "+" or tok == "-":
            total = (total + sign * product) % MOD
            sign = 1 if tok == "+" else -1
            product, pending = 1, "*"
        elif tok == "*":
            pending = "*"
        else:
            value = int(tok) if tok != ")" else (total + sign * product) % MOD
            if tok == ")":
                total, sign, product, pending = stack.pop()
            product = product * value % MOD
    print((total + sign * product) % MOD)


main()
