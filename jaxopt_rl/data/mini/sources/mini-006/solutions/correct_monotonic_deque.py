# O(n): monotonic deque of indices with decreasing readings; the front is the window maximum.
import sys
from collections import deque


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    t = list(map(int, data[2:2 + n]))
    window = deque()
    out = []
    for i, x in enumerate(t):
        while window and t[window[-1]] <= x:
            window.pop()
        window.append(i)
        if window[0] <= i - k:
            window.popleft()
        if i >= k - 1:
            out.append(t[window[0]])
    print(" ".join(map(str, out)))


main()
