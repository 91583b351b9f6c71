# O((n + q) log n): queries sorted by right end; a Fenwick tree marks only the latest jar of each species seen so far.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    s = data[2:2 + n]
    lefts = list(map(int, data[2 + n:2 + n + 2 * q:2]))
    rights = list(map(int, data[3 + n:3 + n + 2 * q:2]))
    order = sorted(range(q), key=rights.__getitem__)
    tree = [0] * (n + 1)
    last = {}
    answers = [0] * q
    pos = 0  # jars 1..pos are in the tree
    for j in order:
        r = rights[j]
        while pos < r:
            pos += 1
            species = s[pos - 1]
            old = last.get(species)
            if old is not None:
                i = old
                while i <= n:
                    tree[i] -= 1
                    i += i & -i
            last[species] = pos
            i = pos
            while i <= n:
                tree[i] += 1
                i += i & -i
        total = 0
        i = r
        while i > 0:
            total += tree[i]
            i &= i - 1
        i = lefts[j] - 1
        while i > 0:
            total -= tree[i]
            i &= i - 1
        answers[j] = total
    sys.stdout.write("\n".join(map(str, answers)) + "\n")


main()
