# BUG: uses max(len(a), len(b)) - LCS(a, b), which is only a lower bound on the edit distance (equal when the letters outside the LCS pair up).
import sys


def main():
    lines = sys.stdin.read().split()
    a, b = lines[0], lines[1]
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0]
        for j, cb in enumerate(b):
            if ca == cb:
                cur.append(prev[j] + 1)
            else:
                cur.append(max(prev[j + 1], cur[j]))
        prev = cur
    print(max(len(a), len(b)) - prev[-1])


main()
