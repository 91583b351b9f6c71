# O((n + q) log n): answer = #{i <= r : prev[i] < l} - (l - 1); queries by left end, jars enter a Fenwick tree once l passes prev[i].
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    s = data[2:2 + n]
    lefts = list(map(int, data[2 + n:2 + n + 2 * q:2]))
    rights = list(map(int, data[3 + n:3 + n + 2 * q:2]))
    # jars whose previous same-species jar is at position p (0 = none) become countable once l > p
    unlock = [[] for _ in range(n + 1)]
    last = {}
    for i in range(1, n + 1):
        unlock[last.get(s[i - 1], 0)].append(i)
        last[s[i - 1]] = i
    tree = [0] * (n + 1)
    answers = [0] * q
    released = -1  # unlock lists 0..released are in the tree
    for j in sorted(range(q), key=lefts.__getitem__):
        left = lefts[j]
        while released < left - 1:
            released += 1
            for i in unlock[released]:
                while i <= n:
                    tree[i] += 1
                    i += i & -i
        total = 0
        i = rights[j]
        while i > 0:
            total += tree[i]
            i &= i - 1
        answers[j] = total - (left - 1)
    sys.stdout.write("\n".join(map(str, answers)) + "\n")


main()
