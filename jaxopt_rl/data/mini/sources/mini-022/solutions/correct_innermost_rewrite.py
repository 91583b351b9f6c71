# O(P * L) for P parenthesis pairs: repeatedly evaluates an innermost "( ... )" group and splices its value back into the string.
import re
import sys

MOD = 10**9 + 7
INNERMOST = re.compile(r"\(([^()]*)\)")


def flat_value(text):
    """Value of a parenthesis-free expression: a sum of signed products."""
    total = 0
    for sign, chunk in re.findall(r"([-+]?)([^-+]+)", text):
        product = 1
        for factor in chunk.split("*"):
            product = product * int(factor) % MOD
        total = (total - product) % MOD if sign == "-" else (total + product) % MOD
    return total


def main():
    text = "".join(sys.stdin.read().split())
    while True:
        match = INNERMOST.search(text)
        if match is None:
            break
        text = text[: match.start()] + str(flat_value(match.group(1))) + text[match.end() :]
    print(flat_value(text))


main()
