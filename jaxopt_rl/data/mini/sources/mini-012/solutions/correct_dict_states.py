# O(n * S), S = distinct reachable weight totals (<= W): DP over a dict {total weight: best value}, rebuilt per item.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, cap = int(data[0]), int(data[1])
    states = {0: 0}
    for i in range(n):
        w, v = int(data[2 + 2 * i]), int(data[3 + 2 * i])
        new = dict(states)
        for total, value in states.items():
            t = total + w
            if t <= cap and new.get(t, -1) < value + v:
                new[t] = value + v
        states = new
    print(max(states.values()))


main()
