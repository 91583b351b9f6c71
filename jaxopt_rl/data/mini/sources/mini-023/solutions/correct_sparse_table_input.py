# O(n log n + q): sparse table built with Python loops, queries read with input() and answered with print() one by one.
from math import gcd

n, q = map(int, input().split())
values = list(map(int, input().split()))
table = [values]
step = 1
while 2 * step <= n:
    prev = table[-1]
    table.append([gcd(prev[i], prev[i + step]) for i in range(n - 2 * step + 1)])
    step *= 2
for _ in range(q):
    left, r = map(int, input().split())
    k = (r - left + 1).bit_length() - 1
    print(gcd(table[k][left - 1], table[k][r - (1 << k)]))
