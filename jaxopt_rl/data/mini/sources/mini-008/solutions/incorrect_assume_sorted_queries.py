# BUG: answers queries in input order with the right-end sweep, silently assuming they arrive sorted by r (an earlier large r has already removed older marks).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    s = data[2:2 + n]
    tree = [0] * (n + 1)
    last = {}
    out = []
    pos = 0
    ptr = 2 + n
    for _ in range(q):
        left, right = int(data[ptr]), int(data[ptr + 1])
        ptr += 2
        while pos < right:
            pos += 1
            species = s[pos - 1]
            if species in last:
                i = last[species]
                while i <= n:
                    tree[i] -= 1
                    i += i & -i
            last[species] = pos
            i = pos
            while i <= n:
                tree[i] += 1
                i += i & -i
        total = 0
        i = right
        while i > 0:
            total += tree[i]
            i &= i - 1
        i = left - 1
        while i > 0:
            total -= tree[i]
            i &= i - 1
        out.append(total)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
