# O(n^2 + m): every step scans all jobs for the smallest unfinished one whose prerequisites are done.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    succ = [[] for _ in range(n + 1)]
    indeg = [0] * (n + 1)
    for i in range(m):
        a, b = int(data[2 + 2 * i]), int(data[3 + 2 * i])
        succ[a].append(b)
        indeg[b] += 1
    done = [False] * (n + 1)
    order = []
    for _ in range(n):
        pick = 0
        for v in range(1, n + 1):
            if not done[v] and indeg[v] == 0:
                pick = v
                break
        if pick == 0:
            break
        done[pick] = True
        order.append(pick)
        for w in succ[pick]:
            indeg[w] -= 1
    if len(order) < n:
        print("IMPOSSIBLE")
    else:
        out = ""
        for v in order:
            out += str(v) + " "
        print(out.strip())


main()
