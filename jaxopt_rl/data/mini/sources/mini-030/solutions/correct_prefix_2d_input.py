# O(R*C + q): 2-D prefix sums built cell by cell, grid rows and queries read with input(), one print() per answer.
rows, cols = map(int, input().split())
prefix = [[0] * (cols + 1) for _ in range(rows + 1)]
for r in range(1, rows + 1):
    row = list(map(int, input().split()))
    for c in range(1, cols + 1):
        prefix[r][c] = row[c - 1] + prefix[r - 1][c] + prefix[r][c - 1] - prefix[r - 1][c - 1]
q = int(input())
for _ in range(q):
    r1, c1, r2, c2 = map(int, input().split())
    if r1 > r2:
        r1, r2 = r2, r1
    if c1 > c2:
        c1, c2 = c2, c1
    print(prefix[r2][c2] - prefix[r1 - 1][c2] - prefix[r2][c1 - 1] + prefix[r1 - 1][c1 - 1])
