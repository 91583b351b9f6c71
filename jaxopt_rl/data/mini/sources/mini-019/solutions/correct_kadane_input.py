# O(n): Kadane's scan, but reads every value with its own input() call (slow line-by-line I/O).
n = int(input())
best = None
cur = 0
for _ in range(n):
    x = int(input())
    cur = cur + x if cur > 0 else x
    if best is None or cur > best:
        best = cur
print(best)
