# O(L): first converts the tokens to reverse Polish notation (shunting-yard), then evaluates the RPN list.
import re
import sys

MOD = 10**9 + 7
PRIORITY = {"+": 1, "-": 1, "*": 2}


def main():
    output, ops = [], []
    for tok in re.findall(r"\d+|[-+*()]", sys.stdin.read()):
        if tok == "(":
            ops.append(tok)
        elif tok == ")":
            while ops[-1] != "(":
                output.append(ops.pop())
            ops.pop()
        elif tok in PRIORITY:
            while ops and ops[-1] != "(" and PRIORITY[ops[-1]] >= PRIORITY[tok]:
                output.append(ops.pop())
            ops.append(tok)
        else:
            output.append(int(tok))
    output.extend(reversed(ops))
    stack = []
    for item in output:
        if item == "+":
            b = stack.pop()
            stack[-1] = (stack[-1] + b) % MOD
        elif item == "-":
            b = stack.pop()
            stack[-1] = (stack[-1] - b) % MOD
        elif item == "*":
            b = stack.pop()
            stack[-1] = stack[-1] * b % MOD
        else:
            stack.append(item % MOD)
    print(stack[0])


main()
