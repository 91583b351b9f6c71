# O(N + k * D): dict counts, then k passes that each pick the best remaining word with max().
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    counts = {}
    for w in data[2 : 2 + n]:
        counts[w] = counts.get(w, 0) + 1
    remaining = {w.decode(): c for w, c in counts.items()}
    out = []
    for _ in range(min(k, len(remaining))):
        best = None
        for w, c in remaining.items():
            if best is None or c > remaining[best] or (c == remaining[best] and w < best):
                best = w
        out.append(f"{best} {remaining.pop(best)}")
    print("\n".join(out))


main()
