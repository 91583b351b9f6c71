# O(M log M): adds 1 to every multiple of every d up to the largest query (harmonic-series sieve), then looks up.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    values = [int(x) for x in data[1 : q + 1]]
    top = max(values)
    count = [0] * (top + 1)
    for d in range(1, top + 1):
        for multiple in range(d, top + 1, d):
            count[multiple] += 1
    sys.stdout.write("\n".join(str(count[x]) for x in values) + "\n")


main()
