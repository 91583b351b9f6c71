# O(n log n + q): every island stores its group label; a merge relabels the members of the smaller group (quick-find, weighted).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    label = list(range(n + 1))
    members = [[v] for v in range(n + 1)]
    out = []
    pos = 2
    for _ in range(q):
        kind, a, b = data[pos], int(data[pos + 1]), int(data[pos + 2])
        pos += 3
        la, lb = label[a], label[b]
        if kind == b"Q":
            out.append("YES" if la == lb else "NO")
        elif la != lb:
            if len(members[la]) < len(members[lb]):
                la, lb = lb, la
            for v in members[lb]:
                label[v] = la
            members[la].extend(members[lb])
            members[lb] = []
    sys.stdout.write("\n".join(out) + "\n")


main()
