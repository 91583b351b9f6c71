# O(N log log N + q): bytearray sieve and prefix tables, but requests are read with input() and answered with print() one by one (slow I/O).
from itertools import accumulate


def main():
    q = int(input())
    requests = [tuple(map(int, input().split())) for _ in range(q)]
    top = max(b for _, b in requests)
    sieve = bytearray([1]) * (top + 1)
    sieve[0] = 0
    if top >= 1:
        sieve[1] = 0
    p = 2
    while p * p <= top:
        if sieve[p]:
            sieve[p * p::p] = bytes(len(range(p * p, top + 1, p)))
        p += 1
    count = list(accumulate(sieve))
    total = list(accumulate(i if flag else 0 for i, flag in enumerate(sieve)))
    for a, b in requests:
        print(count[b] - count[a - 1], total[b] - total[a - 1])


main()
