# BUG: the deque stores readings instead of indices and evicts the front when the outgoing reading equals it, which drops a newer equal reading too early.
import sys
from collections import deque


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    t = list(map(int, data[2:2 + n]))
    window = deque()
    out = []
    for i, x in enumerate(t):
        if i >= k and window[0] == t[i - k]:
            window.popleft()
        while window and window[-1] <= x:
            window.pop()
        window.append(x)
        if i >= k - 1:
            out.append(window[0])
    print(" ".join(map(str, out)))


main()
