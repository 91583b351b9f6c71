# O(N log log N) in Python: Eratosthenes crossing out multiples in an explicit for-loop, prefix tables filled by a Python loop.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    ends = list(map(int, data[1:1 + 2 * q]))
    top = max(ends[1::2])
    is_prime = [True] * (top + 1)
    is_prime[0] = False
    if top >= 1:
        is_prime[1] = False
    p = 2
    while p * p <= top:
        if is_prime[p]:
            for m in range(p * p, top + 1, p):
                is_prime[m] = False
        p += 1
    count = [0] * (top + 1)
    total = [0] * (top + 1)
    c = s = 0
    for i in range(top + 1):
        if is_prime[i]:
            c += 1
            s += i
        count[i] = c
        total[i] = s
    out = []
    for i in range(0, 2 * q, 2):
        a, b = ends[i], ends[i + 1]
        out.append(f"{count[b] - count[a - 1]} {total[b] - total[a - 1]}")
    sys.stdout.write("\n".join(out) + "\n")


main()
